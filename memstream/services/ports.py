"""Ports: the Protocols the handlers depend on, implemented by ``memstream.services.adapters``.

Must not import any adapter nor any I/O library; only the domain and the stdlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memstream.services.domain.erasure import ErasureResult, ErasureScope
from memstream.services.domain.identity import KeyRecord, Principal
from memstream.services.domain.model import MemoryEvent, MemoryVersion
from memstream.services.domain.rescoring import TimeScores


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
    - ``fact_types`` / ``exclude_statuses``: metadata filters.
    """

    current_only: bool = True
    as_of: datetime | None = None
    anchors: tuple[str, ...] = ()
    window: tuple[datetime, datetime] | None = None
    fact_types: tuple[str, ...] = ()
    exclude_statuses: tuple[str, ...] = ()


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


class MemoryRepository(Protocol):
    """The ledger and the versions, in Postgres (the source of truth)."""

    async def record(
        self, event: MemoryEvent, raw: Mapping[str, Any], position: Position, recorded_at: datetime
    ) -> Recorded:
        """Ledger + new version + derived changes, in ONE transaction; idempotent on event_id.

        Raises ``InvalidEvent`` for a permanent problem (e.g. RETRACT of an unknown memory),
        ``TransientError`` when the database is unreachable.
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
        """Delete (not just invalidate) every cached reply of the tenant and the trust entries
        of these versions (erasure); returns how many keys went. Raises ``AdapterError`` when
        the cache cannot be reached: an erasure must know whether the bytes are gone."""
        ...

    async def get_trust(self, version_ids: Sequence[str]) -> dict[str, dict[str, float]]: ...

    async def put_trust(self, components: Mapping[str, Mapping[str, float]]) -> None: ...

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
