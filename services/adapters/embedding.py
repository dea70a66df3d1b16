"""SentenceTransformerEmbedder: texts → unit vectors with a local sentence-transformers model.

The model loads from a directory (the bundled MiniLM by default) with the hub switched off;
encoding runs in a worker thread so the event loop keeps serving, one batch at a time.
Must not import handlers or streams.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.ports import AdapterError

SMALL_BATCH = 2  # at most this many texts are encoded on one thread


class SentenceTransformerEmbedder:
    def __init__(self, model: Any, batch_size: int = 64, threads: int | None = None) -> None:
        self._model = model
        self._batch_size = batch_size
        self._threads = threads  # torch intra-op threads for batches; None: torch's default
        self._lock = asyncio.Lock()
        get_dimension = getattr(model, "get_embedding_dimension", None)
        get_dimension = get_dimension or model.get_sentence_embedding_dimension
        dimension = get_dimension()
        if dimension is None:
            raise AdapterError("the embedding model does not report its dimension")
        self._dimension = int(dimension)

    @classmethod
    def load(
        cls, path: Path, batch_size: int = 64, threads: int | None = None
    ) -> SentenceTransformerEmbedder:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:
            raise AdapterError(f"cannot load the embedding model from {path}: {exc}") from exc
        return cls(model, batch_size, threads)

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        # A query or two: one intra-op thread. Waking torch's thread pool from a worker thread
        # costs more than it saves on a single short text, and in a busy worker the pool's
        # second thread competes with the consumer's: measured 8 ms vs 12.5-22 ms for one query.
        threads = 1 if len(texts) <= SMALL_BATCH else self._threads
        if threads is None:
            return self._encode(texts)
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(threads)  # restored below; embed() runs one call at a time
        try:
            return self._encode(texts)
        finally:
            torch.set_num_threads(before)

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [v.tolist() for v in vectors]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        async with self._lock:
            return await asyncio.to_thread(self.embed_sync, texts)


class BatchingEmbedder:
    """Coalesces concurrent single-text calls (queries) into one model batch.

    Natural batching, no timer: when the model is idle a query is encoded at once; the queries
    that arrive while it runs wait for it and then go together as the next batch (up to
    ``max_batch``). Under load N queries become N / batch model calls; alone, a query waits
    for nothing (a 2 ms collection window cost every lone query 2 ms).
    """

    def __init__(self, inner: SentenceTransformerEmbedder, *, max_batch: int = 32) -> None:
        self._inner = inner
        self._max_batch = max_batch
        self._pending: list[tuple[str, asyncio.Future[list[float]]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.model_calls = 0  # coalesced batches sent to the model

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) != 1:
            return await self._inner.embed(texts)
        future: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()
        self._pending.append((texts[0], future))
        if self._drainer is None:
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return [await future]

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
                await self._run(batch)
        finally:
            self._drainer = None

    async def _run(self, batch: list[tuple[str, asyncio.Future[list[float]]]]) -> None:
        self.model_calls += 1
        try:
            vectors = await self._inner.embed([text for text, _ in batch])
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), vector in zip(batch, vectors, strict=True):
            if not future.done():
                future.set_result(vector)
