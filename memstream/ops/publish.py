"""``memstream publish FILE.jsonl [--wait]``: JSON MemoryEvents → Avro → Kafka.

Each line is validated exactly as the worker validates it; a bad line is reported with its
line number and not sent, the good ones still go. Records are keyed ``tenant|memory_key`` so
every version of a memory lands on one partition, through an idempotent librdkafka producer
(acks=all). ``--wait`` then watches Postgres until every sent event is ingested (versioned and
indexed) or dead-lettered, and prints the counts.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.schemas.codec import encode
from memstream.schemas.envelope import EnvelopeError, EventSigner
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent
from memstream.services.domain.validation import validate_event
from memstream.services.settings import Settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

PROGRESS_FROM = 500  # lines: a progress bar on files longer than this


@dataclass
class Outcome:
    sent: list[tuple[str, str]] = field(default_factory=list)  # (tenant, event_id)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, why)
    repeated_in_file: int = 0


def to_record(event: MemoryEvent) -> dict[str, Any]:
    """A validated event as the Avro ``memstream.MemoryEvent`` record."""
    return {
        "event_id": event.event_id,
        "tenant_id": event.tenant_id,
        "memory_key": event.memory_key,
        "entity_type": event.entity_type,
        "entity_id": event.entity_id,
        "entities": [{"type": a.type, "id": a.id} for a in event.entities],
        "fact_type": event.fact_type,
        "content": event.content,
        "attributes": dict(event.attributes),
        "source_system": event.source_system,
        "status": event.status,
        "occurred_at": event.occurred_at,
        "op": event.op.value,
    }


def message_key(event: MemoryEvent) -> bytes:
    return f"{event.tenant_id}|{event.memory_key}".encode()


def read_events(path: Path, now: datetime) -> Iterator[tuple[int, MemoryEvent | str]]:
    """(line number, event or the reason the line is not one), blank lines skipped."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"not JSON ({exc.msg} at column {exc.colno})"
                continue
            try:
                yield number, validate_event(raw, now)
            except InvalidEvent as exc:
                yield number, f"{exc.reason}: {exc.detail}"


BROKER_PROBE_SECONDS = 5.0
kafka_log = logging.getLogger("memstream.kafka")


def make_producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    if kafka_log.level == logging.NOTSET:  # silent unless a caller set a level
        kafka_log.setLevel(logging.CRITICAL)
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # librdkafka's own log (a line per failed connection attempt) goes to our logger,
            # which shows warnings only: the user gets one line from us instead.
            "logger": kafka_log,
            "log_level": 3,
        }
    )


def _reason(exc: Exception) -> str:
    error = exc.args[0] if exc.args else exc
    return str(error.str()) if hasattr(error, "str") else str(error)


def probe_broker(producer: Any, bootstrap: str) -> None:
    """Fail in one line within seconds when the broker cannot be reached."""
    from confluent_kafka import KafkaException

    from memstream.ops.stack import StackError

    try:
        producer.list_topics(timeout=BROKER_PROBE_SECONDS)
    except KafkaException as exc:
        raise StackError(
            "broker",
            f"cannot reach {bootstrap} within {BROKER_PROBE_SECONDS:.0f}s ({_reason(exc)})",
            "start the stack with `memstream up`, or set MEMSTREAM_BROKER to a running broker",
        ) from None


class Signers:
    """The producer credential of each tenant: the one given (``--key`` / MEMSTREAM_KEY), else
    that tenant's from the data dir's credentials.json."""

    def __init__(self, settings: Settings, key: str | None = None) -> None:
        self._settings = settings
        self._key = key
        self._signers: dict[str, EventSigner] = {}

    def headers(self, tenant: str, value: bytes, event_id: str) -> list[tuple[str, bytes]]:
        from memstream.ops.identity import credential_for

        signer = self._signers.get(tenant)
        if signer is None:
            signer = EventSigner(credential_for(self._settings, "producer", self._key, tenant))
            self._signers[tenant] = signer
        return signer.headers(value, event_id, int(time.time() * 1000))


