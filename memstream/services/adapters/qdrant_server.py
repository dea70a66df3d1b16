"""``VectorIndex`` on a Qdrant server (or qdrant-client's local mode): one collection per tenant.

The collection of a tenant is ``collection_prefix + collection_slug(tenant_id)`` (a readable slug
plus a hash of the exact id, the same naming as the edge adapter's directories), created lazily
on the first write with cosine distance and the payload indexes the filters use. Behaviour is
identical to ``services.adapters.qdrant_edge.QdrantEdgeIndex``; one contract suite runs on both
(``tests/integration/test_vector_index_contract.py``).

The adapter owns the ``AsyncQdrantClient`` it is given: :meth:`close` closes it. Writes use
``wait=True`` so that a returned upsert is applied (and in the server's WAL). Connection
failures, timeouts, 429 and 5xx answers become ``TransientError``; everything else
``AdapterError``. A collection dropped by another process stays in this process's cache of
ready collections until :meth:`drop_tenant` is called here, and calls on it fail meanwhile.

Must not import ``services.handlers`` nor ``streams``: only the ports, the stdlib and the driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

import grpc
import httpx
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memstream.services.adapters.vector_common import (
    canonical_id,
    checked_vector,
    epoch,
    tenant_slug,
    wellformed_ids,
)
from memstream.services.ports import (
    AdapterError,
    TransientError,
    VectorFilter,
    VectorHit,
    VectorPoint,
)

T = TypeVar("T")

_SCROLL_PAGE = 1024
_TRANSIENT_HTTP = frozenset({408, 429, 500, 502, 503, 504})
_TRANSIENT_GRPC = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
)

# As ``qdrant_edge.PAYLOAD_INDEXES``: ``memory_key`` is not indexed (no search filters on it).
PAYLOAD_INDEXES: tuple[tuple[str, qm.PayloadSchemaType], ...] = (
    ("tenant_id", qm.PayloadSchemaType.KEYWORD),
    ("is_current", qm.PayloadSchemaType.BOOL),
    ("anchors", qm.PayloadSchemaType.KEYWORD),
    ("fact_type", qm.PayloadSchemaType.KEYWORD),
    ("status", qm.PayloadSchemaType.KEYWORD),
    ("source_system", qm.PayloadSchemaType.KEYWORD),
    ("valid_from", qm.PayloadSchemaType.FLOAT),
    ("valid_to", qm.PayloadSchemaType.FLOAT),
    ("occurred_at", qm.PayloadSchemaType.FLOAT),
)


def collection_slug(tenant_id: str) -> str:
    return tenant_slug(tenant_id)


class QdrantServerIndex:
    """One Qdrant collection per tenant, named ``collection_prefix + collection_slug(tenant)``."""

    def __init__(
        self, client: AsyncQdrantClient, dimension: int, collection_prefix: str = "memstream_"
    ) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._client = client
        self._dimension = dimension
        self._prefix = collection_prefix
        self._ready: set[str] = set()  # collections known to exist with their payload indexes
        self._create_lock = asyncio.Lock()

    @property
    def dimension(self) -> int:
        return self._dimension

    def collection_name(self, tenant_id: str) -> str:
        return self._prefix + collection_slug(tenant_id)

    async def upsert(
        self, tenant_id: str, points: Sequence[VectorPoint], *, durable: bool = True
    ) -> None:
        # Every write waits for the server (wait=True), whose own WAL makes it durable:
        # ``durable`` and ``flush`` change nothing here.
        if not points:
            return
        batch = [
            qm.PointStruct(
                id=canonical_id(tenant_id, p.id),
                vector=checked_vector(tenant_id, p.id, p.vector, self._dimension),
                payload=dict(p.payload),
            )
            for p in points
        ]
        name = await self._ensure(tenant_id)
        await self._call(tenant_id, "upsert", self._client.upsert(name, batch, wait=True))

    async def set_payload(self, tenant_id: str, point_id: str, payload: Mapping[str, Any]) -> None:
        pid = canonical_id(tenant_id, point_id)
        name = await self._existing(tenant_id)
        found = (
            await self._call(
                tenant_id,
                f"retrieve of {pid}",
                self._client.retrieve(name, [pid], with_payload=False, with_vectors=False),
            )
            if name is not None
            else []
        )
        if name is None or not found:
            raise AdapterError(f"no point {pid} in the vector index of tenant {tenant_id!r}")
        await self._call(
            tenant_id,
            f"set_payload of {pid}",
            self._client.set_payload(name, dict(payload), points=[pid], wait=True),
        )

    async def set_payloads(
        self,
        tenant_id: str,
        updates: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        durable: bool = True,
    ) -> set[str]:
        if not updates:
            return set()
        checked = [(canonical_id(tenant_id, pid), dict(payload)) for pid, payload in updates]
        name = await self._existing(tenant_id)
        if name is None:
            return {pid for pid, _ in checked}
        records = await self._call(
            tenant_id,
            f"retrieve of {len(checked)} points",
            self._client.retrieve(
                name, [pid for pid, _ in checked], with_payload=False, with_vectors=False
            ),
        )
        found = {str(r.id) for r in records}
        operations = [
            qm.SetPayloadOperation(set_payload=qm.SetPayload(payload=payload, points=[pid]))
            for pid, payload in checked
            if pid in found
        ]
        if operations:
            await self._call(
                tenant_id,
                f"set_payloads of {len(operations)}",
                self._client.batch_update_points(name, operations, wait=True),
            )
        return {pid for pid, _ in checked if pid not in found}

    async def flush(self, tenant_id: str) -> None:
        return None  # the server made each write durable before it answered

    async def search(
        self, tenant_id: str, vector: Sequence[float], flt: VectorFilter, limit: int
    ) -> list[VectorHit]:
        query = checked_vector(tenant_id, "query", vector, self._dimension)
        query_filter = to_server_filter(flt)
        if limit <= 0:
            return []
        name = await self._existing(tenant_id)
        if name is None:
            return []
        response = await self._call(
            tenant_id,
            "search",
            self._client.query_points(
                name,
                query=query,
                query_filter=query_filter,
                limit=limit,
                with_payload=True,
                with_vectors=False,
            ),
        )
        return [
            VectorHit(id=str(p.id), score=float(p.score), payload=p.payload or {})
            for p in response.points
        ]

    async def delete(self, tenant_id: str, point_ids: Sequence[str]) -> int:
        """Delete these points (erasure); returns how many existed. Unknown ids are ignored."""
        if not point_ids:
            return 0
        ids = [canonical_id(tenant_id, pid) for pid in point_ids]
        name = await self._existing(tenant_id)
        if name is None:
            return 0
        found = await self._call(
            tenant_id,
            f"retrieve of {len(ids)} points",
            self._client.retrieve(name, ids, with_payload=False, with_vectors=False),
        )
        if found:
            await self._call(
                tenant_id,
                f"delete of {len(found)} points",
                self._client.delete(name, qm.PointIdsList(points=[r.id for r in found]), wait=True),
            )
        return len(found)

    async def compact(self, tenant_id: str) -> None:
        """Ask the server to rewrite the collection's segments without deleted points.

        Qdrant's vacuum optimizer rewrites a segment once its share of deleted points passes
        ``deleted_threshold``; setting it to 0 makes the next optimisation pass vacuum every
        segment that holds a deleted point. The WAL keeps the operations until it rolls over
        (``wal_capacity_mb``): see README, "Erasure". Local mode has no files to rewrite.
        """
        name = await self._existing(tenant_id)
        if name is None:
            return
        await self._call(
            tenant_id,
            "compaction",
            self._client.update_collection(
                name,
                optimizers_config=qm.OptimizersConfigDiff(
                    deleted_threshold=0.0, vacuum_min_vector_number=0
                ),
            ),
        )

    async def count(self, tenant_id: str) -> int:
        name = await self._existing(tenant_id)
        if name is None:
            return 0
        result = await self._call(tenant_id, "count", self._client.count(name, exact=True))
        return result.count

    async def point_ids(self, tenant_id: str) -> set[str]:
        name = await self._existing(tenant_id)
        if name is None:
            return set()
        ids: set[str] = set()
        offset: Any = None
        while True:
            records, offset = await self._call(
                tenant_id,
                "point_ids",
                self._client.scroll(
                    name,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=False,
                    with_vectors=False,
                ),
            )
            ids.update(str(r.id) for r in records)
            if offset is None:
                return ids

    async def drop_tenant(self, tenant_id: str) -> None:
        name = self.collection_name(tenant_id)
        async with self._create_lock:
            self._ready.discard(name)
            await self._call(tenant_id, "drop", self._client.delete_collection(name))

    async def close(self) -> None:
        self._ready.clear()
        try:
            await self._client.close()
        except Exception as exc:
            raise AdapterError(f"cannot close the Qdrant client: {exc}") from exc

    # -- internals -------------------------------------------------------------------------

    async def _existing(self, tenant_id: str) -> str | None:
        """The tenant's collection name if it exists (readied), else None; creates nothing."""
        name = self.collection_name(tenant_id)
        if name in self._ready:
            return name
        exists = await self._call(tenant_id, "lookup", self._client.collection_exists(name))
        return await self._ensure(tenant_id) if exists else None

    async def _ensure(self, tenant_id: str) -> str:
        """Create the tenant's collection and payload indexes unless this process knows them."""
        name = self.collection_name(tenant_id)
        if name in self._ready:
            return name
        async with self._create_lock:
            if name in self._ready:
                return name
            client = self._client
            if not await self._call(tenant_id, "lookup", client.collection_exists(name)):
                params = qm.VectorParams(size=self._dimension, distance=qm.Distance.COSINE)
                try:
                    await client.create_collection(name, vectors_config=params)
                except Exception as exc:
                    # Another process may have created it between our check and our create.
                    if not await self._call(tenant_id, "lookup", client.collection_exists(name)):
                        raise _translate(tenant_id, f"create collection {name}", exc) from exc
            for field_name, schema in PAYLOAD_INDEXES:
                # Idempotent on the server; qdrant-client's local mode only warns that it has none.
                await self._call(
                    tenant_id,
                    f"index {field_name}",
                    client.create_payload_index(name, field_name, schema, wait=True),
                )
            self._ready.add(name)
            return name

    async def _call(self, tenant_id: str, what: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except Exception as exc:
            raise _translate(tenant_id, what, exc) from exc


def _translate(tenant_id: str, what: str, exc: Exception) -> AdapterError:
    message = f"Qdrant {what} failed for tenant {tenant_id!r}: {exc}"
    transient = isinstance(
        exc, ResponseHandlingException | httpx.TransportError | ConnectionError | TimeoutError
    )
    if isinstance(exc, UnexpectedResponse):
        transient = exc.status_code in _TRANSIENT_HTTP
    if isinstance(exc, grpc.aio.AioRpcError):
        transient = exc.code() in _TRANSIENT_GRPC
    return TransientError(message) if transient else AdapterError(message)


def to_server_filter(flt: VectorFilter) -> qm.Filter | None:
    """The server's filter for ``flt`` (semantics in ``memstream.services.ports.VectorFilter``)."""
    must: list[qm.Condition] = []
    must_not: list[qm.Condition] = []
    if flt.as_of is not None:  # as_of overrides current_only: a past version may be the answer
        t = epoch(flt.as_of)
        must.append(qm.FieldCondition(key="valid_from", range=qm.Range(lte=t)))
        still_valid = qm.Filter(
            should=[
                qm.IsEmptyCondition(is_empty=qm.PayloadField(key="valid_to")),  # open-ended
                qm.FieldCondition(key="valid_to", range=qm.Range(gt=t)),
            ]
        )
        must.append(still_valid)
    elif flt.current_only:
        must.append(qm.FieldCondition(key="is_current", match=qm.MatchValue(value=True)))
    if flt.anchors:
        must.append(qm.FieldCondition(key="anchors", match=qm.MatchAny(any=list(flt.anchors))))
    if flt.ids:
        must.append(qm.HasIdCondition(has_id=list(wellformed_ids(flt.ids))))
    if flt.window is not None:
        start, end = (epoch(moment) for moment in flt.window)
        must.append(qm.FieldCondition(key="occurred_at", range=qm.Range(gte=start, lte=end)))
    if flt.fact_types:
        fact_types = qm.MatchAny(any=list(flt.fact_types))
        must.append(qm.FieldCondition(key="fact_type", match=fact_types))
    if flt.exclude_statuses:
        excluded = qm.MatchAny(any=list(flt.exclude_statuses))
        must_not.append(qm.FieldCondition(key="status", match=excluded))
    if not must and not must_not:
        return None
    return qm.Filter(must=must or None, must_not=must_not or None)
