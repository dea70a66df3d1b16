"""``memstream publish FILE.jsonl [--wait]``: JSON MemoryEvents → Avro → Kafka.

Each line is validated exactly as the worker validates it; a bad line is reported with its
line number and not sent, the good ones still go. Records are keyed ``tenant|memory_key`` so
every version of a memory lands on one partition, through an idempotent librdkafka producer
(acks=all). ``--wait`` then watches Postgres until every sent event is ingested (versioned and
indexed) or dead-lettered, and prints the counts.

What "acknowledged" means is said in the output (``ingest_status.acknowledgement``): on a Kafka
broker, on the broker (it keeps what it acked); on the embedded broker, which keeps its topics
in memory, in the ledger: ``publish`` returns once every sent event is recorded in Postgres
(or dead-lettered), so that a crash of ``up`` right after loses none.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.ops.stack import resolve_settings
from memstream.schemas.envelope import EnvelopeError, EventSigner
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent
from memstream.services.domain.validation import validate_event
from memstream.services.settings import Settings
from memstream.streams.producer import EventProducer

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

PROGRESS_FROM = 500  # lines: a progress bar on files longer than this


@dataclass
class Outcome:
    sent: list[tuple[str, str]] = field(default_factory=list)  # (tenant, event_id)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, why)
    repeated_in_file: int = 0


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


def probe_broker(producer: EventProducer, bootstrap: str) -> None:
    """Fail in one line within seconds when the broker cannot be reached."""
    from memstream.ops.stack import StackError

    reason = producer.unreachable(BROKER_PROBE_SECONDS)
    if reason is not None:
        raise StackError(
            "broker",
            f"cannot reach {bootstrap} within {BROKER_PROBE_SECONDS:.0f}s ({reason})",
            "start the stack with `memstream up`, or set MEMSTREAM_BROKER to a running broker",
        )


class Signers:
    """The producer credential of each tenant: the one given (``--key`` / MEMSTREAM_KEY), else
    that tenant's from the data dir's credentials.json."""

    def __init__(self, settings: Settings, key: str | None = None) -> None:
        self._settings = settings
        self._key = key
        self._signers: dict[str, EventSigner] = {}

    def signer(self, tenant: str) -> EventSigner:
        """The tenant's signer; CredentialsMissing when it has no credential here."""
        from memstream.ops.identity import credential_for

        signer = self._signers.get(tenant)
        if signer is None:
            signer = EventSigner(credential_for(self._settings, "producer", self._key, tenant))
            self._signers[tenant] = signer
        return signer

    def headers(self, tenant: str, value: bytes, event_id: str) -> list[tuple[str, bytes]]:
        return self.signer(tenant).headers(value, event_id, int(time.time() * 1000))


def send_file(settings: Settings, path: Path, topic: str, key: str | None = None) -> Outcome:
    assert settings.broker is not None
    signers = Signers(settings, key)
    lines = sum(1 for _ in path.open(encoding="utf-8"))
    producer = EventProducer(settings.broker, signers.headers)
    probed = False  # the broker is checked before the first send, once its credential is found
    outcome = Outcome()
    seen: set[tuple[str, str]] = set()

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
            if not probed:
                signers.signer(item.tenant_id)  # a missing credential is reported first
                probe_broker(producer, settings.broker)
                probed = True
            producer.send(topic, item)
            outcome.sent.append(ident)
        missing = producer.finish(60)
    if missing:
        failures = producer.failures
        raise RuntimeError(
            f"{missing} events were not acknowledged by the broker "
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
    from memstream.ops.ingest_status import confirm, wait_for

    sent = sorted(set(outcome.sent))
    recorded = confirm(settings, sent, timeout=timeout, console=err)
    rejected = f", {len(outcome.rejected)} lines rejected" if outcome.rejected else ""
    if recorded is None:
        out.print(
            f"sent {len(outcome.sent)} events to {topic}{rejected} · acknowledged on the "
            f"broker {settings.broker} (it keeps them; ingestion follows"
            + (")" if wait else ": --wait shows it)")
        )
    else:
        out.print(
            f"sent {len(outcome.sent)} events to {topic}{rejected} · acknowledged in the "
            f"ledger: {len(sent) - len(recorded.pending)} of {len(sent)} recorded in Postgres "
            "(the embedded broker keeps its topics in memory)"
        )
        if recorded.pending:
            err.print(
                f"memstream: publish: {len(recorded.pending)} events were taken by the embedded "
                f"broker but not recorded in the ledger within {timeout:.0f}s: they are lost "
                "if `memstream up` stops now. Is its worker running? Publish them again once "
                "it is (events are idempotent on event_id)"
            )
            return 1
    if not wait:
        return 1 if outcome.rejected else 0

    status = wait_for(settings, sent, timeout=timeout, console=err)
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
