"""``VectorIndex`` on Qdrant Edge: the Qdrant engine in-process, one shard directory per tenant.

Each tenant's shard lives in ``root_dir / shard_dir_name(tenant_id)`` (a readable slug plus a
hash of the exact id), is opened lazily on first use and kept open until :meth:`close`,
:meth:`drop_tenant` or, beyond ``max_open`` open shards, until it is the least recently used
idle one (by default the budget ``shard_budget`` derives from the process's map-count limit
and RAM: every open shard holds memory maps, which Linux bounds per process). The engine is
synchronous: every call runs in a worker thread (``asyncio.to_thread``) under that shard's
lock, so concurrent async callers are serialised per shard and the event loop never blocks.
Reads of an unknown tenant create nothing.

What we found in qdrant-edge-py 0.9.0 (strace and SIGKILL experiments, not only the docs):
- Durability: the write-ahead log is on by default. ``update()`` appends to an mmap'ed WAL and
  returns without msync/fsync, so a *process* killed right after it loses nothing (the pages
  are in the OS page cache and ``load`` replays the WAL), but an OS crash or power loss can.
  ``flush()`` msyncs/fsyncs the WAL, the segments and every payload index file: 10-60 ms per
  call on our dev disk with ten payload indexes. Hence ``flush_writes=True`` (the default)
  flushes after every write, for ~1k points/s in batches of 64 (384-d); ``False`` keeps only
  the process-crash guarantee and reaches ~11k points/s. Both are tested with SIGKILL. A write
  made with ``durable=False`` is not flushed; :meth:`flush` flushes it later (the indexer
  writes a batch so, then flushes each tenant once before it marks the batch indexed).
- A shard directory can be open in one process at a time (the WAL is locked).
- Optimisation is manual (no background optimiser): points stay in plain, brute-force segments
  until ``optimize()`` builds the HNSW index — which holds the GIL throughout, so a worker runs
  it only on a copy of a large shard, in a child process (``qdrant_edge_build``).
- ``MatchValue(True)`` is converted to the integer 1 and never matches a bool payload; a
  ``numpy.bool_`` is extracted as a real bool, hence ``_TRUE``.
- ``set_payload`` with a ``None`` value removes the key (as Qdrant server's merge does); the
  ``as_of`` filter treats a missing and a null ``valid_to`` alike (``IsEmptyCondition``).
- Errors are bare ``Exception`` (``ValueError`` for a malformed id); all become ``AdapterError``.

Must not import ``services.handlers`` nor ``streams``: only the ports, the stdlib and the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import qdrant_edge as qe

from memstream.services.adapters.qdrant_edge_build import (
    BUILD_FROM,
    COMPACT_CHILD_FROM,
    PART_BUILD_FROM,
    PART_BUILD_SHARE,
    build_dir,
    copy_for_build,
    needs_build,
    recover_swap,
    start_child,
    swap_in,
)
from memstream.services.adapters.qdrant_edge_build import discard as discard_build
from memstream.services.adapters.qdrant_edge_parts import (
    MAX_PARTS,
    SPLIT_FROM,
    clear_spill,
    commit_split,
    dirty_parts,
    discard_unfinished_split,
    hot_files,
    mark_spill,
    new_parts_dir,
    part_dir,
    part_of,
    parts_dir,
    remove,
    set_dirty_parts,
    spill_pending,
    stored_parts,
    sync_dirs,
    write_manifest,
)
from memstream.services.adapters.shard_budget import shard_budget, shard_maps
from memstream.services.adapters.vector_common import (
    canonical_id,
    checked_vector,
    epoch,
    tenant_slug,
    wellformed_ids,
)
from memstream.services.ports import AdapterError, VectorFilter, VectorHit, VectorPoint

T = TypeVar("T")
log = logging.getLogger(__name__)

_CONFIG_FILE = "edge_config.json"
# Open shards at most: see ``shard_budget`` (derived from vm.max_map_count, the maps one open
# shard holds and RAM; a worker that had touched ~350 tenants once failed every further open
# with "Cannot allocate memory (os error 12)"). Reopening a shard costs ~5-100 ms.
_SCROLL_PAGE = 1024
# A search that excludes statuses asks the engine for this many more (at least) and drops the
# excluded hits itself (``search``).
_EXCLUDED_SLACK = 8
# An index build brings over the points written meanwhile in rounds, each read under the live
# shard's lock, until this few are left for the swap (which holds it throughout).
_CATCH_UP_ROUNDS = 8
_CATCH_UP_LAST = 2_000
# How many candidates an HNSW search keeps (a built shard's; a plain segment is scanned whole).
# On 10^5 real MiniLM embeddings (perturbed copies, as ``bench scale`` writes them) the 40
# nearest under the current-version filter were found at 0.90 with the engine's default, 0.98
# at 256, 0.994 at 512 (1.0 ms a search; measured, qdrant-edge-py 0.9).
_HNSW_EF = 512
_SLOW_CALL_S = 1.0  # a call into the engine this long is logged (``_slow``)
# The HNSW graph: the engine's defaults (m 16, ef_construct 100, full scan under 10,000 KB) but
# no extra links per payload value (``payload_m`` 0), and filtered searches walk it with ACORN,
# which looks past neighbours the filter rejects. The engine builds those extra links for every
# value of every indexed field (is_current, fact_type, status, source_system, ...): on 200,000
# clustered 384-d points with such payloads, a build took 125.8 s with them and 26.2-26.6 s
# without; the 40 nearest under ``is_current`` (70 % of the points) found 1.000 / 0.998 (4.5 /
# 1.5 ms), under one fact type of six 1.000 with the links (3.4 ms), 0.44-0.46 without and
# 0.997 without but with ACORN (6.0 ms), one status of five 1.000 / 0.68-0.69 / 0.999 (measured,
# qdrant-edge-py 0.9). A shard built before keeps its links until its next build.
_HNSW = qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000, payload_m=0)
_ACORN = qe.AcornSearchParams(enable=True)
# With parts, each shard is first asked for this many nearest at least (``_search``), keeping
# _FIRST_EF_PER_HIT candidates for each (at least _FIRST_EF_MIN, at most _HNSW_EF). 10^6 real
# MiniLM embeddings (perturbed copies of 2,000 texts) in 32 built parts, 100 new questions, a
# search of 40: 1.000 of the exact 40 nearest found with 512, 256 or 128 candidates a part
# (27.0, 19.6, 16.2 ms p50), 0.998 with 64 (14.1 ms). (An earlier run on 8 parts whose smaller
# segments were walked by the graph, not scanned, found 0.81 with 128: the engine's full-scan
# threshold, 10,000 KB, is left at its default, so they are scanned.)
_FIRST_ASK = 8
_FIRST_EF_PER_HIT = 16
_FIRST_EF_MIN = 128
# The engine's own defaults, stated so that a load after an erasure restores them (a load with a
# config persists it; an unspecified field would keep ``_VACUUM_ONLY``'s).
_EVERYDAY = qe.EdgeOptimizersConfig(
    deleted_threshold=0.2, vacuum_min_vector_number=1000, default_segment_number=0,
    indexing_threshold=10_000,
)  # fmt: skip


# For an erasure: vacuum every segment holding a deleted point, however few; merge nothing and
# build no new index (either would rewrite segments that held nothing erased). A vacuumed
# segment the engine had indexed keeps an index, though: the engine indexes a segment's
# rewrite when its vectors, deleted ones included, exceed the indexing threshold (in KB, at the
# stored datatype's size), and reuses the old graph. So the threshold is set just above all
# unindexed vectors together (``vacuum_optimizers``): a built segment larger than them stays
# built, the plain ones stay plain. Measured (qdrant-edge-py 0.9, 384-d points at 16 bits, ten
# payload indexes, 50 deleted across a built and a plain segment): 400,000 built + 100,000
# plain: 20.6 s, 399,970 still indexed, a filtered search of 40 8.2 ms p50 (6.3 before the
# erasure), against 17.5 s, none indexed and 32.5 ms without (until a build: ~50 s of a child
# here, ~220 s at 10^6); with 40,000 plain, a threshold under their 30,000 KB indexed them
# too (+3.5 s). The canary gone in each. The engine's count of unindexed points is a floor: a
# payload write to a built point moves it to the appendable segment (copy-on-write) while the
# engine still counts it indexed, so a plain segment that took many was indexed in the rewrite
# too (``bench scale``'s shard at 10^6: 351 s, every point indexed after, against 75 s and
# none indexed without an index; docs/benchmarks.md, "An erasure on a copy"). Such writes are
# counted since (``_moved``, ``_unindexed``).
def _vacuum_only(indexing_threshold: int = 1 << 40) -> qe.EdgeOptimizersConfig:
    return qe.EdgeOptimizersConfig(
        deleted_threshold=0.0, vacuum_min_vector_number=0, default_segment_number=1 << 20,
        indexing_threshold=indexing_threshold,
    )  # fmt: skip


_VACUUM_ONLY = _vacuum_only()
# The bytes of a stored vector's dimension, as the engine sizes a segment for its threshold.
_DIMENSION_BYTES = {
    qe.VectorStorageDatatype.Float32: 4, qe.VectorStorageDatatype.Float16: 2,
    qe.VectorStorageDatatype.Uint8: 1, qe.VectorStorageDatatype.Turbo16: 2,
    qe.VectorStorageDatatype.Turbo8: 1,
}  # fmt: skip
# For a build's child: the everyday settings, but every segment indexed whatever its size (the
# engine's default indexes only segments of 10 MB and more: a part of 12,000 384-d points at 16
# bits is 9 MB). A load with a config persists it; the worker loads the built shard with
# ``_EVERYDAY`` again.
BUILDING = qe.EdgeOptimizersConfig(
    deleted_threshold=0.2, vacuum_min_vector_number=1000, default_segment_number=0,
    indexing_threshold=1,
)  # fmt: skip
# WAL filler: a payload write whose filter matches no point (``tenant_id`` is indexed, so it
# costs no scan), 4 MiB at a time; the engine keeps one closed 32 MiB WAL segment besides the
# open one, so ≤ ~17 of them roll out everything written before.
_FILLER_BYTES = 4 << 20
_FILLER_LIMIT = 64
# The shard a worker thread is calling (``_call``): a write it makes is recorded for that
# shard's build only (``_touch``).
_working = threading.local()
# See the module docstring: a plain ``True`` would be sent to the engine as the integer 1.
_TRUE = cast("bool", np.bool_(True))

# How a new shard stores its vectors: TurboQuant at 16 bits a dimension. The engine scans every
# stored vector of a segment it has not indexed (HNSW only by a child's build: qdrant_edge_build),
# and at 100,000 MiniLM-sized points a filtered search took 5.1 ms against 14.1 with float32;
# on 5,950 real MiniLM embeddings its scores differed from float32's by at most 1e-5 and its
# 40 nearest were the same (Turbo8: 3.6 ms but 0.2 % of the nearest 40 lost; measured,
# qdrant-edge-py 0.9). A shard keeps the datatype it was created with (the engine refuses to
# load it with another), read from its stored config.
NEW_SHARD_DATATYPE = qe.VectorStorageDatatype.Turbo16
_DATATYPES: dict[str, qe.VectorStorageDatatype] = {
    "float32": qe.VectorStorageDatatype.Float32,
    "float16": qe.VectorStorageDatatype.Float16,
    "uint8": qe.VectorStorageDatatype.Uint8,
    "turbo16": qe.VectorStorageDatatype.Turbo16,
    "turbo8": qe.VectorStorageDatatype.Turbo8,
}

# Search threads per open shard. The engine's default started 8 threads a shard (each with its
# stack's memory maps: 28 maps a small shard, against 13 with one), while a shard that is never
# optimised is one segment, which one thread searches (100,000 points: 4.2-5.8 ms with one
# thread, 4.9-6.3 with the default; measured, qdrant-edge-py 0.9).
_SEARCH_THREADS = 1

# A shard gets its payload indexes once it holds this many points. Below it a filtered search
# reads each point's payload (~2.3 µs a point: 1,000 points 2-4 ms), the shard holds 12-17
# memory maps and loads in 4-11 ms; with ten indexes 103-105 maps and 30-40 ms (measured,
# qdrant-edge-py 0.9, one search thread). So a small tenant costs a sixth of the maps, as many
# more stay open, and one reopened costs less; a large one is indexed (160 ms at 2,000 points,
# once).
INDEX_FROM_POINTS = 1_000

# ``memory_key`` is not indexed: no search filters on it, and its keyword index (one value per
# memory) is held in RAM and rebuilt at every load, which holds the GIL: a built shard of
# 300,000 points loaded in 1.6 s without it against 2.4 s with it (measured, qdrant-edge-py
# 0.9). A shard indexed before keeps it.
PAYLOAD_INDEXES: tuple[tuple[str, qe.PayloadSchemaType], ...] = (
    ("tenant_id", qe.PayloadSchemaType.Keyword),
    ("is_current", qe.PayloadSchemaType.Bool),
    ("anchors", qe.PayloadSchemaType.Keyword),
    ("fact_type", qe.PayloadSchemaType.Keyword),
    ("status", qe.PayloadSchemaType.Keyword),
    ("source_system", qe.PayloadSchemaType.Keyword),
    ("valid_from", qe.PayloadSchemaType.Float),
    ("valid_to", qe.PayloadSchemaType.Float),
    ("occurred_at", qe.PayloadSchemaType.Float),
)


def shard_dir_name(tenant_id: str) -> str:
    return tenant_slug(tenant_id)


class _UnknownTenantError(AdapterError):
    """The tenant has no shard yet (reads answer empty; writes to a point fail with this)."""


# A shard's key: (tenant, part); ``_HOT`` for the shard every write goes to (qdrant_edge_parts).
_Key = tuple[str, int]
_HOT = -1


@dataclass(eq=False)
class _Shard:
    engine: qe.EdgeShard
    key: _Key
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # A cancelled caller releases ``lock`` while its thread still runs: this one still holds.
    thread_lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    indexes: int = 0  # payload indexes it has
    # A part whose payloads were set with ``durable=False`` since its last flush (``flush``).
    unflushed: bool = False


@dataclass(eq=False)
class _Build:
    """A shard (a tenant's, or one part of it) being indexed in a child process
    (``qdrant_edge_build``)."""

    # Ids written to the shard since it was copied (``_touch``), under ``touched_lock``: a move
    # into a part records them from the moving thread.
    touched: set[str] = field(default_factory=set)
    touched_lock: threading.Lock = field(default_factory=threading.Lock)
    child: subprocess.Popen[bytes] | None = None
    cancelled: bool = False
    task: asyncio.Task[bool] | None = None
    # An erasure's rewrite of the copy (``_compact_on_copy``) instead of an index build: the
    # points outside any index, deleted ones included (set when the copy is made).
    compact: int | None = None
    error: str = ""

    def add(self, ids: Iterable[str]) -> None:
        with self.touched_lock:
            self.touched.update(ids)

    def take(self) -> list[str]:
        with self.touched_lock:
            ids, self.touched = list(self.touched), set()
        return ids


class QdrantEdgeIndex:
    """One Qdrant Edge shard per tenant under ``root_dir``; cosine distance. With ``parts``
    (0: off), a tenant's shard is the hot one and, each time it holds ``split_from`` points,
    they move to ``parts`` shards by subject (``qdrant_edge_parts``)."""

    def __init__(
        self,
        root_dir: Path,
        dimension: int,
        *,
        flush_writes: bool = True,
        max_open: int | None = None,
        index_from: int = INDEX_FROM_POINTS,
        map_room: int | None = None,
        split_from: int = SPLIT_FROM,
        parts: int = 0,
        build_from: int = BUILD_FROM,
        compact_child_from: int = COMPACT_CHILD_FROM,
    ) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if max_open is not None and max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        if parts == 1 or not 0 <= parts <= MAX_PARTS or split_from < 0 or build_from < 0:
            raise ValueError(
                f"need parts 0 or 2-{MAX_PARTS}, split_from >= 0, build_from >= 0; got "
                f"{parts}, {split_from}, {build_from}"
            )
        self.budget = shard_budget(max_open or 0)  # max_open, or derived from the process
        self._max_open = self.budget.max_open
        # The memory maps open shards may hold (``shard_maps`` each): the budget's by default.
        self._map_room = self.budget.map_room if map_room is None else map_room
        self._index_from = index_from
        self._split_from = split_from
        self._parts_count = parts
        self._build_from = build_from  # 0: never built (``qdrant_edge_build``)
        self._part_build_from = min(build_from, PART_BUILD_FROM)
        self._builds: dict[_Key, _Build] = {}
        self._built: dict[_Key, int] = {}  # points a shard's last build here started from
        # Points deleted here from a shard since its last compaction (``_vacuum``: the engine
        # sizes a segment with its deleted points).
        self._deleted: dict[_Key, int] = {}
        # Payload writes here to a shard's points since its last build or compaction (``_due``,
        # ``_unindexed``): the engine writes a point of a built segment again in the appendable
        # one (copy-on-write) while its count of indexed vectors still counts it — 5,000
        # payload writes to a built shard of 20,000 moved 5,000 points, and ``info()`` still
        # said 20,000 indexed (measured, qdrant-edge-py 0.9). Uncounted, a shard whose memories
        # change state slowly empties its index into the scanned segment with no build due.
        self._moved: dict[_Key, int] = {}
        # One build at a time: a spill can make most parts due at once, and each child takes
        # a core (niced) besides its copy's disk. The shards found due meanwhile wait here, in
        # order, and the end of a build starts the next (an erasure takes its tenant's out).
        self._waiting: OrderedDict[_Key, None] = OrderedDict()
        self.builds_finished = 0  # shards built and swapped in by this process
        self.last_build: dict[str, float] = {}  # its points and phases' seconds (bench scale)
        self._root = Path(root_dir)
        self._dimension = dimension
        self._flush_writes = flush_writes
        self._shards: OrderedDict[_Key, _Shard] = OrderedDict()  # least recently used first
        # Tenants known to be split, and into how many parts (a split is never undone).
        self._split: dict[str, int] = {}
        self._dirty_lock = threading.Lock()
        # Shards an erasure is rewriting, closed meanwhile: set once they may be opened again.
        self._compacting: dict[_Key, asyncio.Event] = {}
        self._compact_child_from = compact_child_from
        # ``open_maps``, kept between changes to the open shards (None: to be summed again).
        # Changed only on the event loop's thread.
        self._maps: int | None = 0
        self._registry_lock = asyncio.Lock()

    @property
    def dimension(self) -> int:
        return self._dimension

    def shard_dir(self, tenant_id: str) -> Path:
        """Where the tenant's shard lives, parts included (it exists once written to)."""
        return self._root / shard_dir_name(tenant_id)

    def parts_of(self, tenant_id: str) -> int:
        """How many parts the tenant's store is split into (0: one shard)."""
        return self._parts(tenant_id)

    async def upsert(
        self, tenant_id: str, points: Sequence[VectorPoint], *, durable: bool = True
    ) -> None:
        if not points:
            return
        checked = [
            (
                canonical_id(tenant_id, p.id),
                checked_vector(tenant_id, p.id, p.vector, self._dimension),
                p,
            )
            for p in points
        ]

        def write(engine: qe.EdgeShard) -> tuple[int, int]:
            batch = [qe.Point(pid, vec, dict(p.payload)) for pid, vec, p in checked]
            self._apply(engine, qe.UpdateOperation.upsert_points(batch), durable=durable)
            self._touch(tenant_id, [pid for pid, _, _ in checked])
            info = engine.info()
            return int(info.points_count), int(info.indexed_vectors_count)

        held, indexed = await self._run((tenant_id, _HOT), "upsert", write, create=True)
        if self._parts_count and held >= self._split_from:
            await self._spill(tenant_id)
        elif self._due((tenant_id, _HOT), held, indexed):
            self._start_build((tenant_id, _HOT))

    async def set_payload(self, tenant_id: str, point_id: str, payload: Mapping[str, Any]) -> None:
        pid = canonical_id(tenant_id, point_id)

        def write(engine: qe.EdgeShard) -> bool:
            if not engine.retrieve([pid], False, False):
                return False
            self._apply(engine, qe.UpdateOperation.set_payload([pid], dict(payload)))
            self._touch(tenant_id, [pid])
            self._count_moved(1)
            return True

        found = await self._on_each(tenant_id, f"set_payload of {pid}", lambda _: write, until=bool)
        if not any(found):
            # Checked here so that both adapters fail alike, with the same message.
            raise AdapterError(f"no point {pid} in the vector index of tenant {tenant_id!r}")

    async def set_payloads(
        self,
        tenant_id: str,
        updates: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        durable: bool = True,
    ) -> set[str]:
        if not updates:
            return set()
        # One payload a point (a later update of the same point merged over an earlier one, as
        # applying both in turn would leave it), then one engine operation per distinct payload:
        # a rescoring batch sets a few values on thousands of points.
        merged: dict[str, dict[str, Any]] = {}
        for pid, payload in updates:
            merged.setdefault(canonical_id(tenant_id, pid), {}).update(payload)
        missing = set(merged)

        def write(engine: qe.EdgeShard) -> bool:
            """In each shard in turn, the hot one first (one thread: ``_on_all``)."""
            if not missing:
                return False
            found = {str(r.id) for r in engine.retrieve(list(missing), False, False)}
            same: dict[str, tuple[dict[str, Any], list[Any]]] = {}
            for pid in found:
                payload = merged[pid]
                same.setdefault(repr(sorted(payload.items())), (payload, []))[1].append(pid)
            for payload, pids in same.values():
                engine.update(qe.UpdateOperation.set_payload(pids, payload))
            self._touch(tenant_id, found)
            self._count_moved(len(found))
            if found and self._flush_writes and durable:
                engine.flush()  # once for the whole batch
            missing.difference_update(found)
            return bool(found)

        what = f"set_payloads of {len(merged)}"
        for key, wrote in await self._on_all(tenant_id, what, write):
            if wrote and not durable and (shard := self._shards.get(key)) is not None:
                shard.unflushed = True  # for ``flush`` (one closed since was flushed by it)
        return set(missing)

    async def flush(self, tenant_id: str) -> None:
        """One flush for the writes made with ``durable=False`` (the indexer's: one per tenant
        and pass, where each write flushing cost 10-60 ms): the hot shard and the parts
        written to since their last flush."""
        if not self._flush_writes:
            return
        written = [
            key
            for key, shard in list(self._shards.items())
            if key[0] == tenant_id and key[1] != _HOT and shard.unflushed
        ]
        for key in written:
            self._shards[key].unflushed = False
        # The hot shard (every upsert's), and the parts whose payloads were set meanwhile.
        await self._on_all(tenant_id, "flush", _flush, [(tenant_id, _HOT), *written])

    async def search(
        self, tenant_id: str, vector: Sequence[float], flt: VectorFilter, limit: int
    ) -> list[VectorHit]:
        """The ``limit`` nearest points ``flt`` allows.

        Excluded statuses are dropped here, not by the engine: on a brute-force segment the
        engine checks a ``must_not`` on the keyword index for every point it scans (100,000
        points: 27 ms a search with it, 12 ms without, measured), while few points carry an
        excluded status. So the engine searches without it for ``limit`` + a slack, and the
        hits with an excluded status are dropped. Exact: the loose search returns a prefix of
        the loose order, in which the allowed points keep their order; if it kept ``limit`` of
        them they are the first ``limit``, and if it returned fewer than it was asked for it
        returned every point the loose filter allows. Otherwise (many excluded points nearest)
        the engine searches again with the exclusion."""
        query = checked_vector(tenant_id, "query", vector, self._dimension)
        if limit <= 0:
            return []
        if flt.exclude_statuses and not flt.ids:
            excluded = set(flt.exclude_statuses)
            wanted = limit + max(_EXCLUDED_SLACK, limit // 4)
            hits = await self._search(tenant_id, query, replace(flt, exclude_statuses=()), wanted)
            kept = [h for h in hits if h.payload.get("status") not in excluded]
            if len(kept) >= limit or len(hits) < wanted:
                return kept[:limit]
        return await self._search(tenant_id, query, flt, limit)

    async def _search(
        self, tenant_id: str, query: list[float], flt: VectorFilter, limit: int
    ) -> list[VectorHit]:
        """The hot shard's answer; with parts, the ``limit`` nearest over the hot shard and
        every part, exact.

        Each shard is first asked for a few (``_FIRST_ASK``: the nearest spread over the
        parts, one subject's points in one), without payloads and through a smaller graph walk
        (``_FIRST_EF_*``: the re-ask below relies on that answer); a shard that returned as many
        as it was asked with its last as near as the merged ``limit``-th may hold more of them,
        and is asked again for ``limit``. Then the payloads of the ``limit`` kept are read from
        the shards that returned them (an anchored search: one part, not 33; a point a spill
        moved between the reads is read where it is now).
        (33 shards' full answers made into Python objects cost more than their scans at 10^5:
        the engine returns every id as a ``uuid.UUID``.)"""
        keys = self._keys(tenant_id)
        filtered = to_edge_filter(flt)

        def nearest(count: int, payload: bool, ef: int = _HNSW_EF) -> Callable[[qe.EdgeShard], Any]:
            request = qe.QueryRequest(
                limit=count,
                query=qe.Query.Nearest(query),
                filter=filtered,
                with_payload=payload,
                with_vector=False,
                params=qe.SearchParams(hnsw_ef=max(ef, count), acorn=_ACORN),
            )
            return lambda engine: engine.query(request)

        if len(keys) == 1:
            return [
                VectorHit(id=str(p.id), score=float(p.score), payload=p.payload or {})
                for _, answer in await self._on_all(tenant_id, "search", nearest(limit, True), keys)
                for p in answer
            ]
        first = min(limit, max(_FIRST_ASK, -(-2 * limit // len(keys))))
        first_ef = min(_HNSW_EF, max(_FIRST_EF_MIN, _FIRST_EF_PER_HIT * first))
        answers = dict(
            await self._on_all(tenant_id, "search", nearest(first, False, first_ef), keys)
        )
        best = _merged(answers, limit)
        floor = best[-1][1] if len(best) == limit else float("-inf")
        again = [
            key
            for key, answer in answers.items()
            if first < limit and len(answer) == first and float(answer[-1].score) >= floor
        ]
        if again:
            answers.update(await self._on_all(tenant_id, "search", nearest(limit, False), again))
            best = _merged(answers, limit)
        if not best:
            return []
        ids = cast("Any", [pid for pid, _, _ in best])
        asked = sorted({key for _, _, key in best})  # the shards that returned them
        payloads = await self._payloads(tenant_id, ids, asked)
        if missing := [pid for pid in ids if pid not in payloads]:  # moved meanwhile (a spill)
            others = [key for key in self._keys(tenant_id) if key not in asked]
            payloads |= await self._payloads(tenant_id, missing, others)
        return [  # a point deleted between the two reads is left out
            VectorHit(id=pid, score=score, payload=payloads[pid])
            for pid, score, _ in best
            if pid in payloads
        ]

    async def _payloads(
        self, tenant_id: str, ids: list[Any], keys: Sequence[_Key]
    ) -> dict[str, dict[str, Any]]:
        """The payloads of those of ``ids`` that ``keys``' shards hold."""
        if not keys:
            return {}
        read = await self._on_all(tenant_id, "search", lambda e: e.retrieve(ids, True, False), keys)
        return {str(r.id): r.payload or {} for _, records in read for r in records}

    async def count(self, tenant_id: str) -> int:
        counts = await self._on_all(
            tenant_id, "count", lambda e: e.count(qe.CountRequest(exact=True))
        )
        return sum(count for _, count in counts)

    async def point_ids(self, tenant_id: str) -> set[str]:
        def scroll_all(engine: qe.EdgeShard) -> set[str]:
            ids: set[str] = set()
            offset: Any = None
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=_SCROLL_PAGE, with_payload=False, with_vector=False
                )
                records, offset = engine.scroll(request)
                ids.update(str(r.id) for r in records)
                if offset is None:
                    return ids

        return set().union(*await self._on_each(tenant_id, "point_ids", lambda _: scroll_all))

    async def optimize(self, tenant_id: str) -> bool:
        """Build HNSW / merge segments now (the engine never does it by itself).

        Not part of the port: a maintenance hook for a timer or ``ops``. Holds the shard's lock
        for the whole run (seconds for tens of thousands of points). True if anything changed.
        """
        return any(await self._on_each(tenant_id, "optimize", lambda _: _optimize))

    async def delete(self, tenant_id: str, point_ids: Sequence[str]) -> int:
        """Delete these points (erasure); returns how many existed. Unknown ids are ignored.

        The engine only marks them deleted: their vectors and payloads stay in the segment
        files and the WAL until :meth:`compact` rewrites what held them. In a tenant with
        parts, the shard that held one is listed for that rewrite before the delete
        (``qdrant_edge_parts``).
        """
        if not point_ids:
            return 0
        ids: list[Any] = [canonical_id(tenant_id, pid) for pid in point_ids]
        await self._cancel_build(tenant_id)  # its copy holds these points: it goes first
        parted = bool(self._parts(tenant_id))

        def deleter(key: _Key) -> Callable[[qe.EdgeShard], int]:
            def write(engine: qe.EdgeShard) -> int:
                found = [r.id for r in engine.retrieve(ids, False, False)]
                if found:
                    if parted:
                        self._mark_dirty(tenant_id, key[1])
                    self._apply(engine, qe.UpdateOperation.delete_points(found))
                    self._deleted[key] = self._deleted.get(key, 0) + len(found)
                return len(found)

            return write

        return sum(await self._on_each(tenant_id, f"delete of {len(ids)}", deleter))

    async def compact(self, tenant_id: str) -> None:
        """Rewrite what held a deleted point, so that no byte of it survives in the shard: the
        hot shard of a tenant without parts, else the shards a deletion listed (each taken off
        the list once rewritten).

        Only the segments that held a deleted point are rewritten, and the write-ahead log is
        rolled past the deletion: measured on qdrant-edge-py 0.9.0, a delete leaves the
        point's payload in its segment and in the WAL, and ``optimize`` with the engine's
        defaults vacuums nothing below 20 % deleted. The shard is reopened with
        ``_VACUUM_ONLY`` (vacuum any segment with a deleted point; no merge, no new index; a
        built segment's rewrite is indexed again from its old graph), optimised, then filler
        operations (``_roll_wal``) are appended until every WAL file that held data at the
        deletion has been removed. The cost is the size of the segments
        that held the points plus ≤ 2 WAL segments (64 MiB) — the whole shard (or part) when
        it is one segment, as a shard never optimised is (docs/erasure.md). Crash safety is the
        engine's (a segment is optimised beside the old one and swapped in); an interrupted run
        is finished by the next one. A shard of ``COMPACT_CHILD_FROM`` points or more is
        rewritten as a copy by a child process while it answers and takes writes, then swapped
        in (``_compact_on_copy``); a smaller one is closed throughout (its reads and writes
        wait; other shards' do not).
        """
        await self._cancel_build(tenant_id)
        if not self._parts(tenant_id):
            await self._compact_shard((tenant_id, _HOT))
            # From now on the engine's count of indexed points says when to build.
            self._built.pop((tenant_id, _HOT), None)
            return
        path = self.shard_dir(tenant_id)
        for part in sorted(await asyncio.to_thread(self._dirty, path)):
            await self._compact_shard((tenant_id, part))
            self._built.pop((tenant_id, part), None)  # as above
            with self._dirty_lock:
                set_dirty_parts(path, self._dirty(path) - {part})

    async def _compact_shard(self, key: _Key) -> None:
        """Rewrite the shard at ``key``: one of ``compact_child_from`` points or more on a copy
        while it keeps answering (``_compact_on_copy``), a smaller one in place (closed
        meanwhile: calls for it wait for the end, ``_shard``; the registry is not held, so
        other tenants' shards open)."""
        try:
            points = await self._run(key, "count", _points, create=False)
        except _UnknownTenantError:
            return
        if points >= self._compact_child_from:
            await self._compact_on_copy(key)
            return
        done = asyncio.Event()
        async with self._registry_lock:
            shard = self._shards.pop(key, None)
            self._maps = None
            if shard is None:
                try:
                    shard = _Shard(await asyncio.to_thread(self._open, key, False), key)
                except _UnknownTenantError:
                    return
            self._compacting[key] = done
        try:
            async with shard.lock:
                shard.closed = True
                await asyncio.to_thread(self._vacuum, key, shard)
        finally:
            del self._compacting[key]
            done.set()

    async def _compact_on_copy(self, key: _Key) -> None:
        """An erasure's rewrite of a large shard the way an index build goes
        (``qdrant_edge_build``): under the shard's lock it is flushed and copied (the deleted
        points are marked deleted in both), a child vacuums the copy (``vacuum_shard``: a built
        segment keeps its index) while the live shard answers and takes writes, what was
        written meanwhile is brought over, and the copy takes the live one's place; the old
        files, which still held the deleted points, are removed. Raises if it did not finish
        (the erasure stays pending; the next compaction does it again). Not queued behind the
        builds of other shards: an erasure has a deadline."""
        await self._cancel_build(key[0])
        build = self._builds[key] = _Build(compact=0)
        build.task = asyncio.get_running_loop().create_task(self._build(key, build))
        if not await asyncio.shield(build.task):
            raise AdapterError(
                f"Qdrant Edge compaction of {_named(key)} of tenant {key[0]!r} did not finish"
                + (f": {build.error}" if build.error else " (given up)")
            )

    def _vacuum(self, key: _Key, shard: _Shard) -> None:
        tenant_id, path = key[0], self._path(key)
        with shard.thread_lock:
            try:
                deleted = self._deleted.get(key, 0)
                unindexed = _unindexed(shard.engine.info(), deleted, self._moved.get(key, 0))
                shard.engine.flush()
                shard.engine.close()
                vacuum_shard(path, self._dimension, unindexed)
                self._moved.pop(key, None)  # the rewrite dropped their old copies: counted
                if self._deleted.get(key) == deleted:
                    self._deleted.pop(key)
            except Exception as exc:
                raise AdapterError(
                    f"Qdrant Edge compaction failed for tenant {tenant_id!r}: {exc}"
                ) from exc

    async def drop_tenant(self, tenant_id: str) -> None:
        path = self.shard_dir(tenant_id)
        await self._cancel_build(tenant_id)
        async with self._registry_lock:
            for key in [k for k in list(self._shards) if k[0] == tenant_id]:
                shard = self._shards.pop(key)
                self._maps = None
                async with shard.lock:
                    shard.closed = True
                    await asyncio.to_thread(_close_engine, tenant_id, shard)
            self._split.pop(tenant_id, None)
            for counts in (self._built, self._deleted, self._moved):  # a new store starts afresh
                for key in [k for k in counts if k[0] == tenant_id]:
                    del counts[key]
            await asyncio.to_thread(_remove_dir, tenant_id, path)

    async def close(self) -> None:
        """Flush and close every open shard (a build in progress is given up: its copy is
        removed); a later call reopens them lazily."""
        for tenant_id in {key[0] for key in [*self._builds, *self._waiting]}:
            await self._cancel_build(tenant_id)
        failures: list[AdapterError] = []
        async with self._registry_lock:
            shards = list(self._shards.items())
            self._shards.clear()
            self._maps = 0
            for key, shard in shards:
                async with shard.lock:
                    shard.closed = True
                    try:
                        await asyncio.to_thread(_close_engine, key[0], shard)
                    except AdapterError as exc:
                        failures.append(exc)
        if failures:
            raise failures[0]

    # -- parts -----------------------------------------------------------------------------

    def _path(self, key: _Key) -> Path:
        tenant_id, part = key
        path = self.shard_dir(tenant_id)
        return path if part == _HOT else part_dir(path, part)

    def _parts(self, tenant_id: str) -> int:
        """The tenant's parts (0: none yet). A spill a crash interrupted is finished here, the
        first time this process touches the tenant (and only if no other process holds it)."""
        known = self._split.get(tenant_id)
        if known:
            return known
        path = self.shard_dir(tenant_id)
        try:
            parts = stored_parts(path)
            if parts and spill_pending(path) and not self._held(tenant_id, parts):
                log.warning("finishing the spill a stop interrupted (tenant %r)", tenant_id)
                try:
                    self._spill_now(tenant_id, None)
                except AdapterError as exc:  # served as it is (a point in two shards is
                    log.error("%s", exc)  # answered once); the next spill tries again
        except (OSError, ValueError) as exc:
            raise AdapterError(f"the vector store of tenant {tenant_id!r}: {exc}") from exc
        if parts:
            self._split[tenant_id] = parts
        return parts

    def _held(self, tenant_id: str, parts: int) -> bool:
        """Whether a shard of the tenant is open, here or in another process."""
        keys = [(tenant_id, _HOT)] + [(tenant_id, part) for part in range(parts)]
        return any(key in self._shards or _held_elsewhere(self._path(key)) for key in keys)

    def _keys(self, tenant_id: str) -> list[_Key]:
        """The tenant's shards: the hot one first, then the parts written so far (a point a
        spill moves meanwhile moves from the first to a later one: see ``_on_each``). A part
        being built is one (its directory is renamed during the swap)."""
        parts = self._parts(tenant_id)
        path = self.shard_dir(tenant_id)
        return [(tenant_id, _HOT)] + [
            key
            for part in range(parts)
            if (key := (tenant_id, part)) in self._shards
            or key in self._builds
            or (part_dir(path, part) / _CONFIG_FILE).exists()
        ]

    async def _on_each(
        self,
        tenant_id: str,
        what: str,
        fn_for: Callable[[_Key], Callable[[qe.EdgeShard], T]],
        *,
        until: Callable[[T], bool] | None = None,
    ) -> list[T]:
        """``fn_for(key)(engine)`` on each of the tenant's shards in turn, the hot one first,
        until ``until`` holds of an answer; a tenant with none answers []. A spill between two
        of them moves points from the hot shard to a part asked later: none is missed."""
        answers: list[T] = []
        for key in self._keys(tenant_id):
            for _, answer in await self._ask(key, what, fn_for(key)):
                answers.append(answer)
                if until is not None and until(answer):
                    return answers
        return answers

    async def _on_all(
        self,
        tenant_id: str,
        what: str,
        fn: Callable[[qe.EdgeShard], T],
        keys: Sequence[_Key] | None = None,
    ) -> list[tuple[_Key, T]]:
        """``fn`` on every shard of the tenant (or ``keys``), in one worker thread: a call to a
        part costs the engine 0.15-0.8 ms, a thread hand-off and its locks as much again
        (measured: 32 parts of 3,000 points, one thread each, 18 ms a search). The shards are
        looked up (opened) first, then locked in key order (the only holder of several locks,
        holding the registry's none meanwhile); if one was closed meanwhile (evicted,
        spilled), each is asked in turn instead. Shards that do not exist answer nothing."""
        wanted = self._keys(tenant_id) if keys is None else list(keys)
        if len(wanted) == 1:
            return await self._ask(wanted[0], what, fn)
        shards: list[tuple[_Key, _Shard]] = []
        for key in wanted:
            with contextlib.suppress(_UnknownTenantError):
                shards.append((key, await self._shard(key, create=False)))
        try:
            async with contextlib.AsyncExitStack() as held:
                for _, shard in sorted(shards, key=lambda pair: pair[0]):
                    await held.enter_async_context(shard.lock)
                if not any(shard.closed for _, shard in shards):
                    return await asyncio.to_thread(_call_each, tenant_id, what, shards, fn)
        finally:
            if self._over(room=0):
                await self._trim()
        answers: list[tuple[_Key, T]] = []
        for key in self._keys(tenant_id) if keys is None else wanted:
            answers += await self._ask(key, what, fn)
        return answers

    async def _ask(
        self, key: _Key, what: str, fn: Callable[[qe.EdgeShard], T]
    ) -> list[tuple[_Key, T]]:
        try:
            return [(key, await self._run(key, what, fn, create=False))]
        except _UnknownTenantError:
            return []

    def _dirty(self, path: Path) -> set[int]:
        try:
            return dirty_parts(path)
        except ValueError as exc:
            raise AdapterError(str(exc)) from exc

    def _mark_dirty(self, tenant_id: str, part: int) -> None:
        """List ``part`` for the erasure's rewrite, durably, before a point of it is deleted."""
        path = self.shard_dir(tenant_id)
        with self._dirty_lock:
            listed = self._dirty(path)
            if part not in listed:
                set_dirty_parts(path, listed | {part})

    async def _spill(self, tenant_id: str) -> None:
        """Move the hot shard's points to the parts of their subjects, then empty it
        (``qdrant_edge_parts``). The registry is held throughout (no shard opens meanwhile:
        ~1 s for 20,000 points) and every open shard of the tenant is locked; the hot one is
        closed, the parts stay open and are written through their open engines, and the parts
        it opens stay open (registered): closing and loading them again cost 13 % of the
        writes at 2 x 10^5 memories. A failure is logged; the hot shard keeps its points and
        the next write tries again."""
        while waiting := [e for k, e in self._compacting.items() if k[0] == tenant_id]:
            await asyncio.gather(*(e.wait() for e in waiting))  # an erasure's rewrite first
        async with self._registry_lock:
            if any(key[0] == tenant_id for key in self._compacting):
                return  # one began meanwhile: the next write spills
            counts: dict[int, tuple[int, int]] = {}
            async with contextlib.AsyncExitStack() as held:
                shards = sorted((k, s) for k, s in self._shards.items() if k[0] == tenant_id)
                for _, shard in shards:
                    await held.enter_async_context(shard.lock)
                hot = self._shards.pop((tenant_id, _HOT), None)
                if hot is not None:
                    self._maps = None
                    hot.closed = True  # the spill closes it
                parts = {key[1]: shard for key, shard in shards if key[1] != _HOT}
                try:
                    self._split[tenant_id] = await asyncio.to_thread(
                        self._spill_held, tenant_id, hot, parts, counts
                    )
                except AdapterError as exc:
                    log.warning("%s", exc)
        for part, (points, indexed) in counts.items():  # the parts it wrote, built once due
            if self._due((tenant_id, part), points, indexed):
                self._start_build((tenant_id, part))
        if self._over(room=0):
            await self._trim()

    def _spill_held(
        self,
        tenant_id: str,
        hot: _Shard | None,
        parts: Mapping[int, _Shard],
        counts: dict[int, tuple[int, int]],
    ) -> int:
        """``_spill_now`` with the open engines, once no thread of a cancelled call still uses
        them; the parts it opened are registered (from this thread: a cancelled caller must
        not leak an open engine)."""
        with contextlib.ExitStack() as held:
            for shard in [*([hot] if hot is not None else []), *parts.values()]:
                held.enter_context(shard.thread_lock)
            open_parts = {part: shard.engine for part, shard in parts.items()}
            opened: dict[int, qe.EdgeShard] = {}
            count = self._spill_now(
                tenant_id, None if hot is None else hot.engine, counts, open_parts, opened
            )
            for shard in parts.values():  # payload indexes the spill may have made
                shard.indexes = len(shard.engine.info().payload_schema)
            for part, engine in opened.items():
                key = (tenant_id, part)
                self._shards[key] = _Shard(engine, key, indexes=len(engine.info().payload_schema))
            self._maps = None
            return count

    def _spill_now(
        self,
        tenant_id: str,
        hot: qe.EdgeShard | None,
        counts: dict[int, tuple[int, int]] | None = None,
        open_parts: Mapping[int, qe.EdgeShard] | None = None,
        opened: dict[int, qe.EdgeShard] | None = None,
    ) -> int:
        """The move, through ``open_parts``' engines where a part is open; ``counts`` gets
        each written part's points and indexed points. The parts it opens are closed, or
        handed over in ``opened`` (all closed if it fails)."""
        path = self.shard_dir(tenant_id)
        engines: dict[int, qe.EdgeShard] = dict(open_parts or {})
        mine: dict[int, qe.EdgeShard] = {}  # opened here
        written: set[int] = set()
        try:
            if not stored_parts(path):
                discard_unfinished_split(path)
                new_parts_dir(path).mkdir(parents=True)
                write_manifest(new_parts_dir(path), self._parts_count)
                commit_split(path)
            parts = stored_parts(path)
            mark_spill(path)
            if hot is None and (path / _CONFIG_FILE).exists():
                hot = qe.EdgeShard.load(str(path), self._edge_config(_stored_datatype(path)))
            offset: Any = None
            while hot is not None:
                request = qe.ScrollRequest(
                    offset=offset, limit=_SCROLL_PAGE, with_payload=True, with_vector=True
                )
                records, offset = hot.scroll(request)
                batches: dict[int, list[qe.Point]] = {}
                for r in records:
                    if r.vector is None:
                        raise AdapterError(f"point {r.id} came back without its vector")
                    payload = r.payload or {}
                    part = part_of(payload, str(r.id), parts)
                    batches.setdefault(part, []).append(qe.Point(r.id, r.vector, payload))
                for part, batch in batches.items():
                    if part not in engines:
                        engines[part] = mine[part] = self._open((tenant_id, part), create=True)
                    engines[part].update(qe.UpdateOperation.upsert_points(batch))
                    self._touch(tenant_id, [p.id for p in batch], (tenant_id, part))
                    written.add(part)
                if offset is None:
                    break
            for part in sorted(written):
                engine = engines[part]
                info = engine.info()
                if info.points_count >= self._index_from:
                    self._create_indexes(engine)
                engine.flush()
                if counts is not None:
                    counts[part] = (int(info.points_count), int(info.indexed_vectors_count))
            if opened is None:
                while mine:
                    mine.popitem()[1].close()
            if hot is not None:
                hot.close()
                hot = None
            sync_dirs(parts_dir(path))  # the parts' new entries, before the only other copy goes
            remove(hot_files(path))  # its points are all in the parts now
            clear_spill(path)
        except Exception as exc:
            for engine in [*mine.values(), *([hot] if hot is not None else [])]:
                with contextlib.suppress(Exception):
                    engine.close()
            raise AdapterError(
                f"moving the vector points of tenant {tenant_id!r} to its parts failed (they "
                f"stay where they were; the next write or open tries again): {exc}"
            ) from exc
        if opened is not None:
            opened.update(mine)
        log.info("moved the hot vector shard of tenant %r to its %d parts", tenant_id, parts)
        return parts

    # -- index builds (``qdrant_edge_build``) ------------------------------------------------

    def _touch(self, tenant_id: str, ids: Iterable[Any], key: _Key | None = None) -> None:
        """Record points written while their shard is being built: ``key``'s, by default the
        shard this thread is calling (``_call``). Where that is unknown, every build of the
        tenant records them (a point its shard never held is then deleted from its copy, which
        holds none: harmless)."""
        key = key or getattr(_working, "key", None)
        builds = [
            build
            for at, build in list(self._builds.items())
            if at[0] == tenant_id and (key is None or at == key)
        ]
        if builds:
            written = [str(pid) for pid in ids]
            for build in builds:
                build.add(written)

    def _count_moved(self, points: int) -> None:
        """``points`` payload writes to the shard this thread is calling (``_call``)."""
        key = getattr(_working, "key", None)
        if key is not None and points:
            self._moved[key] = self._moved.get(key, 0) + points

    def _due(self, key: _Key, points: int, indexed: int) -> bool:
        """Whether the shard is to be built now: a tenant's one shard from ``build_from``
        unindexed points, a part from ``PART_BUILD_FROM``; a hot shard of a store in parts
        never (a move empties it: it would race the swap)."""
        tenant_id, part = key
        # Points a payload write moved out of the index count as unindexed (an upper bound: a
        # write to a point already outside it, or twice to one, counts too).
        since = max(indexed, self._built.get(key, 0)) - min(self._moved.get(key, 0), indexed)
        if part != _HOT:
            return needs_build(points, since, self._part_build_from, PART_BUILD_SHARE)
        return (
            needs_build(points, since, self._build_from)
            and not self._parts_count
            and not self._parts(tenant_id)
        )

    def _start_build(self, key: _Key) -> None:
        if key in self._builds:
            return
        if self._builds:
            self._waiting[key] = None
            return
        self._waiting.pop(key, None)
        build = self._builds[key] = _Build()
        build.task = asyncio.get_running_loop().create_task(self._build(key, build))

    async def _cancel_build(self, tenant_id: str) -> None:
        """Give up the tenant's builds in progress (or waiting), their copies removed, before
        this returns."""
        for key in [key for key in self._waiting if key[0] == tenant_id]:
            del self._waiting[key]
        builds = [build for key, build in self._builds.items() if key[0] == tenant_id]
        for build in builds:
            build.cancelled = True
            if build.child is not None and build.child.poll() is None:
                build.child.kill()
        for build in builds:
            if build.task is not None:
                await asyncio.shield(build.task)

    async def builds_done(self, timeout_s: float) -> bool:
        """Wait until no shard is being built (or ``timeout_s`` passed); True if none is."""
        deadline = time.monotonic() + timeout_s
        while (tasks := [b.task for b in self._builds.values() if b.task is not None]) and (
            left := deadline - time.monotonic()
        ) > 0:
            await asyncio.wait(tasks, timeout=left)
        return not self._builds

    async def _build(self, key: _Key, build: _Build) -> bool:
        """Copy the shard, index the copy in a child process (or vacuum it: ``build.compact``),
        bring over what was written meanwhile, swap it in; True once swapped. Any failure
        leaves the live shard as it was."""
        tenant_id, path = key[0], self._path(key)
        what = "index build" if build.compact is None else "compaction"
        swapped, phases = False, {"copy_s": 0.0, "child_s": 0.0, "catch_up_s": 0.0, "swap_s": 0.0}
        built: qe.EdgeShard | None = None
        clock = time.monotonic()
        deleted, moved = self._deleted.get(key, 0), 0

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.monotonic()
            phases[phase], clock = now - clock, now

        def copy(engine: qe.EdgeShard) -> None:
            nonlocal moved
            engine.flush()
            build.take()  # what is written from now on is not in the copy
            copy_for_build(path)
            info = engine.info()
            moved = self._moved.pop(key, 0)  # the copy is built (or vacuumed) whole
            if build.compact is not None:  # as ``_vacuum`` counts them
                build.compact = _unindexed(info, deleted, moved)
            else:  # not again before as many more are written (if none of them is indexed)
                self._built[key] = int(info.points_count)

        try:
            await self._run(key, f"copy for the {what}", copy, create=False)
            lap("copy_s")
            if not build.cancelled:
                build.child = start_child(build_dir(path), self._dimension, build.compact)
                _, err = await asyncio.to_thread(build.child.communicate)
                lap("child_s")
                if build.child.returncode and not build.cancelled:
                    raise AdapterError(
                        f"the {what} exited with {build.child.returncode}: "
                        f"{err.decode(errors='replace').strip()[-500:]}"
                    )
            if not build.cancelled:
                loading = time.monotonic()
                built = await asyncio.to_thread(load_shard, build_dir(path), self._dimension)
                _slow(f"load of the {what}'s copy of {_named(key)} of {tenant_id!r}", loading)
                for _ in range(_CATCH_UP_ROUNDS):  # the lock held only to read each round
                    if len(build.touched) <= _CATCH_UP_LAST or build.cancelled:
                        break
                    taken = await self._run(key, f"{what} catch-up", _taker(build), create=False)
                    await asyncio.to_thread(_copy_over, built, *taken)
                lap("catch_up_s")
                swapped = await self._swap_built(key, build, built)
                built = None  # closed by the swap
                lap("swap_s")
        except Exception as exc:  # the live shard stands; a later write (or erasure) tries again
            build.error = str(exc)
            log.warning("the %s of %s of tenant %r failed: %s", what, _named(key), tenant_id, exc)
        finally:
            if built is not None:
                with contextlib.suppress(Exception):
                    built.close()
            if not swapped:
                self._moved[key] = self._moved.get(key, 0) + moved  # still moved in the live one
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(discard_build, path)
            if self._builds.get(key) is build:
                del self._builds[key]
            if self._waiting and not self._builds:  # the next shard found due meanwhile
                self._start_build(next(iter(self._waiting)))
        if swapped and build.compact is not None:
            if self._deleted.get(key) == deleted:
                self._deleted.pop(key)
            log.info("compacted %s of tenant %r: %s", _named(key), tenant_id, phases)
        elif swapped:
            self.builds_finished += 1
            self.last_build = {"points": self._built.get(key, 0), **phases}
            log.info("indexed %s of tenant %r: %s", _named(key), tenant_id, self.last_build)
        return swapped

    async def _swap_built(self, key: _Key, build: _Build, built: qe.EdgeShard) -> bool:
        """Under the registry's lock and the live shard's: the last points written, then the
        built shard in the live one's place (``swap_in``); the next call opens it."""
        async with self._registry_lock:
            if build.cancelled:
                built.close()
                return False
            shard = self._shards.pop(key, None)
            self._maps = None
            if shard is None:
                shard = _Shard(await asyncio.to_thread(self._open, key, False), key)
            async with shard.lock:
                shard.closed = True
                await asyncio.to_thread(self._swap_now, key, shard, build, built)
        return True

    def _swap_now(self, key: _Key, shard: _Shard, build: _Build, built: qe.EdgeShard) -> None:
        started = time.monotonic()
        with shard.thread_lock:
            try:
                _copy_over(built, *_taker(build)(shard.engine))
                built.flush()
            finally:
                built.close()
                shard.engine.flush()
                shard.engine.close()
            swap_in(self._path(key))
        _slow(f"swap of {_named(key)} of tenant {key[0]!r}", started)

    # -- internals -------------------------------------------------------------------------

    def _apply(
        self, engine: qe.EdgeShard, operation: qe.UpdateOperation, *, durable: bool = True
    ) -> None:
        engine.update(operation)
        if self._flush_writes and durable:
            engine.flush()

    async def _run(
        self, key: _Key, what: str, fn: Callable[[qe.EdgeShard], T], *, create: bool
    ) -> T:
        """``fn(engine)`` in a worker thread under the shard's lock, errors translated. A call
        that ends with more shards open than the limit (opened while the others were busy)
        closes the idle ones beyond it, so the limit holds again once the calls are done."""
        try:
            while True:
                shard = await self._shard(key, create=create)
                async with shard.lock:
                    if shard.closed:  # dropped or closed while we waited: look it up again
                        continue
                    indexes = shard.indexes
                    try:
                        return await asyncio.to_thread(
                            self._call_and_index, key[0], what, shard, fn
                        )
                    finally:
                        if shard.indexes != indexes:
                            self._maps = None
        finally:
            if self._over(room=0):
                await self._trim()

    def _call_and_index(
        self, tenant_id: str, what: str, shard: _Shard, fn: Callable[[qe.EdgeShard], T]
    ) -> T:
        """``fn(engine)``; then a shard without payload indexes that now holds ``index_from``
        points gets them (once: they are stored with the shard)."""

        def then_index(engine: qe.EdgeShard) -> T:
            result = fn(engine)
            if not shard.indexes and engine.info().points_count >= self._index_from:
                try:
                    self._create_indexes(engine)
                except Exception as exc:
                    raise AdapterError(
                        f"creating the payload indexes of tenant {tenant_id!r} failed "
                        f"(after its {what}, which stands): {exc}"
                    ) from exc
                shard.indexes = len(PAYLOAD_INDEXES)
            return result

        return _call(tenant_id, what, shard, then_index)

    def _over(self, room: int) -> bool:
        """Whether ``room`` more shards would exceed the open-shard limit or the memory maps
        the process has room for. A shard about to open is counted as a small one: reserving
        an indexed one's maps would close six small shards (2-3 ms each) per reopen once the
        maps are the limit. One that opens indexed is trimmed back to the room when its call
        ends (``_run``)."""
        if len(self._shards) + room > self._max_open:
            return True
        return self.open_maps + room * shard_maps(0) > self._map_room

    async def _trim(self) -> None:
        """Close idle shards beyond the limit; a shard that fails to close is left to the next
        trim (this call's own result stands: the failure is another tenant's shard's)."""
        try:
            async with self._registry_lock:
                await self._evict_idle(room=0)
        except AdapterError as exc:
            log.warning("closing idle vector shards beyond the limit failed: %s", exc)

    @property
    def max_open(self) -> int:
        return self._max_open

    @property
    def open_shards(self) -> int:
        return len(self._shards)

    @property
    def open_maps(self) -> int:
        """The memory maps the open shards are counted for (``shard_budget.shard_maps``)."""
        maps = self._maps
        if maps is None:
            # A copy first: a shard may be registered from a worker thread meanwhile.
            shards = list(self._shards.values())
            maps = self._maps = sum(shard_maps(s.indexes) for s in shards)
        return maps

    async def _shard(self, key: _Key, *, create: bool) -> _Shard:
        while True:
            if (compacting := self._compacting.get(key)) is not None:
                await compacting.wait()  # rewritten by an erasure: opened again after it
                continue
            shard = self._shards.get(key)
            if shard is not None:
                self._shards.move_to_end(key)
                return shard
            async with self._registry_lock:
                if key in self._compacting:
                    continue
                shard = self._shards.get(key)
                if shard is None:
                    await self._evict_idle()
                    shard = await asyncio.to_thread(self._open_and_register, key, create)
                return shard

    async def _evict_idle(self, room: int = 1) -> None:
        """Close least recently used shards no call is using until ``room`` more may open
        (called under the registry lock). A caller that fetched an evicted shard finds it closed
        and opens it again (``_run``); if every open shard is busy, the limit waits for none
        (the last call to end closes what is beyond it)."""
        for key in list(self._shards):
            if not self._over(room):
                return
            shard = self._shards[key]
            if shard.lock.locked():
                continue
            async with shard.lock:
                shard.closed = True
                del self._shards[key]
                if self._maps is not None:
                    self._maps -= shard_maps(shard.indexes)
                await asyncio.to_thread(_close_engine, key[0], shard)

    def _open_and_register(self, key: _Key, create: bool) -> _Shard:
        # Registered from the thread: a caller cancelled meanwhile must not leak an open
        # engine, whose WAL lock would then refuse every later open of this shard.
        started = time.monotonic()
        engine = self._open(key, create)
        _slow(f"open of {_named(key)} of tenant {key[0]!r}", started)
        shard = _Shard(engine, key, indexes=len(engine.info().payload_schema))
        self._shards[key] = shard
        self._maps = None
        return shard

    def _open(self, key: _Key, create: bool) -> qe.EdgeShard:
        tenant_id, part = key
        path = self._path(key)
        if _held_elsewhere(path):
            raise AdapterError(
                f"the Qdrant Edge shard of tenant {tenant_id!r} at {path} is open in another "
                "process (a running worker): not opened here"
            )
        recover_swap(path)  # an index build's swap (or an old compaction's) a crash interrupted
        if key not in self._builds:
            discard_build(path)  # the copy of a build a stop interrupted
        if part == _HOT:
            discard_unfinished_split(path)  # a first spill a crash interrupted
        exists = (path / _CONFIG_FILE).exists()
        if not exists and not create:
            raise _UnknownTenantError(f"tenant {tenant_id!r} has no vector shard at {path}")
        engine: qe.EdgeShard | None = None
        try:
            if exists:
                # Passing the config checks that the stored dimension and distance still match.
                engine = qe.EdgeShard.load(str(path), self._edge_config(_stored_datatype(path)))
            else:
                path.mkdir(parents=True, exist_ok=True)
                engine = qe.EdgeShard.create(str(path), self._edge_config(NEW_SHARD_DATATYPE))
            info = engine.info()
            if info.payload_schema or info.points_count >= self._index_from:
                self._create_indexes(engine)
        except Exception as exc:
            if engine is not None:
                engine.close()
            raise AdapterError(
                f"cannot open the Qdrant Edge shard of tenant {tenant_id!r} at {path}: {exc}"
            ) from exc
        return engine

    def _edge_config(
        self,
        datatype: qe.VectorStorageDatatype,
        optimizers: qe.EdgeOptimizersConfig = _EVERYDAY,
    ) -> qe.EdgeConfig:
        return edge_config(self._dimension, datatype, optimizers)

    def _create_indexes(self, engine: qe.EdgeShard) -> None:
        """The payload indexes the shard lacks (or holds with another type), flushed."""
        present = engine.info().payload_schema
        missing = [
            (name, schema)
            for name, schema in PAYLOAD_INDEXES
            if (info := present.get(name)) is None or info.data_type != schema
        ]
        for name, schema in missing:
            engine.update(qe.UpdateOperation.create_field_index(name, schema))
        if missing:
            engine.flush()


def edge_config(
    dimension: int,
    datatype: qe.VectorStorageDatatype,
    optimizers: qe.EdgeOptimizersConfig = _EVERYDAY,
) -> qe.EdgeConfig:
    vectors = qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine, datatype=datatype)
    return qe.EdgeConfig(
        vectors=vectors,
        hnsw_config=_HNSW,
        optimizers=optimizers,
        max_search_threads=_SEARCH_THREADS,
    )


def vacuum_optimizers(
    dimension: int, datatype: qe.VectorStorageDatatype, unindexed: int | None
) -> qe.EdgeOptimizersConfig:
    """An erasure's optimiser settings (``_VACUUM_ONLY``): with ``unindexed``, the number of
    the shard's points outside any HNSW index, a vacuumed segment larger than all of them
    together (so one the engine had indexed) is indexed again from its old graph; with
    ``None``, nothing is."""
    if unindexed is None:
        return _VACUUM_ONLY
    plain_kb = max(0, unindexed) * dimension * _DIMENSION_BYTES.get(datatype, 4) // 1024
    return _vacuum_only(indexing_threshold=plain_kb + plain_kb // 10 + 1)


def vacuum_shard(path: Path, dimension: int, unindexed: int | None = None) -> None:
    """An erasure's rewrite of the closed shard at ``path`` (``QdrantEdgeIndex.compact``):
    vacuum every segment that holds a deleted point (a built one keeps its index when
    ``unindexed`` says how many points are outside it: ``vacuum_optimizers``), roll the WAL
    past them, and persist the everyday optimiser settings again. Run in the worker for a small
    shard, else by the compaction child (``qdrant_edge_child --compact``)."""
    datatype = _stored_datatype(path)
    optimizers = vacuum_optimizers(dimension, datatype, unindexed)
    engine = qe.EdgeShard.load(str(path), edge_config(dimension, datatype, optimizers))
    try:
        engine.optimize()
        engine.flush()
        _roll_wal(engine, path / "wal")
    finally:
        engine.close()
    # Back to the everyday optimiser settings (a load with a config persists it).
    qe.EdgeShard.load(str(path), edge_config(dimension, datatype)).close()


def load_shard(
    path: Path, dimension: int, optimizers: qe.EdgeOptimizersConfig = _EVERYDAY
) -> qe.EdgeShard:
    """The shard at ``path`` as a worker opens it (the index build's child loads its copy so,
    with ``BUILDING``)."""
    return qe.EdgeShard.load(str(path), edge_config(dimension, _stored_datatype(path), optimizers))


def _points(engine: qe.EdgeShard) -> int:
    return int(engine.info().points_count)


def _unindexed(info: Any, deleted: int, moved: int = 0) -> int:
    """The points (deleted ones included) in the shard's unindexed segments as the engine's
    counts show them, given ``deleted`` deleted and ``moved`` payload writes (``_moved``) since
    its last compaction or build: a built point a payload write moved to the appendable
    segment is still counted indexed. A deletion by an earlier process is not counted, and a
    plain segment holding such points may then be indexed in the rewrite (slower, never less
    erased)."""
    indexed = int(info.indexed_vectors_count)
    return int(info.points_count) - indexed + deleted + min(moved, indexed)


def _flush(engine: qe.EdgeShard) -> None:
    engine.flush()


def _optimize(engine: qe.EdgeShard) -> bool:
    return bool(engine.optimize())


def _call_each(
    tenant_id: str,
    what: str,
    shards: Sequence[tuple[_Key, _Shard]],
    fn: Callable[[qe.EdgeShard], T],
) -> list[tuple[_Key, T]]:
    return [(key, _call(tenant_id, what, shard, fn)) for key, shard in shards]


def _named(key: _Key) -> str:
    return "the vector shard" if key[1] == _HOT else f"vector part {key[1]}"


def _taker(build: _Build) -> Callable[[qe.EdgeShard], tuple[list[str], list[Any]]]:
    """Under the live shard's thread lock: the ids written since the last take, and their
    records (vector and payload) as the live shard has them now."""

    def take(engine: qe.EdgeShard) -> tuple[list[str], list[Any]]:
        ids = build.take()
        records: list[Any] = []
        for start in range(0, len(ids), _SCROLL_PAGE):
            records += engine.retrieve(cast("Any", ids[start : start + _SCROLL_PAGE]), True, True)
        return ids, records

    return take


def _copy_over(built: qe.EdgeShard, ids: Sequence[str], records: Sequence[Any]) -> None:
    """Write the live shard's records to the built one; an id it no longer has is deleted."""
    for start in range(0, len(records), _SCROLL_PAGE):
        batch = [
            qe.Point(r.id, r.vector, r.payload or {}) for r in records[start : start + _SCROLL_PAGE]
        ]
        built.update(qe.UpdateOperation.upsert_points(batch))
    gone = set(ids) - {str(r.id) for r in records}
    if gone:
        built.update(qe.UpdateOperation.delete_points(cast("Any", sorted(gone))))


def _merged(answers: Mapping[_Key, Sequence[Any]], limit: int) -> list[tuple[str, float, _Key]]:
    """The ``limit`` nearest (id, score, the shard that returned it) of the shards' answers,
    nearest first; a point a spill was moving may be in two shards: once here."""
    best: dict[str, tuple[float, _Key]] = {}
    for key, answer in answers.items():
        for p in answer:
            pid, score = str(p.id), float(p.score)
            if pid not in best or score > best[pid][0]:
                best[pid] = (score, key)
    ranked = sorted(best.items(), key=lambda item: -item[1][0])[:limit]
    return [(pid, score, key) for pid, (score, key) in ranked]


def _call(tenant_id: str, what: str, shard: _Shard, fn: Callable[[qe.EdgeShard], T]) -> T:
    with shard.thread_lock:
        _working.key = shard.key
        started = time.monotonic()
        try:
            return fn(shard.engine)
        except AdapterError:
            raise
        except Exception as exc:
            raise AdapterError(
                f"Qdrant Edge {what} failed for tenant {tenant_id!r}: {exc}"
            ) from exc
        finally:
            _working.key = None
            _slow(f"{what} of {_named(shard.key)} of tenant {tenant_id!r}", started)


def _slow(what: str, started: float) -> None:
    """A warning for a call into the engine that took ``_SLOW_CALL_S`` or more: the engine
    holds the GIL through some of them, and the worker answers no one meanwhile."""
    if (took := time.monotonic() - started) >= _SLOW_CALL_S:
        log.warning("Qdrant Edge %s took %.1f s", what, took)


def _close_engine(tenant_id: str, shard: _Shard) -> None:
    with shard.thread_lock:
        try:
            shard.engine.flush()
            shard.engine.close()
        except Exception as exc:
            raise AdapterError(
                f"cannot close the Qdrant Edge shard of tenant {tenant_id!r}"
            ) from exc


def _stored_datatype(path: Path) -> qe.VectorStorageDatatype:
    """How the shard at ``path`` stores its vectors (float32 for a config that names none, as
    the engine's default is); an unreadable config is left to the engine's load to report."""
    try:
        stored = json.loads((path / _CONFIG_FILE).read_text())
        name = stored["vectors"][""].get("datatype") or "float32"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return NEW_SHARD_DATATYPE
    datatype = _DATATYPES.get(str(name).lower())
    if datatype is None:
        raise AdapterError(f"the shard at {path} stores vectors as {name!r}, unknown here")
    return datatype


def _held_elsewhere(path: Path) -> bool:
    """Whether another process holds the shard (the engine flocks its ``wal`` directory).

    Checked before every load because a load that then fails on the WAL lock has already
    touched the segment files: measured on qdrant-edge-py 0.9.0, the holder's next flush failed
    with "Tracker journal … is shorter than expected". Only called for a shard this process
    does not hold (a second descriptor of our own would conflict with our own lock).
    """
    wal = path / "wal"
    try:
        fd = os.open(wal, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _wal_files(wal: Path) -> dict[int, str]:
    """Inode → name of the WAL's segment files that hold entries: every closed one and the
    open one being written (the lowest numbered; higher ones are preallocated, empty)."""
    files = {p.name: p for p in wal.iterdir() if p.name.startswith(("closed-", "open-"))}
    opened = sorted((n for n in files if n.startswith("open-")), key=lambda n: int(n.split("-")[1]))
    keep = [n for n in files if n.startswith("closed-")] + opened[:1]
    return {files[n].stat().st_ino: n for n in keep}


def _roll_wal(engine: qe.EdgeShard, wal: Path) -> None:
    """Append filler until no WAL file that held an entry now is left (see ``compact``)."""
    before = set(_wal_files(wal))
    if not before:  # another layout than the one measured: refuse rather than keep bytes
        raise AdapterError(f"no write-ahead log segment found in {wal}: cannot roll it")
    nothing = qe.Filter(
        must=[qe.FieldCondition(key="tenant_id", match=qe.MatchValue("\x00wal-filler"))]
    )
    filler = qe.UpdateOperation.set_payload_by_filter(
        nothing, {"wal_filler": "\x00" * _FILLER_BYTES}
    )
    for _ in range(_FILLER_LIMIT):
        if not before & set(_wal_files(wal)):
            return
        engine.update(filler)
        engine.flush()
    raise AdapterError(f"the write-ahead log at {wal} did not roll over")


def _remove_dir(tenant_id: str, path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise AdapterError(f"cannot remove the shard of tenant {tenant_id!r} at {path}") from exc


def to_edge_filter(flt: VectorFilter) -> qe.Filter | None:
    """The engine's filter for ``flt`` (semantics in ``memstream.services.ports.VectorFilter``)."""
    must: list[Any] = []
    must_not: list[Any] = []
    if flt.as_of is not None:  # as_of overrides current_only: a past version may be the answer
        t = epoch(flt.as_of)
        must.append(qe.FieldCondition("valid_from", range=qe.RangeFloat(lte=t)))
        still_valid = qe.Filter(
            should=[
                qe.IsEmptyCondition("valid_to"),  # absent or null: open-ended
                qe.FieldCondition("valid_to", range=qe.RangeFloat(gt=t)),
            ]
        )
        must.append(still_valid)
    elif flt.current_only:
        must.append(qe.FieldCondition("is_current", match=qe.MatchValue(_TRUE)))
    if flt.anchors:
        must.append(qe.FieldCondition("anchors", match=qe.MatchAny(list(flt.anchors))))
    if flt.ids:
        must.append(qe.HasIdCondition(set(wellformed_ids(flt.ids))))
    if flt.window is not None:
        start, end = (epoch(moment) for moment in flt.window)
        must.append(qe.FieldCondition("occurred_at", range=qe.RangeFloat(gte=start, lte=end)))
    if flt.fact_types:
        must.append(qe.FieldCondition("fact_type", match=qe.MatchAny(list(flt.fact_types))))
    if flt.exclude_statuses:
        excluded = qe.MatchAny(list(flt.exclude_statuses))
        must_not.append(qe.FieldCondition("status", match=excluded))
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)
