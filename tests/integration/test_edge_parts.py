"""A tenant's Qdrant Edge store as a hot shard and parts by subject (``qdrant_edge_parts``):
spilling keeps every point and every answer, one subject's points sit in one part, and
forgetting a subject rewrites only the shards that held it — on the real engine, with crashes
simulated on disk.

The vector contract itself (``test_vector_index_contract.py``) also runs on a store that
spills on every write ("edge-parts")."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as qe

from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
from memstream.services.adapters.qdrant_edge_parts import (
    mark_spill,
    part_dir,
    part_of,
    parts_dir,
)
from memstream.services.ports import AdapterError, VectorFilter, VectorPoint

DIM = 8
EVERYTHING = VectorFilter(current_only=False)


def unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def point(rng: np.random.Generator, subject: str, **payload: Any) -> VectorPoint:
    return VectorPoint(
        id=str(uuid.uuid4()),
        vector=unit(rng),
        payload={
            "memory_key": f"mk-{uuid.uuid4()}",
            "entity_type": "customer",
            "entity_id": subject,
            "anchors": [f"customer:{subject}"],
            "is_current": True,
            "fact_type": "note",
            "status": "active",
        }
        | payload,
    )


def nearest(points: list[VectorPoint], query: list[float], limit: int) -> list[str]:
    """The exact answer: cosine similarity over every point, highest first."""
    scored = sorted(points, key=lambda p: -float(np.dot(p.vector, query)))
    return [p.id for p in scored[:limit]]


def raw_count(root: Path, needle: bytes) -> int:
    return sum(f.read_bytes().count(needle) for f in root.rglob("*") if f.is_file())


def files(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under ``root``: (inode, size, mtime in ns)."""
    return {
        str(f.relative_to(root)): (f.stat().st_ino, f.stat().st_size, f.stat().st_mtime_ns)
        for f in root.rglob("*")
        if f.is_file()
    }


def subjects_by_part(shard_dir: Path, parts: int) -> dict[int, set[str]]:
    """What each part holds, read with the engine directly (the index must be closed)."""
    found: dict[int, set[str]] = {}
    for part in range(parts):
        path = part_dir(shard_dir, part)
        if not path.exists():
            continue
        engine = qe.EdgeShard.load(str(path))
        try:
            records, _ = engine.scroll(
                qe.ScrollRequest(limit=10_000, with_payload=True, with_vector=False)
            )
        finally:
            engine.close()
        found[part] = {str((r.payload or {})["entity_id"]) for r in records}
    return found


