"""EventPublisher: the async library producers (and the doors) use to publish MemoryEvents.

Each event is validated exactly as the worker validates it (``validate_event``); an invalid one
is refused with its reason and not sent, the valid ones go Avro-encoded and keyed
``tenant|memory_key`` (every version of a memory on one partition) through an aiokafka
producer (acks=all), each signed with the producer's credential (``envelope.EventSigner``:
the worker records only events a credential of their tenant and source signed). Imports no
torch and no Faust.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaProducer

from memstream.schemas import codec, envelope
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.validation import validate_event
from memstream.services.kafka_security import KafkaSecurity, resolve
from memstream.services.settings import Topics
from memstream.streams.records import event_key, event_record


class PublishError(Exception):
    """The broker did not acknowledge an event; the message names it."""


@dataclass(frozen=True, slots=True)
class Rejected:
    """An event refused before sending: its index in the call, its id if any, and why."""

    index: int
    event_id: str | None
    reason: str
    detail: str


@dataclass
class Published:
    sent: list[tuple[str, str]] = field(default_factory=list)  # (tenant_id, event_id)
    rejected: list[Rejected] = field(default_factory=list)


class EventPublisher:
    def __init__(
        self,
        bootstrap: str,
        topics: Topics | None = None,
        *,
        credential: str | None = None,
        security: KafkaSecurity | None = None,
    ) -> None:
        """``security`` None: ``MEMSTREAM_KAFKA_*`` (``memstream.services.kafka_security``)."""
        self._security = resolve(security)
        self._bootstrap = bootstrap
        self._topics = topics or Topics()
        self._credential = credential
        self._signer: envelope.EventSigner | None = None
        self._producer: AIOKafkaProducer | None = None

    async def start(self) -> EventPublisher:
        text = self._credential or os.environ.get("MEMSTREAM_KEY", "").strip()
        if not text:
            raise PublishError("no credential: pass credential=… or set MEMSTREAM_KEY")
        try:
            self._signer = envelope.EventSigner(text)
        except envelope.EnvelopeError as exc:
            raise PublishError(f"the credential is unusable: {exc}") from None
        # acks=all, not aiokafka's idempotence: Tansu answers its InitProducerId with an error.
        # A resent event is still recorded once: the ledger is idempotent on tenant + event_id.
        producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            acks="all",
            linger_ms=2,
            **self._security.aiokafka_options(),
        )
        try:
            await producer.start()
        except Exception as exc:  # the driver's errors: one message naming the broker
            await producer.stop()
            raise PublishError(f"cannot reach the broker {self._bootstrap}: {exc!r}") from exc
        self._producer = producer
        return self

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def __aenter__(self) -> EventPublisher:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def publish(
        self,
        events: Iterable[Mapping[str, Any]],
        *,
        tenant_id: str | None = None,
        now: datetime | None = None,
    ) -> Published:
        """Validate and send ``events``; with ``tenant_id`` an event of another tenant is
        refused (``tenant_mismatch``). Returns once the broker acknowledged every sent one."""
        if self._producer is None or self._signer is None:
            raise PublishError("the publisher is not started: use `async with EventPublisher(…)`")
        moment = now or datetime.now(UTC)
        outcome = Published()
        pending = []
        for index, raw in enumerate(events):
            event_id = raw.get("event_id") if isinstance(raw, Mapping) else None
            try:
                event = validate_event(raw, moment)
            except InvalidEvent as exc:
                outcome.rejected.append(Rejected(index, _text(event_id), exc.reason, exc.detail))
                continue
            if tenant_id is not None and event.tenant_id != tenant_id:
                outcome.rejected.append(
                    Rejected(
                        index,
                        event.event_id,
                        "tenant_mismatch",
                        f"event of tenant {event.tenant_id!r}; this credential is for "
                        f"{tenant_id!r}",
                    )
                )
                continue
            value = codec.encode("MemoryEvent", event_record(event))
            key = event_key(event)
            headers = self._signer.headers(value, event.event_id, int(time.time() * 1000))
            sent = await self._producer.send(
                self._topics.events, value=value, key=key, headers=headers
            )
            pending.append(((event.tenant_id, event.event_id), sent))
        for ident, future in pending:
            try:
                await future
            except Exception as exc:  # the driver's errors: one message naming the event
                raise PublishError(f"event {ident[1]!r} was not acknowledged: {exc}") from exc
            outcome.sent.append(ident)
        return outcome


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
