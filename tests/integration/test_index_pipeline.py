"""The indexer's passes overlap (one reads and embeds while the one before it writes) on the
real parts: the worker's composition root on PostgreSQL, Redis and Qdrant Edge.

Whatever the interleaving, the vector store ends as Postgres says — every live version a point
whose payload is the version's, nothing else — and no version is embedded twice; a version
erased while a pass was embedding it is never written to the store; batches queued behind the
passes in flight are indexed together.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memstream.services.adapters.embedding import SentenceTransformerEmbedder
from memstream.services.domain.erasure import ErasureScope
from memstream.services.handlers.index import Indexer, payload_of
from memstream.services.handlers.ingest import Envelope
from memstream.services.ports import Position, VectorFilter
from tests.conftest import MACHINE_REDIS, unique
from tests.integration.erasure_kit import NOW, TOPIC, World, avro, event, raw_count

STATUSES = ["active", "open", "resolved", "cancelled"]


class Watching:
    """The real embedder, counting what it embeds and whether a pass was writing meanwhile;
    texts holding ``hold`` wait for ``release`` (after setting ``held``)."""

    def __init__(self, inner: SentenceTransformerEmbedder) -> None:
        self.inner = inner
        self.indexer: Indexer | None = None
        self.texts: Counter[str] = Counter()
        self.overlapped = 0
        self.calls = 0  # embed calls with texts: one per pass
        self.hold: str | None = None
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.indexer is not None and self.indexer._writing.locked():
            self.overlapped += 1
        self.texts.update(texts)
        self.calls += bool(texts)
        if self.hold is not None and any(self.hold in t for t in texts):
            self.held.set()
            await self.release.wait()
        return await self.inner.embed(texts)


@pytest.fixture(scope="module")
def model(model_path: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder.load(model_path)


@pytest.fixture
async def world(
    machine_schema_dsn: str, data_dir: Path, model: SentenceTransformerEmbedder, tenant: str
) -> AsyncIterator[tuple[World, Watching]]:
    watching = Watching(model)
    w = await World.open(machine_schema_dsn, MACHINE_REDIS, data_dir, watching, tenant)  # type: ignore[arg-type]
    watching.indexer = w.container.indexer
    yield w, watching
    await w.close()


async def handle(world: World, raws: list[dict[str, Any]]) -> None:
    """Through the ingest handler, without waiting for the indexer (passes pile up)."""
    await world.container.ingestor.handle_batch(
        [
            Envelope(key, value, Position(TOPIC, 0, next(world.offsets)), published_at=NOW)
            for key, value in map(avro, raws)
        ]
    )


async def settle(world: World) -> None:
    await world.container.indexer.drain()
    while await world.container.indexer.sweep():
        pass


def histories(rng: random.Random, tenant: str, n: int) -> list[dict[str, Any]]:
    """``n`` events over a few memories: new versions, late ones, status changes."""
    out = []
    for i in range(n):
        m = rng.randrange(8)
        out.append(
            event(
                tenant,
                f"ticket-{m}",
                f"ticket {m} note {i}: customer C{m} reports item {rng.randrange(100)}",
                entity=f"customer:C{m}",
                hours_ago=rng.randrange(1, 24 * 30),  # arrival order is not time order
                status=rng.choice(STATUSES),
                fact_type="ticket",
            )
        )
    return out


async def index_state(world: World, watching: Watching) -> dict[str, dict[str, Any]]:
    """Every point of the tenant's store: its payload, by id."""
    ids = await world.container.index.point_ids(world.tenant)
    (probe,) = await watching.inner.embed(["a probe"])
    hits = await world.container.index.search(
        world.tenant, probe, VectorFilter(current_only=False, ids=tuple(sorted(ids))), len(ids) or 1
    )
    return {h.id: dict(h.payload) for h in hits}


