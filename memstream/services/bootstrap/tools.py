"""The composition root, the tools' half: what the command line's one-shot commands build
(replay, bench, audit, history, rules, forget): repositories, status readers, rebuild and
erasure tools, the offline index.

Nothing here runs at import.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memstream.schemas import codec
from memstream.services.adapters import postgres_bench_erasure, postgres_bench_rescore
from memstream.services.adapters.embedding import (
    SentenceTransformerEmbedder,
)
from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.adapters.postgres_audit import PostgresQueryLog
from memstream.services.adapters.postgres_dead_letters import PostgresDeadLetters
from memstream.services.adapters.postgres_encoder import PostgresIndexEncoder
from memstream.services.adapters.postgres_erasure import PostgresErasure
from memstream.services.adapters.postgres_ledger import PostgresLedger, schema_dsn
from memstream.services.adapters.postgres_rules import PostgresRules
from memstream.services.adapters.postgres_status import PostgresStatus, server_version
from memstream.services.handlers.forget import Forgetter
from memstream.services.handlers.rebuild import RebuildTools
from memstream.services.handlers.rescore import Rescorer
from memstream.services.ports import (
    AdapterError,
    Embedder,
    SilentSink,
    TopicReader,
    VectorIndex,
)
from memstream.services.settings import Settings

if TYPE_CHECKING:
    from memstream.services.adapters.redis_cache import RedisCache
    from memstream.services.adapters.shard_budget import ShardBudget
from memstream.services.bootstrap.worker import (
    build_index,
    index_encoder,
    load_embedder,
    resolve_model_path,
    utcnow,
)


def model_dimension(settings: Settings) -> int:
    """The model's vector size, read from its sentence-transformers files when they say it
    (Transformer + Pooling [+ Normalize]); else by loading the model."""
    path = resolve_model_path(settings)
    try:
        modules = json.loads((path / "modules.json").read_text())
        kinds = {m["type"].rsplit(".", 1)[-1] for m in modules}
        if kinds <= {"Transformer", "Pooling", "Normalize"}:
            pooling = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
            config = json.loads((path / pooling / "config.json").read_text())
            return int(config["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, StopIteration):
        pass
    return int(load_embedder(settings).dimension)


def copy_index(root: Path, dimension: int) -> VectorIndex:
    """Qdrant Edge shards under ``root``, writes not flushed one by one (a killed process
    loses nothing, the WAL is in the page cache; ``close`` flushes): rebuilds and benches. No
    HNSW build (a tool's run would give it up at its end): the worker's next write starts it."""
    from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex

    return QdrantEdgeIndex(root, dimension, flush_writes=False, build_from=0)


def offline_index(settings: Settings, dimension: int) -> VectorIndex:
    """The live index for an offline tool: the Qdrant server, or the Edge shards (no worker
    holds them) opened as ``copy_index`` does."""
    if settings.qdrant_url:
        return build_index(settings, dimension)
    return copy_index(settings.vector_root, dimension)


async def open_repository(dsn: str, max_size: int = 8) -> PostgresMemoryRepository:
    return await PostgresMemoryRepository.connect(dsn, max_size=max_size)


def event_status(dsn: str) -> PostgresStatus:
    """Where published events stand (a context manager: one synchronous connection)."""
    return PostgresStatus.connect(dsn)


def dead_letters(dsn: str) -> PostgresDeadLetters:
    """The dead-letter table for ``memstream dlq`` (a context manager: one connection)."""
    return PostgresDeadLetters.connect(dsn)


def postgres_version(dsn: str, timeout: float) -> str:
    """The server's version; AdapterError when it cannot be reached (the health check)."""
    return server_version(dsn, timeout)


def rebuild_tools(settings: Settings, migrate: Callable[[str], object]) -> RebuildTools:
    """Everything ``memstream replay`` needs (``migrate``: the schema migrations runner)."""

    def topic_reader(broker: str, topic: str) -> TopicReader:
        from memstream.services.adapters.kafka_reader import KafkaTopicReader

        return KafkaTopicReader(broker, topic, settings.kafka)

    return RebuildTools(
        open_ledger=PostgresLedger.connect,
        open_repo=open_repository,
        load_embedder=lambda: load_embedder(settings),
        dimension=lambda: model_dimension(settings),
        live_index=lambda dimension: offline_index(settings, dimension),
        copy_index=copy_index,
        schema_dsn=schema_dsn,
        migrate=migrate,
        decode=lambda data: codec.decode("MemoryEvent", data),
        topic_reader=topic_reader,
        encoder_switch=lambda dsn, embedder, partial: _encoder_switch(
            settings, dsn, embedder, partial
        ),
    )


async def _encoder_switch(
    settings: Settings, dsn: str, embedder: Embedder, partial: bool
) -> Callable[[], Awaitable[None]]:
    """``replay --index``: refuse a partial re-index to other vectors than the index records;
    the call returned records the encoder (once every tenant is re-indexed)."""

    async def nothing() -> None:
        return None

    if not isinstance(embedder, SentenceTransformerEmbedder):
        return nothing
    current = index_encoder(settings, embedder)
    repo = await PostgresMemoryRepository.connect(dsn, min_size=1, max_size=1)
    try:
        recorded = await PostgresIndexEncoder(repo.pool).recorded()
    finally:
        await repo.close()
    if partial and recorded is not None and not recorded.same_vectors(current):
        raise AdapterError(
            f"the index holds {recorded.describe()}, the encoder now writes "
            f"{current.describe()}: re-index every tenant (drop --tenant) to switch"
        )

    async def record() -> None:
        repo = await PostgresMemoryRepository.connect(dsn, min_size=1, max_size=1)
        try:
            await PostgresIndexEncoder(repo.pool).record(current, replace=True)
        finally:
            await repo.close()

    return record


@contextlib.asynccontextmanager
async def offline_rescorer(dsn: str, clock: Callable[[], datetime]) -> AsyncIterator[Rescorer]:
    """A Rescorer over the database ``dsn``, announcing nothing (``bench replay``, ``bench
    rescore``)."""
    repo = await PostgresMemoryRepository.connect(dsn)
    try:
        yield Rescorer(PostgresRules(repo.pool), SilentSink().scored, clock)
    finally:
        await repo.close()


@dataclass
class Stores:
    """Postgres (and Redis, when named) for a one-shot command: ``audit``, ``history``,
    ``rules``, ``forget``, the benches."""

    repo: PostgresMemoryRepository
    rules: PostgresRules
    query_log: PostgresQueryLog
    cache: RedisCache | None
    erasure: PostgresErasure


@contextlib.asynccontextmanager
async def stores(dsn: str, redis_url: str | None = None, *, pool: int = 1) -> AsyncIterator[Stores]:
    repo = await PostgresMemoryRepository.connect(dsn, min_size=1, max_size=pool)
    cache = None
    if redis_url:
        from memstream.services.adapters.redis_cache import RedisCache

        cache = RedisCache.from_url(redis_url)
    try:
        yield Stores(
            repo,
            PostgresRules(repo.pool),
            PostgresQueryLog(repo.pool),
            cache,
            PostgresErasure(repo.pool),
        )
    finally:
        if cache is not None:
            await cache.close()
        await repo.close()


@dataclass
class Forgetting:
    """``forgetter`` over one stack; ``lock_wait(tenant)``: how long an ingest of the tenant
    waits for the erasure lock, by the server's clock (``bench erasure``'s probe)."""

    forgetter: Forgetter
    lock_wait: Callable[[str], Awaitable[float]]


@contextlib.asynccontextmanager
async def offline_forgetter(
    settings: Settings,
    index: VectorIndex,
    *,
    pool: int = 2,
    cache_timeout: float | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> AsyncIterator[Forgetting]:
    """The erasure handler over the stack named by ``settings`` (endpoints resolved) and
    ``index`` (closed on exit): ``memstream forget``, ``bench erasure``."""
    from memstream.services.adapters.redis_cache import RedisCache

    assert settings.postgres_dsn is not None and settings.redis_url is not None
    repo = await PostgresMemoryRepository.connect(settings.postgres_dsn, min_size=1, max_size=pool)
    cache = (
        RedisCache.from_url(settings.redis_url)
        if cache_timeout is None
        else RedisCache.from_url(settings.redis_url, socket_timeout=cache_timeout)
    )
    try:
        forgetter = Forgetter(PostgresErasure(repo.pool), index, cache, clock)
        yield Forgetting(
            forgetter, lambda tenant: postgres_bench_erasure.lock_wait(repo.pool, tenant)
        )
    finally:
        await cache.close()
        try:
            await index.close()
        finally:
            await repo.close()


def erasure_bench_store(dsn: str, tenant: str, other: str, total: int, subject: int) -> None:
    """``bench erasure``'s store, written in bulk (adapters.postgres_bench_erasure)."""
    postgres_bench_erasure.write_store(dsn, tenant, other, total, subject)


async def erasure_bench_points(
    dsn: str, tenant: str, limit: int
) -> list[tuple[str, str, list[str]]]:
    """(version_id, memory_key, anchors) of the bench tenant's first ``limit`` versions."""
    return await postgres_bench_erasure.points(dsn, tenant, limit)


def rescore_bench_store(dsn: str, tenant: str, total: int) -> None:
    """``bench rescore``'s store, written in bulk (adapters.postgres_bench_rescore)."""
    postgres_bench_rescore.write_store(dsn, tenant, total)


def database_bytes(dsn: str) -> int:
    """The database's size on disk (``bench scale``)."""
    from memstream.services.adapters.postgres_sizes import database_bytes as size

    return size(dsn)


def shard_budget(override: int = 0) -> ShardBudget:
    """The open-shard limit of this process (``bench scale`` states it)."""
    from memstream.services.adapters.shard_budget import shard_budget as budget

    return budget(override)
