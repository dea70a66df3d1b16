"""Ports: the Protocols the handlers depend on, implemented by ``memstream.services.adapters``.

Must not import any adapter nor any I/O library; only the domain and the stdlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memstream.services.domain.checksum import LedgerLine
from memstream.services.domain.erasure import ErasureResult, ErasureScope
from memstream.services.domain.identity import KeyRecord, Principal
from memstream.services.domain.model import MemoryEvent, MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.domain.versioning import Placement


class AdapterError(Exception):
    """Root of every error raised by an adapter; drivers' errors are translated into it."""


class TransientError(AdapterError):
    """A failure that may pass (connection lost, timeout): retry with backoff."""


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One version in a tenant's vector store. ``id`` is the version_id (a uuid string)."""

    id: str
    vector: Sequence[float]
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class VectorFilter:
    """What a vector search may return.

    Times are epoch seconds in the payload (``valid_from``, ``valid_to``, ``occurred_at``).
    - ``current_only``: only points whose payload ``is_current`` is true;
    - ``as_of``: only points valid at that moment (valid_from <= t < valid_to, or open-ended);
    - ``anchors``: any of these ``"type:id"`` strings in payload ``anchors``;
    - ``window``: ``occurred_at`` within [from, to];
    - ``fact_types`` / ``exclude_statuses``: metadata filters;
    - ``ids``: only these version ids (point ids); malformed ones match nothing. Retrieval
      uses it to score the candidates one retriever found on the other retriever's signal.
    """

    current_only: bool = True
    as_of: datetime | None = None
    anchors: tuple[str, ...] = ()
    window: tuple[datetime, datetime] | None = None
    fact_types: tuple[str, ...] = ()
    exclude_statuses: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VectorHit:
    id: str
    score: float
    payload: Mapping[str, Any] = field(default_factory=dict)