def unset(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload without its null fields (a store may keep a null or no key: both read unset)."""
    return {k: x for k, x in payload.items() if x is not None}


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_overlapping_passes_leave_the_store_as_postgres_says(
    world: tuple[World, Watching], seed: int
) -> None:
    w, watching = world
    rng = random.Random(seed)
    raws = histories(rng, w.tenant, 240)
    sent = 0
    while sent < len(raws):
        size = rng.randrange(1, 9)
        await handle(w, raws[sent : sent + size])
        sent += size
    await settle(w)

    versions = [
        v
        for key in {r["memory_key"] for r in raws}
        for v in await w.container.repo.chain(w.tenant, key)
    ]
    assert len(versions) == len(raws)
    stored = await index_state(w, watching)
    assert set(stored) == {v.version_id for v in versions}
    for v in versions:
        assert unset(stored[v.version_id]) == unset(payload_of(v)), v.version_id
    assert sum(1 for v in versions if v.is_current) == len({r["memory_key"] for r in raws})
    assert await w.container.repo.pending_index(None, limit=10) == []
    embedded = list(watching.texts.values())
    assert len(embedded) == len(raws) and max(embedded) == 1, watching.texts.most_common(3)
    assert watching.overlapped > 0  # some pass embedded while the one before it wrote


async def test_a_version_erased_while_its_pass_embeds_it_is_never_written(
    world: tuple[World, Watching],
) -> None:
    w, watching = world
    subject = f"S{unique('')[-8:]}X"
    canary = f"canary{subject}"
    watching.hold = canary
    await handle(
        w,
        [
            event(w.tenant, "other-1", "customer O1 prefers email", entity="customer:O1"),
            event(
                w.tenant, f"profile-{subject}", f"{canary} lives here", entity=f"customer:{subject}"
            ),
        ],
    )
    await asyncio.wait_for(watching.held.wait(), 60)  # the pass holds the subject's text
    result = await w.container.forgetter.forget(
        w.tenant, ErasureScope.entity(w.tenant, f"customer:{subject}"), "request 7", "admin"
    )
    assert result.counts.versions == 1 and not result.pending, result
    watching.release.set()
    await settle(w)

    stored = await index_state(w, watching)
    assert len(stored) == 1 and all(p["entity_id"] == "O1" for p in stored.values()), stored
    await w.container.index.flush(w.tenant)
    for needle in (subject.encode(), canary.encode()):
        assert raw_count(w.shard_dir(), needle) == 0, needle
    assert await w.container.repo.pending_index(None, limit=10) == []


async def test_batches_queued_behind_the_passes_in_flight_are_indexed_in_one_pass(
    world: tuple[World, Watching],
) -> None:
    w, watching = world
    watching.hold = "held-batch"
    texts = ["held-batch" if b == 0 else "batch" for b in range(7)]
    batches = [
        [event(w.tenant, f"b{b}-m{m}", f"{texts[b]} {b} note {m}", entity=f"customer:C{b}{m}")
         for m in range(3)]
        for b in range(7)
    ]  # fmt: skip
    await handle(w, batches[0])
    await asyncio.wait_for(watching.held.wait(), 60)  # the first pass embeds, held
    for batch in batches[1:]:  # the second pass waits to read, five batches in the queue
        await handle(w, batch)
    watching.release.set()
    await asyncio.wait_for(settle(w), 120)  # every batch counted done (drain returns)

    # Without coalescing, one pass (one embed call) per batch: 7.
    assert watching.calls == 3, watching.calls
    versions = [
        v
        for batch in batches
        for r in batch
        for v in await w.container.repo.chain(w.tenant, r["memory_key"])
    ]
    assert len(versions) == 21
    stored = await index_state(w, watching)
    assert set(stored) == {v.version_id for v in versions}
    for v in versions:
        assert unset(stored[v.version_id]) == unset(payload_of(v)), v.version_id
    assert max(watching.texts.values()) == 1, watching.texts.most_common(3)
    assert await w.container.repo.pending_index(None, limit=10) == []
