"""The ledger as rebuilds and audits read it (``handlers.rebuild*``, ``handlers.verify``),
and the topic reader of replays.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memstream.services.domain.checksum import LedgerLine
from memstream.services.domain.model import MemoryVersion
from memstream.services.ports.memory import Position

# A ledger event's place in replay order: (received_at, topic, partition, offset, tenant, event).
LedgerKey = tuple[datetime, str, int, int, str, str]


class Refused(Exception):
    """A rebuild refused before it changed anything (a misuse): ``part: problem. Fix: fix``."""

    def __init__(self, part: str, problem: str, fix: str) -> None:
        super().__init__(f"{part}: {problem}. Fix: {fix}")
        self.part, self.problem, self.fix = part, problem, fix


@dataclass(frozen=True, slots=True)
class LedgerEvent:
    """One recorded event as the ledger keeps it (the payload as received)."""

    tenant_id: str
    event_id: str
    payload: Mapping[str, Any]
    position: Position
    received_at: datetime

    @property
    def key(self) -> LedgerKey:
        p = self.position
        return (self.received_at, p.topic, p.partition, p.offset, self.tenant_id, self.event_id)


@dataclass(frozen=True, slots=True)
class ReplayScope:
    """Which events a replay covers: these tenants (None: all), received up to ``until``."""

    tenants: tuple[str, ...] | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class CopyMeta:
    """An audit copy's parameters (its ``replay_meta`` row)."""

    source: str
    tenants: tuple[str, ...] | None
    until: datetime | None
    vectors: str | None


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets FIRST..LAST (inclusive) of one partition; LAST None: to the partition's end."""

    partition: int
    first: int
    last: int | None

    def __str__(self) -> str:
        return f"{self.partition}:{self.first}-{'' if self.last is None else self.last}"


class Ledger(Protocol):
    """One database's ledger and versions, read (and re-marked) in bulk: one connection.

    ``identity``: host:port/database/schema (two ledgers with one identity are the same);
    ``tenants``: ``wanted`` (an unknown one raises AdapterError) or all; ``versions``: each in
    scope with its ledger row's received_at; ``last_replayed``: per tenant, the source key of
    the last event a copy holds; ``step_back``: the key ``page`` events before ``key``;
    ``page_to_replay``: in scope, after ``done[tenant]`` and ``after``, in replay order;
    ``keep_transaction_time``: a copy's ledger takes its versions' recorded_at;
    ``topic_ranges``: per partition the first and last offset recorded (ledger and dead
    letters); ``received``: when each offset was received (ledger row, else dead letter);
    ``erased_events``: which of these (tenant_id, event_id) the ledger holds as erased.
    Erased events and versions are out of every scope (never replayed, counted or compared).
    """

    async def identity(self) -> str: ...
    async def tenants(self, wanted: Sequence[str] | None) -> list[str]: ...
    async def pending_count(self, tenants: Sequence[str] | None) -> int: ...
    async def reset_index(self, tenant_id: str) -> None: ...
    async def upsert_counts(self, tenant_id: str) -> list[tuple[str, int]]: ...
    async def upsert_ids(self, tenant_id: str) -> list[tuple[str, str]]: ...
    async def mark_unindexed(self, version_ids: Sequence[str]) -> None: ...
    async def versions(self, scope: ReplayScope) -> list[tuple[MemoryVersion, datetime]]: ...
    async def ledger_lines(self, scope: ReplayScope) -> list[LedgerLine]: ...
    async def create_schema(self, schema: str) -> None: ...
    async def holds_copy(self, schema: str) -> bool: ...
    async def read_meta(self) -> CopyMeta | None: ...
    async def write_meta(self, meta: CopyMeta) -> None: ...
    async def last_replayed(self) -> dict[str, LedgerKey]: ...
    async def step_back(
        self, scope: ReplayScope, key: LedgerKey, page: int
    ) -> LedgerKey | None: ...
    async def count_to_replay(self, scope: ReplayScope, done: Mapping[str, LedgerKey]) -> int: ...
    async def page_to_replay(
        self, scope: ReplayScope, done: Mapping[str, LedgerKey], after: LedgerKey, limit: int
    ) -> list[LedgerEvent]: ...
    async def count_events(self) -> int: ...
    async def keep_transaction_time(self) -> None: ...
    async def topic_ranges(self, topic: str, scope: ReplayScope) -> list[OffsetRange]: ...
    async def held_offsets(self, topic: str) -> dict[int, int]: ...
    async def erased_events(self, ids: Sequence[tuple[str, str]]) -> set[tuple[str, str]]: ...
    async def received(
        self, topic: str, partition: int, offsets: Sequence[int]
    ) -> dict[int, datetime]: ...
    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class TopicRecord:
    key: bytes | None
    value: bytes | None
    offset: int
    timestamp_ms: int | None


class TopicReader(Protocol):
    """Reads explicit offset ranges of one topic (no consumer group, nothing committed):
    ``open`` refuses (Refused) a missing topic or partition; ``next_batch`` gives the records
    by partition, {} once every range is read."""

    async def open(self, partitions: Sequence[int]) -> None: ...
    def read(self, ranges: Sequence[OffsetRange]) -> None: ...
    async def next_batch(self, size: int) -> dict[int, list[TopicRecord]]: ...
    async def stop(self) -> None: ...
