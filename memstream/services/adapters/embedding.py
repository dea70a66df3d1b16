"""SentenceTransformerEmbedder: texts → unit vectors with a local sentence-transformers model.

The model loads from a directory (the bundled MiniLM by default) with the hub switched off;
encoding runs in a worker thread so the event loop keeps serving, one forward pass at a time,
queries before the waiting passes of a batch. A model of the usual shape (a transformer, mean
pooling, normalisation) runs as one TorchScript graph (``TracedEncoder``), checked against the
eager model when it loads. Must not import handlers or streams.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream.services.ports import AdapterError

log = logging.getLogger(__name__)

SMALL_BATCH = 2  # at most this many texts are encoded on one thread, ahead of any batch
# Texts per forward pass. Measured with the bundled model on 2 cores: 8 → 288 texts/s, 16 → 307,
# 32 → 310, 64 → 256; and a query waits at most one pass (16 texts: ~50 ms, 64: ~250 ms).
BATCH_SIZE = 16
_PROBES = [
    "hi",
    "Did customer C-17 return the XR-500 headphones?",
    "客户申请退货，订单号 A-1001",
    "a long text " * 200,  # beyond the model's window: truncated alike
]


def _passes(texts: Sequence[str], size: int) -> list[list[int]]:
    """Indices of ``texts`` in passes of ``size``, longest first (less padding per pass)."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[start : start + size] for start in range(0, len(order), size)]


class TracedEncoder:
    """The model's transformer, mean pooling and normalisation traced into one TorchScript graph.

    The eager model re-enters Python, and takes the GIL, for every module of every layer: in
    the worker any busy thread stalls it (a lone query measured 9.5 ms alone and 533 ms beside
    a spinning Python thread), where the graph holds the GIL only to tokenise (6.4 and 57 ms).
    Batches run at the same speed either way. ``build`` returns None — and the eager model is
    used — for another shape of model, or when the graph's vectors differ from the eager ones.
    """

    def __init__(self, graph: Any, tokenizer: Any, max_length: int) -> None:
        self._graph = graph
        self._tokenizer = tokenizer
        self._max_length = max_length

    @classmethod
    def build(cls, model: Any) -> TracedEncoder | None:
        try:
            encoder = cls._trace(model)
            if encoder is None:
                return None
            expected = model.encode(
                _PROBES, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            got = encoder.encode(_PROBES, batch_size=len(_PROBES))
        except Exception as exc:  # any model this code does not know: the eager path
            log.info("embedding model not traced (%s); using it eagerly", exc)
            return None
        worst = min(
            sum(a * b for a, b in zip(x, y, strict=True))
            for x, y in zip(got, expected, strict=True)
        )
        if worst < 0.9999:
            log.warning("traced embedding model differs from the eager one (cosine %.5f)", worst)
            return None
        return encoder

    @classmethod
    def _trace(cls, model: Any) -> TracedEncoder | None:
        import torch

        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        config = modules[1].get_config_dict()
        mode = config.get("pooling_mode")
        legacy_mean = config.get("pooling_mode_mean_tokens") and not any(
            v
            for k, v in config.items()
            if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"
        )
        if mode != "mean" and not legacy_mean:
            return None
        transformer = getattr(modules[0], "auto_model", None) or modules[0].model

        class MeanPooled(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, ids: Any, mask: Any) -> Any:
                hidden = self.transformer(input_ids=ids, attention_mask=mask)[0]
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

        tokenizer = model.tokenizer
        # Traced on a padded batch: the attention mask is a real input of the graph.
        example = tokenizer(["a short one", "a longer example of a sentence"], **_PADDED)
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            graph = torch.jit.trace(  # type: ignore[no-untyped-call]
                MeanPooled().eval(), (example["input_ids"], example["attention_mask"])
            )
            graph = torch.jit.freeze(graph)
        return cls(graph, tokenizer, int(model.max_seq_length))

    def encode(self, texts: Sequence[str], batch_size: int) -> list[list[float]]:
        """Unit vectors of ``texts`` in order; longest first in batches (less padding)."""
        import torch

        vectors: list[list[float]] = [[] for _ in texts]
        with torch.inference_mode():
            for chosen in _passes(texts, batch_size):
                batch = self._tokenizer(
                    [texts[i] for i in chosen], max_length=self._max_length, **_PADDED
                )
                out = self._graph(batch["input_ids"], batch["attention_mask"]).tolist()
                for i, vector in zip(chosen, out, strict=True):
                    vectors[i] = vector
        return vectors


_PADDED: dict[str, Any] = {"return_tensors": "pt", "padding": True, "truncation": True}


class _ModelGate:
    """One forward pass at a time; queries that wait go before batches that wait.

    Ownership passes straight from the releaser to the next waiter, so nothing can slip in
    between; a waiter cancelled after it was handed the gate hands it on.
    """

    def __init__(self) -> None:
        self._busy = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._other: deque[asyncio.Future[None]] = deque()

    async def acquire(self, urgent: bool) -> None:
        if not self._busy and not self._urgent and (urgent or not self._other):
            self._busy = True
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._urgent if urgent else self._other).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # it was ours already: pass it on
            raise

    def release(self) -> None:
        for waiting in (self._urgent, self._other):
            while waiting:
                turn = waiting.popleft()
                if not turn.done():
                    turn.set_result(None)  # the gate stays busy: it is theirs now
                    return
        self._busy = False


class SentenceTransformerEmbedder:
    """Texts → unit vectors. ``embed`` runs one forward pass at a time in a worker thread: a
    batch pass by pass (``BATCH_SIZE`` texts, longest first), a query (``SMALL_BATCH`` texts at
    most) ahead of the batch passes still waiting — measured while the worker ingested 8,000
    events, a query's embedding waited up to 2.5 s behind the indexer's batches."""

    def __init__(
        self,
        model: Any,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
        traced: TracedEncoder | None = None,
    ) -> None:
        self._model = model
        self._batch_size = batch_size
        self._threads = threads  # torch intra-op threads for batches; None: torch's default
        self._traced = traced
        self._gate = _ModelGate()
        get_dimension = getattr(model, "get_embedding_dimension", None)
        get_dimension = get_dimension or model.get_sentence_embedding_dimension
        dimension = get_dimension()
        if dimension is None:
            raise AdapterError("the embedding model does not report its dimension")
        self._dimension = int(dimension)

    @classmethod
    def load(
        cls,
        path: Path,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
        *,
        trace: bool = True,
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
        return cls(model, batch_size, threads, TracedEncoder.build(model) if trace else None)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def traced(self) -> bool:
        """Whether texts go through the TorchScript graph (else the eager model)."""
        return self._traced is not None

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
        if self._traced is not None:
            return self._traced.encode(texts, self._batch_size)
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
        if len(texts) <= SMALL_BATCH:
            return await self._pass(texts, urgent=True)
        vectors: list[list[float]] = [[] for _ in texts]
        for chosen in _passes(texts, self._batch_size):
            done = await self._pass([texts[i] for i in chosen], urgent=False)
            for i, vector in zip(chosen, done, strict=True):
                vectors[i] = vector
        return vectors

    async def _pass(self, texts: Sequence[str], *, urgent: bool) -> list[list[float]]:
        await self._gate.acquire(urgent)
        try:
            return await asyncio.to_thread(self.embed_sync, texts)
        finally:
            self._gate.release()


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