def send_file(settings: Settings, path: Path, topic: str, key: str | None = None) -> Outcome:
    assert settings.broker is not None
    signers = Signers(settings, key)
    lines = sum(1 for _ in path.open(encoding="utf-8"))
    producer = make_producer(settings.broker)
    probed = False  # the broker is checked before the first send, once its credential is found
    outcome = Outcome()
    seen: set[tuple[str, str]] = set()
    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    with Progress(
        TextColumn("publishing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=lines < PROGRESS_FROM,
        transient=True,
    ) as progress:
        task = progress.add_task("publish", total=lines)
        for number, item in read_events(path, datetime.now(UTC)):
            progress.update(task, completed=number)
            if isinstance(item, str):
                outcome.rejected.append((number, item))
                continue
            ident = (item.tenant_id, item.event_id)
            if ident in seen:
                outcome.repeated_in_file += 1
            seen.add(ident)
            value = encode("MemoryEvent", to_record(item))
            headers = signers.headers(item.tenant_id, value, item.event_id)
            if not probed:
                probe_broker(producer, settings.broker)
                probed = True
            while True:
                try:
                    producer.produce(
                        topic,
                        key=message_key(item),
                        value=value,
                        headers=headers,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
            outcome.sent.append(ident)
        remaining = producer.flush(60)
    if remaining or failures:
        raise RuntimeError(
            f"{remaining + len(failures)} events were not acknowledged by the broker "
            f"({failures[0] if failures else 'flush timed out'})"
        )
    return outcome


def publish(
    settings: Settings,
    path: Path,
    *,
    topic: str | None,
    wait: bool,
    timeout: float,
    key: str | None = None,
) -> int:
    from memstream.ops.identity import CredentialsMissing
    from memstream.ops.stack import resolve_settings

    if not path.is_file():
        err.print(f"memstream: publish: {path} is not a file")
        return 2
    settings = resolve_settings(settings)
    topic = topic or settings.topics.events
    before = _already_ingested(settings, path) if wait else set()
    try:
        outcome = send_file(settings, path, topic, key)
    except (CredentialsMissing, EnvelopeError) as exc:
        err.print(f"memstream: publish: {exc}", markup=False)
        return 2
    for number, why in outcome.rejected:
        err.print(f"{path}:{number}: not sent: {why}", markup=False)
    out.print(
        f"sent {len(outcome.sent)} events to {topic}"
        + (f", {len(outcome.rejected)} lines rejected" if outcome.rejected else "")
    )
    if not wait:
        return 1 if outcome.rejected else 0
    from memstream.ops.ingest_status import wait_for

    status = wait_for(settings, sorted(set(outcome.sent)), timeout=timeout, console=err)
    duplicates = outcome.repeated_in_file + len(before & set(outcome.sent))
    reasons = ", ".join(f"{r}: {n}" for r, n in Counter(status.dead.values()).most_common())
    out.print(
        f"ingested {len(status.ingested) - len(before & status.ingested)} · duplicates "
        f"{duplicates} · dead-lettered {len(status.dead)}"
        + (f" ({reasons})" if reasons else "")
        + (f" · still pending {len(status.pending)}" if status.pending else "")
    )
    if status.pending:
        err.print(
            f"memstream: publish: {len(status.pending)} events not processed within "
            f"{timeout:.0f}s; is a worker running (`memstream up`)?"
        )
        return 1
    if status.dead:
        err.print(
            f"memstream: publish: {len(status.dead)} events were dead-lettered. Fix: see why "
            "with `memstream dlq list`, correct them, then publish again or `memstream dlq "
            "redrive`",
            markup=False,
        )
        return 1
    return 1 if outcome.rejected else 0


def _already_ingested(settings: Settings, path: Path) -> set[tuple[str, str]]:
    from memstream.ops.ingest_status import ingested_among

    idents = {
        (item.tenant_id, item.event_id)
        for _, item in read_events(path, datetime.now(UTC))
        if not isinstance(item, str)
    }
    return ingested_among(settings, sorted(idents))
