"""handle_ingest: raw memory-event messages → ledger + immutable versions, or dead letters.

For each message, in order: verify, decode, validate; then the batch's valid events are
recorded in one unit of work (``recording.record_batch``: the repository locks every memory
and reads their chains, ``place_event`` decides event after event, the repository stores;
idempotent on event_id; transient database failures are retried, the batch as a whole, until
they pass, never dead-lettered), then the touched memories go to the indexer. A message that can
never be ingested goes to the dead-letter table and topic with a machine-readable reason and
its original bytes, and the rest of its batch is recorded all the same (a batch that storage
refuses is recorded again one event at a time, ``record_event``, so that only the refused
event is dead-lettered). An ``op: ERASE`` message is not an event to record: it goes to the
injected eraser (a replay has none and skips it) after the events before it are recorded, and
a malformed one is dead-lettered as ``invalid_erasure``. Nothing escapes ``handle_batch``
except cancellation: the agent loop that calls it must never ack a message that was not dealt
with.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memstream.schemas.envelope import Token
from memstream.services.domain.erasure import ERASE_OP, ErasureResult, InvalidScope
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.identity import AuthError, Forbidden, Principal, Role
from memstream.services.domain.validation import UNDECODABLE, validate_event
from memstream.services.handlers.guard import Guard
from memstream.services.handlers.index import Indexer
from memstream.services.handlers.recording import Pending, record_batch, record_event
from memstream.services.handlers.retry import Backoff, retrying
from memstream.services.ports import (
    AdapterError,
    ChangeSink,
    DeadLetter,
    MemoryRepository,
    Metrics,
    NoMetrics,
    Position,
    Recorded,
    TransientError,
)

log = logging.getLogger(__name__)

STORAGE_REJECTED = "storage_rejected"
# The most events recorded in one unit of work (one transaction, a lock per memory).
MAX_BATCH = 256


INVALID_ERASURE = "invalid_erasure"

# Erases the scope of one raw ``op: ERASE`` event (``handlers.forget.Forgetter.erase_event``).
# The second argument is the verified key id of whoever asked (None where events are not
# verified).
Eraser = Callable[[Mapping[str, Any], str | None], Awaitable[ErasureResult]]


def is_erase(raw: Any) -> bool:
    return isinstance(raw, Mapping) and str(raw.get("op") or "").upper() == ERASE_OP


class DecodeError(Exception):
    """Raised by the injected decoder for bytes that are not a MemoryEvent."""


def epoch_moment(seconds: float | None) -> datetime | None:
    """A record timestamp (seconds since the epoch) in UTC; None when it is absent or out of
    range — a producer's bad clock must never stop a worker."""
    if not seconds or seconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Envelope:
    key: bytes | None
    value: bytes | None
    position: Position
    # When memstream received it: None for live ingestion (the clock's now); a replay sets the
    # original moment, which is then both the transaction time and the "now" of validation.
    received_at: datetime | None = None
    # When the producer published it (the record's timestamp), for the lag metric.
    published_at: datetime | None = None
    # The record's headers (the producer's token travels there).
    headers: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class BatchReport:
    recorded: list[Recorded] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    erasures: list[ErasureResult] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        return sum(1 for r in self.recorded if r.duplicate)


