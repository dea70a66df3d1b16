"""The vector index and the encoder: points, filters, hits.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


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

    async def upsert(
        self, tenant_id: str, points: Sequence[VectorPoint], *, durable: bool = True
    ) -> None:
        """Write these points whole. ``durable=False`` leaves making them durable to a later
        :meth:`flush` (one for a batch of writes instead of one per write); until then they
        survive the process being killed but not necessarily the machine crashing."""
        ...

    async def set_payload(self, tenant_id: str, point_id: str, payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` into one existing point (is_current / valid_to changes)."""
        ...

    async def set_payloads(
        self,
        tenant_id: str,
        updates: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        durable: bool = True,
    ) -> set[str]:
        """Merge each payload into its point, in one write; returns the ids that do not exist
        (nothing is written for those). ``durable`` as for :meth:`upsert`."""
        ...

    async def flush(self, tenant_id: str) -> None:
        """Make every write to the tenant's store so far durable (those made with
        ``durable=False``); nothing for a tenant without a store."""
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
