"""HNSW builds of a large tenant's Qdrant Edge shard in a child process (``qdrant_edge_build``):
the built shard answers as the live one did, nothing written during a build is lost, a deletion
leaves no copy behind, and whatever a stop interrupts is undone on disk — on the real engine
and a real child process."""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import qdrant_edge as qe
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex, load_shard
from memstream.services.adapters.qdrant_edge_build import (
    BUILD_SHARE,
    CHILD_MODULE,
    PART_BUILD_SHARE,
    build_dir,
    needs_build,
    old_dir,
)
from memstream.services.adapters.qdrant_edge_parts import part_dir
from memstream.services.ports import AdapterError, VectorFilter, VectorPoint

EVERYTHING = VectorFilter(current_only=False)


def points(rng: np.random.Generator, count: int, dim: int, **payload: Any) -> list[VectorPoint]:
    vectors = rng.normal(size=(count, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        VectorPoint(
            id=str(uuid.uuid4()),
            vector=[float(x) for x in v],
            payload={"memory_key": f"mk-{uuid.uuid4()}", "is_current": True, "n": 0} | payload,
        )
        for v in vectors
    ]


async def write(index: QdrantEdgeIndex, tenant: str, batch: list[VectorPoint]) -> None:
    for start in range(0, len(batch), 500):
        await index.upsert(tenant, batch[start : start + 500], durable=False)
    await index.flush(tenant)


def commands(processes: list[psutil.Process]) -> list[str]:
    said = []
    for process in processes:
        try:
            said.append(" ".join(process.cmdline()))
        except psutil.Error:  # ended meanwhile
            continue
    return said


def files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@given(
    points_=st.integers(0, 10**7),
    indexed=st.integers(0, 10**7),
    build_from=st.integers(0, 10**6),
    share=st.sampled_from([BUILD_SHARE, PART_BUILD_SHARE]),
)
def test_a_build_is_due_for_many_unindexed_points_and_never_when_off(
    points_: int, indexed: int, build_from: int, share: int
) -> None:
    indexed = min(indexed, points_)
    due = needs_build(points_, indexed, build_from, share)
    unindexed = points_ - indexed
    assert due == (build_from > 0 and unindexed >= build_from and unindexed * share >= points_)
    if due:  # each build covers at least a share of the shard: the work stays proportional
        assert unindexed >= points_ / share


async def test_a_large_shard_is_indexed_by_a_child_and_answers_as_before(tmp_path: Path) -> None:
    """384-d points past the engine's 10 MB indexing threshold: after the build the engine
    reports them indexed, every point is still there, and each stored vector asked finds
    itself first, as in the brute-force shard."""
    rng, tenant = np.random.default_rng(7), "acme"
    index = QdrantEdgeIndex(tmp_path / "v", 384, flush_writes=False, build_from=16_000)
    batch = points(rng, 20_000, 384)
    await write(index, tenant, batch)
    assert await index.builds_done(120)
    assert index.builds_finished == 1
    assert index.last_build["points"] >= 16_000 and index.last_build["child_s"] > 0
    await index.close()
    engine = load_shard(index.shard_dir(tenant), 384)
    try:
        assert engine.info().indexed_vectors_count >= 16_000  # HNSW over the copy's points
    finally:
        engine.close()
    assert await index.count(tenant) == len(batch)
    for p in batch[::1000]:
        hits = await index.search(tenant, p.vector, EVERYTHING, 10)
        assert hits[0].id == p.id and hits[0].score == pytest.approx(1.0, abs=1e-3)
        assert hits[0].payload["memory_key"] == p.payload["memory_key"]
    assert not build_dir(index.shard_dir(tenant)).exists()
    assert not old_dir(index.shard_dir(tenant)).exists()
    await index.close()


async def test_points_payload_writes_moved_out_of_the_index_make_a_build_due(
    tmp_path: Path,
) -> None:
    """The engine writes a built point whose payload changes again in the appendable segment,
    while its count of indexed vectors still counts it: most of a built shard's payloads
    changed (memories changing state) makes a build due at the next write, and after it the
    shard is indexed again with every payload as last written."""
    rng, tenant = np.random.default_rng(13), "acme"
    index = QdrantEdgeIndex(tmp_path / "v", 384, flush_writes=False, build_from=16_000)
    batch = points(rng, 20_000, 384)
    await write(index, tenant, batch)
    assert await index.builds_done(120) and index.builds_finished == 1
    [built] = await index._on_each(tenant, "info", lambda _: lambda engine: engine.info())
    assert built.indexed_vectors_count >= 16_000  # the points the build started from
    changed = batch[:17_000]
    for start in range(0, len(changed), 1_000):
        await index.set_payloads(
            tenant, [(p.id, {"n": 1}) for p in changed[start : start + 1_000]], durable=False
        )
    await index.flush(tenant)
    [moved] = await index._on_each(tenant, "info", lambda _: lambda engine: engine.info())
    # The engine's count does not show the move.
    assert moved.indexed_vectors_count == built.indexed_vectors_count
    await index.upsert(tenant, points(rng, 1, 384))
    assert index._builds, "17,000 of 20,001 points out of the index: a build is due"
    assert await index.builds_done(120) and index.builds_finished == 2
    await index.close()
    engine = load_shard(index.shard_dir(tenant), 384)
    try:
        info = engine.info()
        sample = [p.id for p in batch[::500]]
        stored = {str(r.id): r.payload["n"] for r in engine.retrieve(sample, True, False)}
    finally:
        engine.close()
    assert info.points_count == 20_001 and info.indexed_vectors_count >= 20_000
    assert stored == {p.id: (1 if i < 17_000 else 0) for i, p in enumerate(batch) if i % 500 == 0}
    for p in batch[::2_000]:
        hits = await index.search(tenant, p.vector, EVERYTHING, 10)
        assert hits[0].id == p.id
    await index.set_payloads(tenant, [(batch[0].id, {"n": 2})])
    await index.drop_tenant(tenant)  # a store made again under that name starts with no counts
    assert not [k for k in [*index._moved, *index._built, *index._deleted] if k[0] == tenant]
    await index.close()


@pytest.mark.parametrize("in_child", [False, True])
async def test_an_erasure_keeps_a_built_shards_index_and_leaves_plain_points_plain(
    tmp_path: Path, in_child: bool
) -> None:
    """A subject with points in the built segment and among those written after the build:
    the compaction (in the worker, or in its child from ``compact_child_from`` points) leaves
    no byte of them, the built points stay indexed (the engine's rewrite of a built segment
    reuses its graph), the later ones stay unindexed (no index is built in an erasure), and
    no build is due at the next write; every other point answers as before."""
    rng, tenant = np.random.default_rng(11), "acme"
    canary = f"canary-{uuid.uuid4()}"
    child_from = 10_000 if in_child else 1 << 30
    index = QdrantEdgeIndex(
        tmp_path / "v", 384, flush_writes=False, build_from=16_000, compact_child_from=child_from
    )
    built = points(rng, 20_000, 384, secret="no")
    built[:3] = points(rng, 3, 384, secret=canary)
    await write(index, tenant, built)
    assert await index.builds_done(120) and index.builds_finished == 1
    later = points(rng, 2_000, 384, secret=canary) + points(rng, 1_000, 384, secret="no")
    await write(index, tenant, later)
    assert not index._builds  # 3,000 unindexed: under the build's threshold
    victims = [p.id for p in built[:3] + later[:2_000]]
    assert await index.delete(tenant, victims) == len(victims)
    [before] = await index._on_each(tenant, "info", lambda _: lambda engine: engine.info())
    # The build started from 16,000 or more; what was written after it is not in its index.
    assert 16_000 - 3 <= before.indexed_vectors_count <= before.points_count - 1_000
    compaction = asyncio.ensure_future(index.compact(tenant))
    seen_child = False
    while not compaction.done():
        children = commands(psutil.Process().children())
        seen_child |= any(CHILD_MODULE in c and "--compact" in c for c in children)
        await asyncio.sleep(0.01)
    await compaction
    assert seen_child == in_child
    await index.upsert(tenant, points(rng, 1, 384))
    assert not index._builds  # the index survived: nothing to build again
    await index.close()
    assert files_holding(tmp_path, canary.encode()) == []
    engine = load_shard(index.shard_dir(tenant), 384)
    try:
        info = engine.info()
    finally:
        engine.close()
    assert info.points_count == before.points_count + 1
    # The engine counted the three deleted built points as indexed until the rewrite.
    assert info.indexed_vectors_count == before.indexed_vectors_count - 3
    for p in built[3::997] + later[2_000::97]:
        hits = await index.search(tenant, p.vector, EVERYTHING, 10)
        assert hits[0].id == p.id and hits[0].score == pytest.approx(1.0, abs=1e-3)
    for p in built[:3] + later[:2_000:250]:
        hits = await index.search(tenant, p.vector, EVERYTHING, 10)
        assert p.id not in {h.id for h in hits}
    await index.close()


async def test_writes_made_during_a_build_are_all_in_the_built_shard(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Upserts, new payloads and overwrites go on while the child builds: the swapped-in
    shard holds each point with its last vector and payload."""
    rng, tenant, dim = np.random.default_rng(3), "acme", 8
    index = QdrantEdgeIndex(tmp_path / "v", dim, flush_writes=False, build_from=1_000)
    first = points(rng, 1_000, dim)
    expected = {p.id: p for p in first}
    with caplog.at_level(logging.INFO, logger="memstream.services.adapters.qdrant_edge"):
        await write(index, tenant, first)  # the build starts
        assert index._builds, "a build should have started"
        rounds = 0
        # Write as long as it runs (~1 s: a child), and not after: a write after the swap may
        # start the next build (the points written meanwhile are unindexed in the built shard).
        while not index.builds_finished and rounds < 400:
            rounds += 1
            fresh = points(rng, 20, dim, n=rounds)
            await index.upsert(tenant, fresh, durable=False)
            expected.update({p.id: p for p in fresh})
            moved = first[rounds % len(first)]
            await index.set_payloads(tenant, [(moved.id, {"n": -rounds})], durable=False)
            expected[moved.id] = VectorPoint(moved.id, moved.vector, moved.payload | {"n": -rounds})
            await asyncio.sleep(0)
        assert await index.builds_done(60)
    assert rounds > 1, "no write happened during the build"
    assert index.builds_finished == 1
    assert any("indexed the vector shard" in r.getMessage() for r in caplog.records)
    await index.flush(tenant)
    assert await index.point_ids(tenant) == set(expected)
    await index.close()
    engine = load_shard(index.shard_dir(tenant), dim)
    try:
        records = engine.retrieve(list(expected), True, True)
    finally:
        engine.close()
    assert len(records) == len(expected)
    for r in records:
        want = expected[str(r.id)]
        assert r.payload["n"] == want.payload["n"], str(r.id)
        assert np.allclose(np.asarray(r.vector), want.vector, atol=1e-3)


async def test_a_deletion_cancels_a_build_and_leaves_no_copy_of_the_point(tmp_path: Path) -> None:
    rng, tenant, dim = np.random.default_rng(5), "acme", 8
    canary = f"canary-{uuid.uuid4()}"
    index = QdrantEdgeIndex(tmp_path / "v", dim, flush_writes=False, build_from=1_000)
    victim = points(rng, 1, dim, secret=canary)
    await write(index, tenant, victim + points(rng, 1_200, dim))
    assert index._builds, "a build should have started"
    assert await index.delete(tenant, [victim[0].id]) == 1
    assert not index._builds  # given up before the delete
    await index.compact(tenant)
    await index.close()
    assert files_holding(tmp_path, canary.encode()) == []
    assert not build_dir(index.shard_dir(tenant)).exists()
    assert await index.count(tenant) == 1_200
    await index.close()


async def test_a_large_shards_erasure_is_rewritten_on_a_copy_while_it_and_others_answer(
    tmp_path: Path,
) -> None:
    """The engine holds the GIL through a rewrite (95 s at 10^6 points): done in the worker, no
    tenant was answered meanwhile. From ``compact_child_from`` points a child rewrites a copy:
    another tenant's shard, open or opened now, answers during it, and so does the tenant being
    rewritten — without the erased point; a point it is written meanwhile is in the shard
    swapped in, and no byte of the erased one is left in any file."""
    rng, dim = np.random.default_rng(13), 64
    canary = f"canary-{uuid.uuid4()}"
    root = tmp_path / "v"
    cold = QdrantEdgeIndex(root, dim, flush_writes=False, build_from=0)
    await write(cold, "cold", points(rng, 200, dim))
    await cold.close()  # its shard is opened (under the registry's lock) during the rewrite
    index = QdrantEdgeIndex(root, dim, flush_writes=False, build_from=0, compact_child_from=500)
    victim = points(rng, 1, dim, secret=canary)
    big = victim + points(rng, 3_000, dim)
    await write(index, "big", big)
    warm = points(rng, 200, dim)
    await write(index, "warm", warm)
    assert await index.delete("big", [victim[0].id]) == 1
    rewrite = asyncio.ensure_future(index.compact("big"))
    for _ in range(2_000):  # the rewrite has copied the shard and started its child
        children = commands(psutil.Process().children())
        if any(CHILD_MODULE in c and "--compact" in c for c in children):
            break
        await asyncio.sleep(0.005)
    else:
        pytest.fail(f"no compaction child was seen: {children}")
    assert index._builds[("big", -1)].compact is not None and not index._compacting
    answered: list[str] = []
    late = points(rng, 1, dim)
    await index.upsert("big", late)
    for tenant in ["warm", "cold", "big", "warm", "big"]:
        hits = await index.search(
            tenant, (victim if tenant == "big" else warm)[0].vector, EVERYTHING, 5
        )
        assert hits
        if tenant == "big":
            assert victim[0].id not in {h.id for h in hits}
        if not rewrite.done():
            answered.append(tenant)
    assert answered == ["warm", "cold", "big", "warm", "big"]  # all during the rewrite
    await rewrite
    assert not index._builds and not build_dir(index.shard_dir("big")).exists()
    hits = await index.search("big", late[0].vector, EVERYTHING, 1)
    assert hits[0].id == late[0].id  # written during the rewrite, brought over
    hits = await index.search("big", victim[0].vector, EVERYTHING, 5)
    assert hits and victim[0].id not in {h.id for h in hits}
    assert await index.count("big") == 3_001
    await index.close()
    assert files_holding(tmp_path, canary.encode()) == []


async def test_a_compaction_that_does_not_finish_raises_and_the_next_one_erases(
    tmp_path: Path,
) -> None:
    """A rewrite on a copy given up (here: the index closed while its child runs) raises, so the
    erasure stays pending; the deleted point is not answered meanwhile, and the next compaction
    leaves no byte of it."""
    rng, dim = np.random.default_rng(17), 64
    canary = f"canary-{uuid.uuid4()}"
    index = QdrantEdgeIndex(
        tmp_path / "v", dim, flush_writes=False, build_from=0, compact_child_from=500
    )
    victim = points(rng, 1, dim, secret=canary)
    await write(index, "big", victim + points(rng, 3_000, dim))
    assert await index.delete("big", [victim[0].id]) == 1
    rewrite = asyncio.ensure_future(index.compact("big"))
    for _ in range(2_000):
        if any("--compact" in c for c in commands(psutil.Process().children())):
            break
        await asyncio.sleep(0.005)
    await index.close()  # gives up the rewrite: its child killed, its copy removed
    with pytest.raises(AdapterError, match="compaction of the vector shard of tenant 'big'"):
        await rewrite
    assert files_holding(tmp_path, canary.encode()) != []  # still in the live shard's files
    hits = await index.search("big", victim[0].vector, EVERYTHING, 5)
    assert victim[0].id not in {h.id for h in hits}
    await index.compact("big")
    await index.close()
    assert files_holding(tmp_path, canary.encode()) == []
    assert await index.count("big") == 3_000
    await index.close()


async def test_close_during_a_build_stops_the_child_and_removes_its_copy(tmp_path: Path) -> None:
    rng, tenant = np.random.default_rng(9), "acme"
    index = QdrantEdgeIndex(tmp_path / "v", 384, flush_writes=False, build_from=8_000)
    await write(index, tenant, points(rng, 16_000, 384))
    build = index._builds.get((tenant, -1))
    assert build is not None
    for _ in range(200):  # until the child runs (the copy is made first)
        if build.child is not None:
            break
        await asyncio.sleep(0.05)
    await index.close()
    assert build.child is not None and build.child.poll() is not None
    assert not build_dir(index.shard_dir(tenant)).exists()
    assert index.builds_finished == 0
    assert await index.count(tenant) == 16_000  # the live shard, as it was
    await index.close()


async def test_what_a_stopped_build_left_on_disk_is_undone_on_open(tmp_path: Path) -> None:
    """A copy left by a stop is removed; a shard moved aside but not replaced comes back; a
    leftover of a finished swap is removed. Each time every point is answered."""
    rng, tenant, dim = np.random.default_rng(11), "acme", 8
    index = QdrantEdgeIndex(tmp_path / "v", dim, build_from=0)
    batch = points(rng, 50, dim)
    await write(index, tenant, batch)
    await index.close()
    shard = index.shard_dir(tenant)

    def copy_of(source: Path, target: Path) -> None:
        engine = qe.EdgeShard.load(str(source))  # as the copy would hold it
        engine.close()
        shutil.copytree(source, target)

    copy_of(shard, build_dir(shard))  # a stop during a build
    assert await index.count(tenant) == 50
    assert not build_dir(shard).exists()
    await index.close()

    copy_of(shard, build_dir(shard))  # a stop between the swap's two renames
    shard.rename(old_dir(shard))
    assert await index.count(tenant) == 50
    assert shard.exists() and not old_dir(shard).exists() and not build_dir(shard).exists()
    await index.close()

    copy_of(shard, old_dir(shard))  # a stop before the old shard was removed
    assert await index.count(tenant) == 50
    assert not old_dir(shard).exists()
    assert {h.id for h in await index.search(tenant, batch[0].vector, EVERYTHING, 50)} == {
        p.id for p in batch
    }
    await index.close()


async def test_parts_are_built_one_at_a_time_and_keep_what_was_written_meanwhile(
    tmp_path: Path,
) -> None:
    """A store in parts (``qdrant_edge_parts``): each part is built once it holds enough
    unindexed points, never two builds at once; upserts, moves to the parts and new payloads
    made while they run are all in the swapped-in parts; the parts answer every point as
    itself; then forgetting one subject leaves no byte of its canary in any file."""
    rng, tenant, dim = np.random.default_rng(13), "acme", 384
    index = QdrantEdgeIndex(
        tmp_path / "v", dim, flush_writes=False, parts=2, split_from=4_000, build_from=3_000
    )
    expected: dict[str, VectorPoint] = {}
    most_at_once = rounds = 0
    for n in range(48):  # 24,000 points in six spills, with payload changes between
        batch = points(rng, 500, dim, n=n)
        for i, p in enumerate(batch):
            p.payload.update(entity_type="customer", entity_id=f"c{(n * 500 + i) % 300}")
        await index.upsert(tenant, batch, durable=False)
        expected.update({p.id: p for p in batch})
        changed = list(expected)[n * 37 % len(expected)]
        await index.set_payloads(tenant, [(changed, {"n": -n - 1})], durable=False)
        old = expected[changed]
        expected[changed] = VectorPoint(old.id, old.vector, old.payload | {"n": -n - 1})
        most_at_once = max(most_at_once, len(index._builds))
        rounds += bool(index._builds)
        await asyncio.sleep(0)
    await index.flush(tenant)
    assert rounds > 0, "no write happened during a build"
    assert await index.builds_done(240)
    assert most_at_once == 1 and not index._waiting
    assert index.builds_finished >= 2 and index.parts_of(tenant) == 2
    assert await index.point_ids(tenant) == set(expected)
    for p in list(expected.values())[::2_000]:
        hits = await index.search(tenant, p.vector, EVERYTHING, 5)
        assert hits[0].id == p.id and hits[0].payload["n"] == p.payload["n"]
    await index.close()
    shard = index.shard_dir(tenant)
    for part in range(2):
        engine = load_shard(part_dir(shard, part), dim)
        try:
            info = engine.info()
            assert info.indexed_vectors_count > 0, f"part {part} was not built"
            records = engine.retrieve([pid for pid in expected], True, False)
        finally:
            engine.close()
        for r in records:
            assert r.payload["n"] == expected[str(r.id)].payload["n"], str(r.id)
    # Forgetting one subject: its canary is gone from every file, every other point stays.
    canary = f"canary-{uuid.uuid4()}"
    subject = [p for p in expected.values() if p.payload["entity_id"] == "c7"]
    await index.set_payloads(tenant, [(p.id, {"note": canary}) for p in subject])
    await index.flush(tenant)
    await index.close()
    assert files_holding(tmp_path, canary.encode())
    await index.delete(tenant, [p.id for p in subject])
    await index.compact(tenant)
    await index.close()
    assert files_holding(tmp_path, canary.encode()) == []
    assert await index.count(tenant) == len(expected) - len(subject)
    await index.close()
