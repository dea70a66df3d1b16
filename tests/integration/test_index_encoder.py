"""The live index records which encoder produced it: a worker of other vectors is refused, and
``replay --index`` re-indexes every tenant with the new encoder, never a mix.

Real parts: the machine's PostgreSQL (a schema of its own), Qdrant Edge, the machine's Redis,
the bundled model through each encoder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memstream.bench.kit import synthetic_events
from memstream.ops.local import LocalMemstream
from memstream.ops.migrate import migrate
from memstream.ops.replay import feedback, tools
from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.adapters.postgres_encoder import PostgresIndexEncoder
from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
from memstream.services.bootstrap import EncoderMismatchError, load_embedder
from memstream.services.handlers.rebuild import rebuild_index as rebuild
from memstream.services.ports import AdapterError, VectorFilter
from memstream.services.settings import Settings
from tests.conftest import MACHINE_REDIS, drop_schema, unique, with_schema


async def rebuild_index(settings: Settings, tenants: list[str] | None, batch: int) -> None:
    """``memstream replay --index [--tenant …]`` in process."""
    assert settings.postgres_dsn is not None
    scope = tuple(tenants) if tenants else None
    await rebuild(tools(settings), feedback(), settings.postgres_dsn, scope, batch)


@pytest.fixture
def dsn(machine_postgres_dsn: str) -> Iterator[str]:
    schema = unique("ms_")
    dsn = with_schema(machine_postgres_dsn, schema)
    migrate(dsn)
    yield dsn
    drop_schema(machine_postgres_dsn, schema)


async def _recorded(dsn: str) -> tuple[str, str] | None:
    repo = await PostgresMemoryRepository.connect(dsn)
    try:
        found = await PostgresIndexEncoder(repo.pool).recorded()
    finally:
        await repo.close()
    return None if found is None else (found.vectors, found.encoder)


async def _top_score(settings: Settings, tenant: str, text: str) -> float:
    """The best score of ``text`` embedded by the settings' encoder against the index."""
    embedder = await asyncio.to_thread(load_embedder, settings)
    (vector,) = await embedder.embed([text])
    index = QdrantEdgeIndex(settings.vector_root, embedder.dimension)
    try:
        (hit,) = await index.search(tenant, vector, VectorFilter(), 1)
    finally:
        await index.close()
    return hit.score


async def test_other_vectors_are_refused_until_every_tenant_is_reindexed(
    dsn: str, data_dir: Path, tenant: str
) -> None:
    base = Settings(data_dir=data_dir, postgres_dsn=dsn, redis_url=MACHINE_REDIS, web_port=0)
    torch, onnx, int8 = (replace(base, encoder=e) for e in ("torch", "onnx", "onnx-int8"))
    events = synthetic_events(tenant, 8)
    for raw in events:  # one version per memory: every point is current
        raw["memory_key"] = raw["event_id"]
    local = await LocalMemstream.start(torch)
    try:
        report = await local.ingest(events)
        assert len(report.recorded) == 8 and not report.dead
    finally:
        await local.stop()
    assert await _recorded(dsn) == ("fp32", "torch")
    text = events[3]["content"]
    assert await _top_score(torch, tenant, text) > 0.9999

    # fp32 ONNX writes the same vectors: the index stays as it is.
    local = await LocalMemstream.start(onnx)
    assert local.container.embedder.encoder == "onnx"  # type: ignore[attr-defined]
    await local.stop()

    # int8 writes other vectors: refused at start, naming the fix; nothing was changed.
    with pytest.raises(EncoderMismatchError, match=r"replay --index"):
        await LocalMemstream.start(int8)
    # Re-indexing some tenants only would leave the others' vectors of the old encoder.
    with pytest.raises(AdapterError, match="every tenant"):
        await rebuild_index(int8, [tenant], 64)
    assert await _recorded(dsn) == ("fp32", "torch")

    await rebuild_index(int8, None, 64)
    assert await _recorded(dsn) == ("int8", "onnx-int8")
    # The points are int8 vectors now: close to the torch one, no longer equal. (int8 vectors
    # also depend a little on the batch a text was encoded in: activations are quantised per
    # pass, so the same text alone scores ~0.985 against itself indexed in a batch.)
    after = await _top_score(torch, tenant, text), await _top_score(int8, tenant, text)
    assert after[0] < 0.999 and after[1] > 0.95, after
    local = await LocalMemstream.start(int8)
    await local.stop()
    # And now the fp32 encoders are the ones refused.
    with pytest.raises(EncoderMismatchError, match="int8 vectors"):
        await LocalMemstream.start(torch)