class VectorIndex(Protocol):
    """A vector store with one physically separate collection / shard per tenant."""

    async def upsert(self, tenant_id: str, points: Sequence[VectorPoint]) -> None: ...

    async def set_payload(self, tenant_id: str, point_id: str, payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` into one existing point (is_current / valid_to changes)."""
        ...

    async def set_payloads(
        self, tenant_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> set[str]:
        """Merge each payload into its point, in one write; returns the ids that do not exist
        (nothing is written for those)."""
        ...

    async def search(
        self, tenant_id: str, vector: Sequence[float], flt: VectorFilter, limit: int
    ) -> list[VectorHit]: ...

    async def count(self, tenant_id: str) -> int: ...

    async def point_ids(self, tenant_id: str) -> set[str]: ...

    async def drop_tenant(self, tenant_id: str) -> None: ...

    async def delete(self, tenant_id: str, point_ids: Sequence[str]) -> int:
        """Delete these points (erasure); returns how many existed. Unknown ids are ignored."""
        ...

    async def compact(self, tenant_id: str) -> None:
        """Rewrite the tenant's storage so that deleted points leave no bytes behind."""
        ...

    async def close(self) -> None: ...


class Embedder(Protocol):
    """Text → normalised vectors. Implementations run the model off the event loop."""

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass(frozen=True, slots=True)
class Position:
    """Where a message was read: kept in the ledger so replay works by explicit offsets."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Recorded:
    """The outcome of recording one event in Postgres.

    ``duplicate`` is true when the event_id was already in the ledger (nothing changed).
    """

    version: MemoryVersion
    changed: tuple[MemoryVersion, ...]
    outcome: str
    duplicate: bool


@dataclass(frozen=True, slots=True)
class DeadLetter:
    reason: str
    detail: str
    position: Position
    original: bytes | None
    original_key: bytes | None = None
    tenant_id: str | None = None
    event_id: str | None = None


@dataclass(frozen=True, slots=True)
class IndexTask:
    """A version whose vector point must be written (``needs_vector``) or re-synced (payload)."""

    version: MemoryVersion
    needs_vector: bool


class MemoryWrite(Protocol):
    """One memory's unit of work, its lock held (cosmicpython's ``allocate`` shape: the handler
    decides with the domain, the repository stores). ``duplicate``: the ledger already holds
    the event (a redelivery) and what it recorded then; nothing is to be saved."""

    @property
    def chain(self) -> Sequence[MemoryVersion]: ...

    @property
    def duplicate(self) -> Recorded | None: ...

    async def save(
        self, event: MemoryEvent, raw: Mapping[str, Any], position: Position, placement: Placement
    ) -> None:
        """Ledger row + new version + derived changes, committed with the unit of work."""
        ...


class MemoryRepository(Protocol):
    """The ledger and the versions, in Postgres (the source of truth)."""

    def locked(self, event: MemoryEvent) -> AbstractAsyncContextManager[MemoryWrite]:
        """A unit of work on ``event``'s memory: locked, its chain and the ledger's answer read.

        A clean exit commits what ``save`` wrote; an exception rolls it back. Raises
        ``TransientError`` when the database is unreachable, ``AdapterError`` otherwise.
        """
        ...

    async def dead_letter(self, letter: DeadLetter) -> None: ...

    async def pending_index(
        self, keys: Sequence[tuple[str, str]] | None, limit: int
    ) -> list[IndexTask]:
        """Versions not yet in the vector store, or whose payload is stale.

        ``keys`` restricts to these (tenant_id, memory_key); None means any (the sweep).
        """
        ...

    async def mark_indexed(self, versions: Sequence[MemoryVersion]) -> None:
        """Mark indexed, unless their derived state changed since they were read."""
        ...

    async def chain(self, tenant_id: str, memory_key: str) -> list[MemoryVersion]: ...

    async def close(self) -> None: ...


class ChangeSink(Protocol):
    """Where the ingest side announces what it did (memory.changes, the DLQ topic)."""

    async def versioned(self, recorded: Recorded) -> None: ...

    async def dead_lettered(self, letter: DeadLetter) -> None: ...

    async def scored(self, version: MemoryVersion, scores: TimeScores, at: datetime) -> None:
        """The rescoring timer changed a current version's time scores (memory.scores)."""
        ...


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """A version found by keyword search; ``score`` in [0, 1] (1 = every query term matched)."""

    version_id: str
    score: float


class MemoryQueries(Protocol):
    """The read side of Postgres: tenants, keyword search, and versions by id (tenant-scoped)."""

    async def known_tenant(self, tenant_id: str) -> bool: ...

    async def keyword_search(
        self, tenant_id: str, query: str, flt: VectorFilter, limit: int
    ) -> list[KeywordHit]:
        """Full text + trigram/substring search over content and attribute values, with the
        same filter semantics as ``VectorIndex.search`` (current_only, as_of, anchors, window,
        fact_types, exclude_statuses). Only UPSERT versions; never another tenant's rows."""
        ...

    async def versions(self, tenant_id: str, version_ids: Sequence[str]) -> list[MemoryVersion]:
        """The versions with these ids that belong to ``tenant_id`` (others are ignored)."""
        ...

    async def chains(self, tenant_id: str, memory_keys: Sequence[str]) -> list[MemoryVersion]:
        """Every version of these memories of ``tenant_id``."""
        ...


@dataclass(frozen=True, slots=True)
class TermCounts:
    """How many memories were looked at, and how many of them hold each term."""

    memories: int
    held: Mapping[str, int]


class HeldTerms(Protocol):
    """The gate's look at the asker's own memories (``gating.own_terms``)."""

    async def held_terms(
        self, tenant_id: str, terms: Sequence[str], flt: VectorFilter
    ) -> TermCounts:
        """How many UPSERT versions of ``tenant_id`` pass ``flt`` and, for each of ``terms``
        (content words, CJK grams), how many of them hold it, matched as keyword search
        matches a word (an English word by its stem at the start of a word, a short stem by
        its inflected whole words, a gram as a substring); counted over at most a bounded
        number of versions. ``flt`` must name ``anchors`` (the asker's): without them nothing
        is counted. Never another tenant's rows."""
        ...


class Cache(Protocol):
    """Redis-backed caches. Every method degrades to a miss / no-op when the cache is down:
    it never raises for an outage (an outage must cost a computation, never an error)."""

    async def get_embedding(self, text: str) -> list[float] | None: ...

    async def put_embedding(self, text: str, vector: Sequence[float]) -> None: ...

    async def get_reply(self, tenant_id: str, request_key: str) -> bytes | None: ...

    async def put_reply(self, tenant_id: str, request_key: str, reply: bytes) -> None: ...

    async def invalidate_tenant(self, tenant_id: str) -> None:
        """Every cached reply of the tenant becomes a miss (O(1), e.g. a generation bump)."""
        ...

    async def purge_tenant(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        """Delete (not just invalidate) every cached reply of the tenant (erasure); returns how
        many keys went. Raises ``AdapterError`` when the cache cannot be reached: an erasure
        must know whether the bytes are gone."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class OutboundReply:
    """A reply addressed to a client: its topic, and partition when the client named one."""

    topic: str
    partition: int | None
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


class ReplySink(Protocol):
    """Where the query side sends replies and undecodable requests."""

    async def reply(self, reply: OutboundReply) -> None: ...

    async def dead_letter_request(self, letter: DeadLetter) -> None: ...


class QueryLog(Protocol):
    """The record of every retrieval, for audits."""

    async def record(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> None: ...


class Metrics(Protocol):
    """What the handlers report for monitoring (counters and histograms)."""

    def ingested(self, outcome: str) -> None: ...

    def dead_lettered(self, reason: str) -> None: ...

    def indexed(self, versions: int) -> None: ...

    def ingest_lag(self, seconds: float) -> None:
        """Age of the oldest message of the batch just ingested (published → recorded): the
        consumer lag in time, which needs no broker offsets (Tansu's latest offsets are wrong)."""
        ...

    def retrieval(self, reply: Mapping[str, Any]) -> None:
        """One reply: its status, gate decision, stage latencies and result trust scores."""
        ...


class NoMetrics:
    """Metrics that go nowhere (tools and tests that do not export any)."""

    def ingested(self, outcome: str) -> None:
        return None

    def dead_lettered(self, reason: str) -> None:
        return None

    def indexed(self, versions: int) -> None:
        return None

    def ingest_lag(self, seconds: float) -> None:
        return None

    def retrieval(self, reply: Mapping[str, Any]) -> None:
        return None


class SilentSink:
    """A ChangeSink that announces nothing: an embedded run with no broker, or a rebuild (it
    changes derived state, no memory). Postgres keeps everything."""

    async def versioned(self, recorded: Recorded) -> None:
        return None

    async def dead_lettered(self, letter: DeadLetter) -> None:
        return None

    async def scored(self, version: MemoryVersion, scores: TimeScores, at: datetime) -> None:
        return None


class RulesRepository(Protocol):
    """Per-tenant rules that change at run time, and the materialised time scores."""

    async def overrides(self, tenant_id: str) -> dict[str, dict[str, float]]:
        """{"half_life": {fact_type: seconds}, "authority": {source: value}}."""
        ...

    async def due(
        self, stale_before: datetime, limit: int
    ) -> list[tuple[MemoryVersion, TimeScores | None, datetime | None]]: ...

    async def save(
        self, items: Sequence[tuple[MemoryVersion, TimeScores, datetime | None]], now: datetime
    ) -> set[str]: ...


# -- the ledger as rebuilds and audits read it (``handlers.rebuild*``, ``handlers.verify``) -----

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


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused request or event, for the audit trail (``reason`` is never sent back)."""

    kind: str  # request | event
    code: str  # unauthenticated | forbidden | bad_reply_address
    reason: str
    key_id: str | None = None
    tenant_id: str | None = None
    subject_id: str | None = None  # the request id / event id, when known
    position: Position | None = None


class CredentialStore(Protocol):
    """Tenants' credentials (only hashes and public keys are stored)."""

    async def authenticate(self, secret: str) -> Principal:
        """The principal of a full credential string presented as a bearer secret (the HTTP
        gateway); raises ``Unauthenticated`` for an unknown, expired or revoked one."""
        ...

    async def key(self, key_id: str) -> KeyRecord | None:
        """The stored key (whatever its state), or None; may be cached for a few seconds."""
        ...

    async def refused(self, refusal: Refusal) -> None:
        """One audit row; never raises for an outage (logged instead)."""
        ...


class NonceStore(Protocol):
    """Nonces seen within their token's lifetime: a token is good for one record only."""

    async def claim(self, key_id: str, nonce: str, until: datetime) -> bool:
        """True the first time (key_id, nonce) is claimed before ``until``; False after.
        Raises ``TransientError`` when the store is unreachable (the caller refuses)."""
        ...


@dataclass(frozen=True, slots=True)
class PendingErasure:
    """An erasure committed in Postgres whose vectors, caches or VACUUM are not done yet."""

    erasure_id: str
    tenant_id: str
    version_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ErasureMark:
    """What ``history`` shows of an erased version instead of its content."""

    erasure_id: str
    erased_at: datetime
    reason: str
    content_digest: str


class ErasureRepository(Protocol):
    """Erasure in Postgres: the tombstones, the redactions and the erasure log."""

    async def erase(
        self,
        scope: ErasureScope,
        *,
        erasure_id: str,
        requested_by: str,
        reason: str,
        requested_at: datetime,
        dry_run: bool,
    ) -> ErasureResult:
        """In ONE transaction, under a lock that keeps the tenant's ingest out: tombstone every
        version and ledger row in scope, redact the query log, purge dead letters, write the
        erasure log (pending until ``complete``). ``dry_run`` counts and rolls back. Nothing in
        scope (erased already) is a no-op: no log row, ``erasure_id`` None."""
        ...

    async def pending(self, tenant_id: str) -> list[PendingErasure]: ...

    async def complete(self, erasure_ids: Sequence[str], at: datetime) -> None: ...

    async def vacuum(self) -> None:
        """VACUUM the tables an erasure touches (outside any transaction)."""
        ...

    async def marks(self, tenant_id: str, memory_key: str) -> dict[str, ErasureMark]:
        """The erased versions of one memory, by version_id."""
        ...

    async def log(self, tenant_id: str) -> list[dict[str, Any]]:
        """The tenant's erasure log, oldest first (no personal data in it)."""
        ...