async def test_spilling_keeps_every_point_and_answer_and_puts_a_subject_in_one_part(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    root = tmp_path / "vectors"
    tenant = "acme"
    index = QdrantEdgeIndex(root, DIM, split_from=40, parts=4, index_from=25)
    points = [point(rng, f"C-{i % 9}") for i in range(60)]
    queries = [unit(rng) for _ in range(5)]
    try:
        await index.upsert(tenant, points[:30])
        assert index.parts_of(tenant) == 0
        before = [await index.search(tenant, q, EVERYTHING, 10) for q in queries]
        await index.upsert(tenant, points[30:45])  # reaches 40: spilled to the parts
        assert index.parts_of(tenant) == 4
        assert sorted(p.name for p in index.shard_dir(tenant).iterdir()) == ["parts"]
        await index.upsert(tenant, points[45:])  # into a new hot shard
        assert await index.count(tenant) == 60
        assert await index.point_ids(tenant) == {p.id for p in points}
        for q in queries:
            hits = await index.search(tenant, q, EVERYTHING, 10)
            assert [h.id for h in hits] == nearest(points, q, 10)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        # Filters still apply, within and across parts.
        one = VectorFilter(current_only=False, anchors=("customer:C-4",))
        hits = await index.search(tenant, queries[0], one, 50)
        assert {h.id for h in hits} == {p.id for p in points if p.payload["entity_id"] == "C-4"}
        # What the single shard answered for the first 30 is still a prefix of the answers'
        # order among those 30 points.
        first_ids = {p.id for p in points[:30]}
        for q, old in zip(queries, before, strict=True):
            again = [h.id for h in await index.search(tenant, q, EVERYTHING, 60)]
            assert [i for i in again if i in first_ids][:10] == [h.id for h in old]
    finally:
        await index.close()
    shard = index.shard_dir(tenant)
    held = subjects_by_part(shard, 4)
    assert set().union(*held.values()) == {str(p.payload["entity_id"]) for p in points[:45]}
    for subject in {str(p.payload["entity_id"]) for p in points[:45]}:
        holders = [part for part, subjects in held.items() if subject in subjects]
        assert holders == [part_of({"entity_type": "customer", "entity_id": subject}, "", 4)]

    reopened = QdrantEdgeIndex(root, DIM)  # the defaults: the layout is read from disk
    try:
        assert reopened.parts_of(tenant) == 4
        hits = await reopened.search(tenant, queries[1], EVERYTHING, 10)
        assert [h.id for h in hits] == nearest(points, queries[1], 10)
    finally:
        await reopened.close()


async def test_a_spill_writes_through_the_open_parts_and_leaves_the_parts_it_opens_open(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    tenant = "acme"
    index = QdrantEdgeIndex(tmp_path / "vectors", DIM, split_from=20, parts=4, index_from=10)
    points = [point(rng, f"C-{i % 12}") for i in range(60)]
    try:
        await index.upsert(tenant, points[:20])  # the first spill opens the parts
        opened = {key: shard.engine for key, shard in index._shards.items()}
        assert sorted(opened) == [(tenant, part) for part in range(4)]  # the hot one closed
        await index.upsert(tenant, points[20:40])  # the second writes through them
        await index.upsert(tenant, points[40:])
        assert {k: s.engine for k, s in index._shards.items() if k[1] >= 0} == opened
        assert await index.point_ids(tenant) == {p.id for p in points}
        query = unit(rng)
        hits = await index.search(tenant, query, EVERYTHING, 15)
        assert [h.id for h in hits] == nearest(points, query, 15)
    finally:
        await index.close()
    held = subjects_by_part(index.shard_dir(tenant), 4)
    assert set().union(*held.values()) == {str(p.payload["entity_id"]) for p in points}


async def test_forgetting_a_subject_rewrites_the_shards_that_held_it_only_and_leaves_no_byte(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    root = tmp_path / "vectors"
    tenant = "acme"
    canary = f"canary-{uuid.uuid4()}"
    index = QdrantEdgeIndex(root, DIM, split_from=60, parts=8, index_from=0)
    erased = [point(rng, canary) for _ in range(5)]
    kept = [point(rng, f"C-{i}") for i in range(80)]
    late = point(rng, canary)  # written after the spill: in the hot shard
    shard = index.shard_dir(tenant)
    try:
        await index.upsert(tenant, erased + kept[:60])  # spilled
        await index.upsert(tenant, [*kept[60:], late])
        await index.flush(tenant)
        assert raw_count(shard, canary.encode()) > 0
        assert await index.delete(tenant, [p.id for p in [*erased, late]]) == 6
        # (the delete opened every part: an open touches its WAL's files)
        own = part_dir(shard, part_of(erased[0].payload, erased[0].id, 8))
        others = {p: files(p) for p in parts_dir(shard).iterdir() if p.is_dir() and p != own}
        assert others, "the kept points fill other parts too"
        await index.compact(tenant)

        assert raw_count(shard, canary.encode()) == 0
        assert {p: files(p) for p in others} == others  # not one file of another part touched
        assert not (parts_dir(shard) / "dirty.json").exists()
        assert await index.point_ids(tenant) == {p.id for p in kept}
    finally:
        await index.close()


async def test_an_erasure_interrupted_after_the_delete_is_finished_by_the_next_compact(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(7)
    root = tmp_path / "vectors"
    tenant = "acme"
    canary = f"canary-{uuid.uuid4()}"
    first = QdrantEdgeIndex(root, DIM, split_from=0, parts=8)  # every write spills
    erased = [point(rng, canary) for _ in range(3)]
    await first.upsert(tenant, erased + [point(rng, f"C-{i}") for i in range(20)])
    await first.delete(tenant, [p.id for p in erased])
    await first.close()  # stopped before its compaction
    shard = first.shard_dir(tenant)
    assert raw_count(shard, canary.encode()) > 0

    second = QdrantEdgeIndex(root, DIM)
    try:
        assert await second.delete(tenant, [p.id for p in erased]) == 0  # already gone
        await second.compact(tenant)  # the list of parts to rewrite survived the stop
        assert raw_count(shard, canary.encode()) == 0
        assert await second.count(tenant) == 20
    finally:
        await second.close()


async def test_a_spill_interrupted_at_any_step_is_finished_with_nothing_lost_or_doubled(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(9)
    root = tmp_path / "vectors"
    points = [point(rng, f"C-{i}") for i in range(12)]
    index = QdrantEdgeIndex(root, DIM, split_from=100, parts=4)
    await index.upsert("first", points)  # the first spill stopped before its parts existed
    await index.upsert("copied", points)  # stopped after copying, before emptying the hot one
    await index.close()
    first = index.shard_dir("first")
    (first / "parts.new" / "000").mkdir(parents=True)
    (first / "parts.new" / "000" / "junk").write_bytes(b"half")
    copied = index.shard_dir("copied")
    spilled = QdrantEdgeIndex(tmp_path / "elsewhere", DIM, split_from=0, parts=4)
    await spilled.upsert("copied", points)  # the same points, in parts: then moved in place
    await spilled.close()
    parts_dir(spilled.shard_dir("copied")).rename(parts_dir(copied))
    mark_spill(copied)

    again = QdrantEdgeIndex(root, DIM, split_from=100, parts=4)
    try:
        assert await again.count("first") == 12
        assert not (first / "parts.new").exists()
        assert again.parts_of("first") == 0
        assert await again.count("copied") == 12  # finished on first touch: no point twice
        assert sorted(p.name for p in copied.iterdir()) == ["parts"]
        assert not (parts_dir(copied) / "spilling.json").exists()
        hits = await again.search("copied", points[0].vector, EVERYTHING, 12)
        assert sorted(h.id for h in hits) == sorted(p.id for p in points)
    finally:
        await again.close()


async def test_writes_and_reads_while_the_store_splits_lose_nothing(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    index = QdrantEdgeIndex(tmp_path / "vectors", DIM, split_from=25, parts=4)
    batches = [[point(rng, f"C-{b}-{i}") for i in range(10)] for b in range(12)]
    query = unit(rng)

    async def reads() -> None:
        written = {p.id: p.payload for batch in batches for p in batch}
        for _ in range(20):
            hits = await index.search("acme", query, EVERYTHING, 5)
            assert len(hits) <= 5
            # Each hit with its own payload, read from the shard that returned it or, when a
            # move took it elsewhere between the two reads, from where it is now.
            assert all(h.payload == written[h.id] for h in hits)
            await asyncio.sleep(0)

    try:
        await asyncio.gather(*(index.upsert("acme", batch) for batch in batches), reads())
        written = [p for batch in batches for p in batch]
        assert index.parts_of("acme") == 4
        assert await index.point_ids("acme") == {p.id for p in written}
        hits = await index.search("acme", query, EVERYTHING, 10)
        assert [h.id for h in hits] == nearest(written, query, 10)
    finally:
        await index.close()


@pytest.mark.parametrize("parts", [1, -1])
def test_parts_are_off_or_two_at_least(tmp_path: Path, parts: int) -> None:
    with pytest.raises(ValueError, match="parts"):
        QdrantEdgeIndex(tmp_path, DIM, parts=parts)


async def test_without_parts_a_tenant_stays_one_shard_and_one_already_split_keeps_its_parts(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(13)
    root = tmp_path / "vectors"
    points = [point(rng, f"C-{i}") for i in range(30)]
    off = QdrantEdgeIndex(root, DIM, split_from=10)  # parts off (the default)
    await off.upsert("one", points)
    assert off.parts_of("one") == 0
    await off.close()
    on = QdrantEdgeIndex(root, DIM, split_from=10, parts=4)
    await on.upsert("split", points[:20])
    assert on.parts_of("split") == 4
    await on.close()
    back = QdrantEdgeIndex(root, DIM, split_from=10)  # turned off again
    try:
        await back.upsert("split", points[20:])  # into the hot shard, never moved
        assert back.parts_of("split") == 4
        assert await back.point_ids("split") == {p.id for p in points}
        hits = await back.search("split", points[25].vector, EVERYTHING, 30)
        assert [h.id for h in hits] == nearest(points, points[25].vector, 30)
    finally:
        await back.close()


async def test_a_manifest_that_names_an_impossible_part_count_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(17)
    index = QdrantEdgeIndex(tmp_path / "vectors", DIM, split_from=0, parts=4)
    await index.upsert("acme", [point(rng, "C-1")])
    await index.close()
    manifest = parts_dir(index.shard_dir("acme")) / "parts.json"
    manifest.write_text('{"parts": 1000000000}')
    again = QdrantEdgeIndex(tmp_path / "vectors", DIM)
    try:
        with pytest.raises(AdapterError, match="parts manifest"):
            await again.count("acme")
    finally:
        await again.close()


async def test_a_point_moved_to_its_part_between_the_search_and_the_payload_read_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search reads the payloads of what it keeps from the shards that returned them; a
    move to the parts between the two reads is made to happen there, on the real engine."""
    rng = np.random.default_rng(5)
    index = QdrantEdgeIndex(tmp_path / "vectors", DIM, split_from=20, parts=4)
    first = [point(rng, f"C-{i}") for i in range(20)]
    hot = [point(rng, f"H-{i}") for i in range(10)]
    more = [point(rng, f"M-{i}") for i in range(10)]
    read = index._payloads
    moved: list[int] = []

    async def move_first(tenant_id: str, ids: list[Any], keys: Any) -> dict[str, Any]:
        if not moved:
            moved.append(index.parts_of(tenant_id))
            await index.upsert(tenant_id, more)  # the hot shard reaches 20: moved to the parts
        return await read(tenant_id, ids, keys)

    try:
        await index.upsert("acme", first)  # moved to the parts
        await index.upsert("acme", hot)  # in the hot shard
        assert await index.count("acme") == 30
        monkeypatch.setattr(index, "_payloads", move_first)
        hits = await index.search("acme", hot[0].vector, EVERYTHING, 5)
        assert moved == [4]
        assert sorted(p.name for p in index.shard_dir("acme").iterdir()) == ["parts"]
        assert [h.id for h in hits] == nearest(first + hot, hot[0].vector, 5)  # as it was asked
        assert hits[0].id == hot[0].id and hits[0].payload == hot[0].payload
        assert all(h.payload for h in hits)
    finally:
        await index.close()
