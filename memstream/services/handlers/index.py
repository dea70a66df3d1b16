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

# The most memories a pass takes from the queue at once (several batches queued behind the
# passes in flight: ``Indexer._run``).
COALESCE_KEYS = 1_024


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


def _merged(works: Sequence[_Work]) -> _Work:
    """Queued works as one, in their order (a memory named twice, once)."""
    if len(works) == 1:
        return works[0]
    keys = tuple(dict.fromkeys(key for work in works for key in work.keys))
    return _Work(keys, tuple(r for work in works for r in work.recorded))


@dataclass(slots=True)
class _Pass:
    """One pass's reads and vectors, waiting for its turn to write."""

    tasks: Sequence[IndexTask]
    points: dict[str, list[VectorPoint]]  # by tenant: the new points, with their vectors
    resync: dict[str, list[MemoryVersion]]  # by tenant: payloads of points that exist
    embedding: set[str]  # the version ids this pass embeds (no later pass embeds them again)


class Indexer:
    """Indexes what Postgres marks pending, in passes of two stages: a pass reads and embeds
    while the pass before it writes (``depth`` passes in flight from the queue), so the model
    is not idle while the vector store and Postgres are written. Reads and embeds are one pass
    at a time, and so are writes, in the order of the reads: a version read by two passes is
    written last with the later state."""

    def __init__(
        self,
        repo: MemoryRepository,
        index: VectorIndex,
        embedder: Embedder,
        sink: ChangeSink,
        *,
        queue_size: int = 4,
        depth: int = 2,
        metrics: Metrics | None = None,
        writes: asyncio.Lock | None = None,
    ) -> None:
        self._metrics = metrics or NoMetrics()
        self._repo = repo
        self._index = index
        self._embedder = embedder
        self._sink = sink
        self._queue: asyncio.Queue[_Work] = asyncio.Queue(maxsize=queue_size)
        self._task: asyncio.Task[None] | None = None
        self._passes: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(depth)
        self._reading = asyncio.Lock()  # reads and embeds: one pass at a time
        self._writing = asyncio.Lock()  # writes: one pass at a time, taken in read order
        # Held while a pass writes the stores, and by an erasure's completion (the same lock,
        # from the composition root): a pass never writes a version erased since it read it.
        self._writes = writes or asyncio.Lock()
        self._embedding: set[str] = set()  # ids an earlier pass in flight writes with a vector

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="indexer")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._passes) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
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
            taken = [await self._queue.get()]
            await self._slots.acquire()
            # What queued while the passes in flight ran goes into one pass (up to
            # ``COALESCE_KEYS``): behind a backlog, a pass's fixed costs (a flush of the tenant's
            # store, the reads and marks in Postgres) are paid once for several batches.
            keys = len(taken[0].keys)
            while keys < COALESCE_KEYS and not self._queue.empty():
                taken.append(self._queue.get_nowait())
                keys += len(taken[-1].keys)
            task = asyncio.get_running_loop().create_task(self._one(_merged(taken), len(taken)))
            self._passes.add(task)
            task.add_done_callback(self._passes.discard)

    async def _one(self, work: _Work, taken: int = 1) -> None:
        try:
            await self.index_keys(work.keys)
            if work.recorded:
                await self._sink.announce(work.recorded)
        except AdapterError as exc:
            # Left pending in Postgres: the sweep indexes it once the store is back.
            log.warning("indexing %d memories failed, left to the sweep: %s", len(work.keys), exc)
        except Exception:
            log.exception("indexing %d memories failed, left to the sweep", len(work.keys))
        finally:
            self._slots.release()
            for _ in range(taken):
                self._queue.task_done()

    async def index_keys(self, keys: Sequence[tuple[str, str]]) -> int:
        return await self._pass(keys, 100_000)

    async def sweep(self, limit: int = 2_000) -> int:
        """Index whatever Postgres still marks as pending; returns how many versions."""
        return await self._pass(None, limit)

    async def _pass(self, keys: Sequence[tuple[str, str]] | None, limit: int) -> int:
        async with self._reading:
            # Taken before the read: a pass that finishes while it runs marks its versions
            # indexed after this read's snapshot, so the read still says they need a vector.
            in_flight = frozenset(self._embedding)
            tasks = await self._repo.pending_index(keys, limit=limit)
            if not tasks:
                return 0
            prepared = await self._prepare(tasks, in_flight)
            try:
                await self._writing.acquire()  # FIFO: the passes write in the order they read
            except BaseException:
                self._embedding -= prepared.embedding
                raise
        try:
            await self._write(prepared)
        finally:
            self._embedding -= prepared.embedding
            self._writing.release()
        return len(tasks)

    async def _prepare(self, tasks: Sequence[IndexTask], in_flight: frozenset[str]) -> _Pass:
        """Embed the versions that need a vector, except those a pass before this one was
        embedding when this one read (``in_flight``) or is now: that pass writes their points
        first (or, had it failed, the re-sync finds them missing and embeds them), so this one
        re-syncs their payloads."""
        fresh: list[MemoryVersion] = []
        resync: dict[str, list[MemoryVersion]] = {}
        for task in tasks:
            vid = task.version.version_id
            if task.needs_vector and vid not in self._embedding and vid not in in_flight:
                fresh.append(task.version)
            else:
                resync.setdefault(task.version.tenant_id, []).append(task.version)
        mine = {v.version_id for v in fresh}
        self._embedding |= mine
        try:
            points = await self._points(fresh)
        except BaseException:
            self._embedding -= mine
            raise
        return _Pass(tasks, points, resync, mine)

    async def _points(self, versions: Sequence[MemoryVersion]) -> dict[str, list[VectorPoint]]:
        vectors = await self._embedder.embed([v.content for v in versions])
        by_tenant: dict[str, list[VectorPoint]] = {}
        for version, vector in zip(versions, vectors, strict=True):
            by_tenant.setdefault(version.tenant_id, []).append(
                VectorPoint(version.version_id, vector, payload_of(version))
            )
        return by_tenant

    async def _write(self, p: _Pass) -> None:
        # Payload-only changes first, in one write per tenant; a point that turns out to be
        # missing (an index rebuilt or lost, or the pass before failed) is written whole.
        # Nothing is flushed write by write: each tenant's store once, after all of its writes
        # and before Postgres marks them indexed. A crash before that mark leaves the versions
        # pending, and the sweep writes them again (upserts and payloads are idempotent).
        async with self._writes:
            await self._write_locked(p)

    async def _write_locked(self, p: _Pass) -> None:
        ids = [t.version.version_id for t in p.tasks]
        gone = await self._repo.erased(ids)  # since this pass read them: never written back
        points = {
            tenant: [point for point in batch if point.id not in gone]
            for tenant, batch in p.points.items()
        }
        resync = {
            tenant: [v for v in versions if v.version_id not in gone]
            for tenant, versions in p.resync.items()
        }
        for tenant_id, versions in resync.items():
            missing = await self._index.set_payloads(
                tenant_id, [(v.version_id, payload_of(v)) for v in versions], durable=False
            )
            lost = [v for v in versions if v.version_id in missing]
            for tenant, batch in (await self._points(lost)).items():
                points.setdefault(tenant, []).extend(batch)
        for tenant_id, batch in points.items():
            await self._index.upsert(tenant_id, batch, durable=False)
        for tenant_id in dict.fromkeys(t.version.tenant_id for t in p.tasks):
            await self._index.flush(tenant_id)
        kept = [t.version for t in p.tasks if t.version.version_id not in gone]
        await self._repo.mark_indexed(kept)
        self._metrics.indexed(len(kept))
