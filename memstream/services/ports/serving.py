"""What serving a request touches besides the stores: the reply cache, the reply sink, the
query log, metrics.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.ports.memory import DeadLetter, Recorded


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

    async def announce(self, recorded: Sequence[Recorded]) -> None:
        return None

    async def dead_lettered(self, letter: DeadLetter) -> None:
        return None

    async def scored(self, version: MemoryVersion, scores: TimeScores, at: datetime) -> None:
        return None
