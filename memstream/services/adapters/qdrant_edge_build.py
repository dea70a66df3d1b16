"""HNSW builds of a large Qdrant Edge shard, in a child process.

qdrant-edge 0.9 builds a shard's HNSW index only in ``optimize()``, which holds Python's GIL
from start to end (100,000 points: 26-46 s during which no other thread of the process ran):
a worker that called it would stop answering everyone. So the worker never optimises a live
shard. Once a tenant's shard — or, in a store split by subject, one of its parts — holds many
points that no index covers (``needs_build``), it is flushed and copied beside itself
(``<shard>.build``, under the shard's lock), and a child process (``qdrant_edge_child``, at a
lower CPU priority) optimises the copy. Meanwhile the worker keeps serving and writing the live
shard, recording the id of every point it writes (a move into a part included);
when the child is done those points are copied from the live shard to the built one (in rounds,
then the last ones under the shard's lock), and the built shard takes the live one's place:
``<shard>`` → ``<shard>.old``, ``<shard>.build`` → ``<shard>``, both renames fsynced, then the
old one removed. One build runs at a time in a worker; shards found due meanwhile wait their
turn. An erasure's rewrite of a large shard goes the same way, the child vacuuming the copy
instead (not niced, and not queued behind builds): the live shard answers meanwhile, without
the deleted points, and its files, which still hold them, are removed by the swap.

On disk, whatever a crash interrupts (``recover_swap``, ``discard``): a ``.build`` directory
is never the truth (its points are a copy, plus writes the live shard also holds) and is
removed; an ``.old`` directory beside its shard is the swap's leftover (removed), and without
its shard it is the whole shard (renamed back). A deletion cancels a build in progress and
removes its copy: an erasure leaves no copy of a deleted point behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from memstream.services.adapters.qdrant_edge_parts import sync_dir, sync_dirs

# A shard is built once this many of its points are outside any index, and they are at least
# half of the shard: each build then costs at most twice the points written since the last, and
# growing to 10^6 points builds ~2 x 10^6 (measured: 10^6 random 384-d points took 538 s of
# the child on the 2-core VM), with at most half of the points scanned outside the index.
BUILD_FROM = 50_000
BUILD_SHARE = 2
# A part of a store split by subject (``qdrant_edge_parts``: ~1/32 of the tenant) is built from
# this many: a filtered scan of 31,000 points took 3.2 ms, the same part's HNSW 0.75 ms (ef
# 512), and its build 3.6 s (384-d, measured, qdrant-edge-py 0.9) — a search asks every part.
PART_BUILD_FROM = 10_000
# ... and again once a quarter of it is unindexed (a part's build is short: 3.6 s for 31,000).
PART_BUILD_SHARE = 4
_NICE = 10  # the child yields the cores to the worker's own work
CHILD_MODULE = "memstream.services.adapters.qdrant_edge_child"
# An erasure's rewrite of a shard (``QdrantEdgeIndex.compact``) of this many points or more runs
# as a build does, on a copy in a child process, the live shard answering meanwhile: the engine
# holds the GIL through it (95-109 s at 10^6 points, 8-10 s at 10^5, during which the worker
# answered no one), while a child costs ~0.6 s to start. Below it the worker rewrites the shard
# itself, closed (~50-100 µs a point, measured on the 2-core VM): a part of a store split by
# subject (~31,000 points at 10^6) stays in-process.
COMPACT_CHILD_FROM = 50_000


def needs_build(points: int, indexed: int, build_from: int, share: int = BUILD_SHARE) -> bool:
    """Whether a shard of ``points`` points, ``indexed`` of them in an HNSW index, is built:
    ``build_from`` of them unindexed, and at least 1/``share`` of the shard."""
    unindexed = points - indexed
    return build_from > 0 and unindexed >= build_from and unindexed * share >= points


def build_dir(path: Path) -> Path:
    return path.with_name(path.name + ".build")


def old_dir(path: Path) -> Path:
    return path.with_name(path.name + ".old")


def recover_swap(path: Path) -> None:
    """Finish or undo a swap a crash interrupted (see the module docstring); the same for the
    ``.rewrite`` + ``.old`` swap by which compactions once rewrote a whole shard."""
    old = old_dir(path)
    if old.exists():
        if path.exists():  # swapped in: only the old copy is left to remove
            shutil.rmtree(old)
        else:  # moved away, not yet replaced: the old shard is whole
            old.rename(path)
            sync_dir(path.parent)
    shutil.rmtree(path.with_name(path.name + ".rewrite"), ignore_errors=True)


def discard(path: Path) -> None:
    """Remove the copy a build of the shard at ``path`` works on, if any."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(build_dir(path))


def copy_for_build(path: Path) -> Path:
    """Copy the (flushed) shard at ``path`` beside it for a build; returns the copy's path."""
    target = build_dir(path)
    discard(path)
    shutil.copytree(path, target)
    return target


def swap_in(path: Path) -> None:
    """Put the built shard in the place of the one at ``path`` (both closed)."""
    built, old = build_dir(path), old_dir(path)
    sync_dirs(built)  # the engine syncs its files, not their names (nor the copy's)
    path.rename(old)
    sync_dir(path.parent)
    built.rename(path)
    sync_dir(path.parent)
    shutil.rmtree(old)


def start_child(path: Path, dimension: int, compact: int | None = None) -> subprocess.Popen[bytes]:
    """The child process that optimises the shard copy at ``path`` (``qdrant_edge_child``), or,
    with ``compact`` (its points outside any index), that rewrites it for an erasure
    (``qdrant_edge.vacuum_shard``; not niced: an erasure has a deadline)."""
    what = ["--compact", str(path), str(dimension), str(compact)] if compact is not None else []
    return subprocess.Popen(  # our own interpreter and module, on a path we made
        [sys.executable, "-m", CHILD_MODULE, *(what or [str(path), str(dimension)])],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # a prctl and a nice: no lock taken
        preexec_fn=functools.partial(_die_with_parent, _NICE if compact is None else 0),
    )


def _die_with_parent(nice: int = _NICE) -> None:
    """In the child before exec: killed when the worker dies (Linux), and niced."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if nice:
        with contextlib.suppress(Exception):
            os.nice(nice)
