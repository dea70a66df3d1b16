"""Indexing: embed versions and keep each tenant's vector store in step with Postgres.

Postgres says what must be indexed (``indexed_at IS NULL`` or ``index_dirty``); this handler
embeds in batches, upserts points, re-syncs stale payloads, makes the vector store's writes
durable once per tenant and pass (``VectorIndex.flush``), marks them indexed and then announces
the batch's new versions on memory.changes (one message per tenant). Work arrives on a bounded
queue (backpressure on the ingest loop) and a periodic sweep catches anything left after a crash
or an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memstream.services.domain.model import MemoryVersion
from memstream.services.ports import (
    AdapterError,
    ChangeSink,
    Embedder,
    IndexTask,
    MemoryRepository,
    Metrics,
    NoMetrics,
    Recorded,
    VectorIndex,
    VectorPoint,
)

log = logging.getLogger(__name__)


def _epoch(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def payload_of(version: MemoryVersion) -> dict[str, Any]:
    """The vector payload of a version: what searches filter on, and what they hand back."""
    return {
        "tenant_id": version.tenant_id,
        "memory_key": version.memory_key,
        "version": version.version,
        "version_id": version.version_id,
        "is_current": version.is_current,
        "entity_type": version.entity_type,
        "entity_id": version.entity_id,
        "anchors": [f"{a.type}:{a.id}" for a in version.anchors],
        "fact_type": version.fact_type,
        "source_system": version.source_system,
        "status": version.status,
        "occurred_at": _epoch(version.occurred_at),
        "valid_from": _epoch(version.valid_from),
        "valid_to": _epoch(version.valid_to),
        "recorded_at": _epoch(version.recorded_at),
    }


@dataclass(frozen=True, slots=True)
class _Work:
    keys: tuple[tuple[str, str], ...]
    recorded: tuple[Recorded, ...]


class Indexer:
    def __init__(
        self,
        repo: MemoryRepository,
        index: VectorIndex,
        embedder: Embedder,
        sink: ChangeSink,
        *,
        queue_size: int = 4,
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics or NoMetrics()
        self._repo = repo
        self._index = index
        self._embedder = embedder
        self._sink = sink
        self._queue: asyncio.Queue[_Work] = asyncio.Queue(maxsize=queue_size)
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one indexing pass at a time (queue worker vs sweep)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="indexer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def submit(self, recorded: Sequence[Recorded]) -> None:
        """Queue the memories touched by ``recorded``; waits while the queue is full."""
        keys = tuple(dict.fromkeys((r.version.tenant_id, r.version.memory_key) for r in recorded))
        if keys:
            await self._queue.put(_Work(keys, tuple(r for r in recorded if not r.duplicate)))

    async def drain(self) -> None:
        """Wait until everything submitted so far is indexed (or left to the sweep)."""
        await self._queue.join()

    async def _run(self) -> None:
        while True:
            work = await self._queue.get()
            try:
                await self.index_keys(work.keys)
                if work.recorded:
                    await self._sink.announce(work.recorded)
            except AdapterError as exc:
                # Left pending in Postgres: the sweep indexes it once the store is back.
                log.warning(
                    "indexing %d memories failed, left to the sweep: %s", len(work.keys), exc
                )
            except Exception:
                log.exception("indexing %d memories failed, left to the sweep", len(work.keys))
            finally:
                self._queue.task_done()

    async def index_keys(self, keys: Sequence[tuple[str, str]]) -> int:
        async with self._lock:
            tasks = await self._repo.pending_index(keys, limit=100_000)
            await self._apply(tasks)
            return len(tasks)

    async def sweep(self, limit: int = 2_000) -> int:
        """Index whatever Postgres still marks as pending; returns how many versions."""
        async with self._lock:
            tasks = await self._repo.pending_index(None, limit=limit)
            await self._apply(tasks)
            return len(tasks)

    async def _apply(self, tasks: Sequence[IndexTask]) -> None:
        if not tasks:
            return
        # Payload-only changes first, in one write per tenant; a point that turns out to be
        # missing (an index rebuilt or lost) is written whole, with its vector, below.
        fresh = [t.version for t in tasks if t.needs_vector]
        resync: dict[str, list[MemoryVersion]] = {}
        for task in tasks:
            if not task.needs_vector:
                resync.setdefault(task.version.tenant_id, []).append(task.version)
        # Nothing is flushed write by write: each tenant's store once, after all of its writes
        # and before Postgres marks them indexed. A crash before that mark leaves the versions
        # pending, and the sweep writes them again (upserts and payloads are idempotent).
        for tenant_id, versions in resync.items():
            missing = await self._index.set_payloads(
                tenant_id, [(v.version_id, payload_of(v)) for v in versions], durable=False
            )
            fresh.extend(v for v in versions if v.version_id in missing)
        vectors = await self._embedder.embed([v.content for v in fresh])
        by_tenant: dict[str, list[VectorPoint]] = {}
        for version, vector in zip(fresh, vectors, strict=True):
            by_tenant.setdefault(version.tenant_id, []).append(
                VectorPoint(version.version_id, vector, payload_of(version))
            )
        for tenant_id, points in by_tenant.items():
            await self._index.upsert(tenant_id, points, durable=False)
        for tenant_id in dict.fromkeys(t.version.tenant_id for t in tasks):
            await self._index.flush(tenant_id)
        await self._repo.mark_indexed([t.version for t in tasks])
        self._metrics.indexed(len(tasks))