class Ingestor:
    def __init__(
        self,
        repo: MemoryRepository,
        sink: ChangeSink,
        indexer: Indexer | None,
        decode: Callable[[bytes], Mapping[str, Any]],
        clock: Callable[[], datetime],
        backoff: Backoff | None = None,
        metrics: Metrics | None = None,
        guard: Guard | None = None,
        eraser: Eraser | None = None,
    ) -> None:
        self._guard = guard
        self._eraser = eraser
        self._metrics = metrics or NoMetrics()
        self._repo = repo
        self._sink = sink
        self._indexer = indexer
        self._decode = decode
        self._clock = clock
        self._backoff = backoff or Backoff()

    async def handle_batch(self, envelopes: Sequence[Envelope]) -> BatchReport:
        report = BatchReport()
        pending: list[tuple[Envelope, Pending]] = []
        for envelope in envelopes:
            raw: Mapping[str, Any] | None = None
            try:
                raw, verified = await self._read(envelope)
                principal = None
                if self._guard is not None and verified is not None:
                    # a refusal keeps ``raw`` as read: its dead letter names tenant and event
                    raw = self._guard.authorize_event(*verified, raw)
                    principal = verified[1]
                if not is_erase(raw):
                    now = envelope.received_at or self._clock()
                    event = validate_event(raw, now)
                    pending.append((envelope, Pending(event, raw, envelope.position, now)))
            except Exception as exc:
                await self._refuse(envelope, exc, raw, report)
                continue
            if is_erase(raw):  # after the events before it, before those after it
                await self._flush(pending, report)
                try:
                    await self._erase(raw, principal, report)
                except Exception as exc:
                    await self._refuse(envelope, exc, raw, report)
            elif len(pending) >= MAX_BATCH:
                await self._flush(pending, report)
        await self._flush(pending, report)
        published = [e.published_at for e in envelopes if e.published_at is not None]
        if published:
            self._metrics.ingest_lag((self._clock() - min(published)).total_seconds())
        if self._indexer is not None:  # None: the versions stay pending for a sweep
            await self._indexer.submit(report.recorded)
        return report

    async def _read(
        self, envelope: Envelope
    ) -> tuple[Mapping[str, Any], tuple[Token, Principal] | None]:
        """The event's fields, and its producer's verified signature where events are signed
        (None where they are not); authorizing it is the caller's."""
        if envelope.value is None:
            raise DecodeError("the message has no value")
        verified = None
        guard, value = self._guard, envelope.value
        if guard is not None:  # the producer's signature, before anything is read
            verified = await retrying(  # a credential store outage waits, like recording
                f"verifying the event at {envelope.position}",
                lambda: guard.verify_event(
                    value, envelope.headers, envelope.published_at, self._clock()
                ),
                self._backoff,
            )
        try:
            raw = self._decode(envelope.value)
        except Exception as exc:  # the decoder may raise anything for garbage
            raise DecodeError(str(exc) or type(exc).__name__) from exc
        return raw, verified

    async def _flush(self, pending: list[tuple[Envelope, Pending]], report: BatchReport) -> None:
        """Record the valid events read so far in one unit of work (transient failures retried
        as a whole). Where storage refuses the batch, its events are recorded one at a time,
        so that only the one refused is dead-lettered."""
        if not pending:
            return
        items = [item for _, item in pending]
        taken = list(pending)
        pending.clear()
        try:
            results: Sequence[Recorded | Exception] = await retrying(
                f"recording a batch of {len(items)} events",
                lambda: record_batch(self._repo, items),
                self._backoff,
            )
        except AdapterError as exc:
            log.warning(
                "a batch of %d events refused by storage (%s): one at a time", len(items), exc
            )
            results = [await self._record_one(item) for item in items]
        for (envelope, item), result in zip(taken, results, strict=True):
            if isinstance(result, Exception):
                await self._refuse(envelope, result, item.raw, report)
            else:
                report.recorded.append(result)
                self._metrics.ingested("duplicate" if result.duplicate else result.outcome)

    async def _record_one(self, item: Pending) -> Recorded | Exception:
        try:
            return await retrying(
                f"recording event {item.event.event_id!r}",
                lambda: record_event(
                    self._repo, item.event, item.raw, item.position, item.recorded_at
                ),
                self._backoff,
            )
        except (InvalidEvent, AdapterError) as exc:
            return exc

    async def _refuse(
        self,
        envelope: Envelope,
        exc: Exception,
        raw: Mapping[str, Any] | None,
        report: BatchReport,
    ) -> None:
        """Dead-letter a message that can never be ingested, with the reason; anything else
        than a refusal propagates (the agent exits without acknowledging)."""
        if isinstance(exc, AuthError):  # dead-lettered with the reason, and audited
            if self._guard is not None:
                await self._guard.refused_event(
                    exc, None, envelope.position, raw.get("event_id") if raw else None
                )
            letter = await self._dead_letter(envelope, exc.code, exc.reason, raw)
        elif isinstance(exc, DecodeError):
            letter = await self._dead_letter(
                envelope, UNDECODABLE, f"not a MemoryEvent: {exc}", raw
            )
        elif isinstance(exc, InvalidEvent):
            letter = await self._dead_letter(envelope, exc.reason, exc.detail, raw)
        elif isinstance(exc, InvalidScope):
            letter = await self._dead_letter(envelope, INVALID_ERASURE, str(exc), raw)
        elif isinstance(exc, AdapterError) and not isinstance(exc, TransientError):
            # Postgres refused the data itself (not an outage): keep it, with the reason.
            log.error("event at %s rejected by storage: %s", envelope.position, exc)
            letter = await self._dead_letter(envelope, STORAGE_REJECTED, str(exc), raw)
        else:
            raise exc
        report.dead.append(letter)
        self._metrics.dead_lettered(letter.reason)

    async def _erase(
        self, raw: Mapping[str, Any], principal: Principal | None, report: BatchReport
    ) -> None:
        """An ``op: ERASE`` event: erase its scope (retried while Postgres is out). Idempotent:
        its erasure id derives from its event id, and a second run finds nothing in scope.
        Where events are verified, only an admin credential may erase, and its key id is
        recorded as who asked."""
        if principal is not None and principal.role is not Role.ADMIN:
            raise Forbidden(f"key {principal.key_id} is not an admin: it may not erase")
        if self._eraser is None:  # a replay: erasures are not re-applied from the topic
            log.info("ERASE event %r skipped (no eraser on this path)", raw.get("event_id"))
            return
        eraser = self._eraser
        actor = principal.key_id if principal is not None else None
        result = await retrying(
            f"erasure event {raw.get('event_id')!r}", lambda: eraser(raw, actor), self._backoff
        )
        report.erasures.append(result)

    async def _dead_letter(
        self, envelope: Envelope, reason: str, detail: str, raw: Mapping[str, Any] | None
    ) -> DeadLetter:
        def text(name: str) -> str | None:
            value = raw.get(name) if isinstance(raw, Mapping) else None
            return value if isinstance(value, str) and value else None

        letter = DeadLetter(
            reason=reason,
            detail=detail,
            position=envelope.position,
            original=envelope.value,
            original_key=envelope.key,
            tenant_id=text("tenant_id"),
            event_id=text("event_id"),
        )
        await retrying(
            f"dead-lettering {envelope.position}",
            lambda: self._repo.dead_letter(letter),
            self._backoff,
        )
        await self._sink.dead_lettered(letter)
        return letter
