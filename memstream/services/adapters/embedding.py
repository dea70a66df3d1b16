"""SentenceTransformerEmbedder: texts → unit vectors with a local sentence-transformers model.

The model loads from a directory (the bundled MiniLM by default) with the hub switched off, and
runs through one of three encoders: ONNX Runtime (``onnx_encoder``, fp32 or int8, exported once
and cached), the model traced into one TorchScript graph, or the eager model (``torch_encoder``).
Encoding runs in worker threads so the event loop keeps serving: ONNX passes on one-thread
lanes, one per core (torch: one pass at a time); queries go before the waiting passes of a batch,
and while queries arrive a batch leaves them a lane (on one lane: small passes with pauses
between them), a share of the CPU left to the queries' other stages. Must not import handlers
or streams.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from memstream.services.adapters.encoder_common import (
    PROBES,
    longest_first,
    model_digest,
    offline,
    passes,
)
from memstream.services.settings import ENCODERS

__all__ = [
    "BATCH_SIZE",
    "PROBES",
    "BatchingEmbedder",
    "SentenceTransformerEmbedder",
    "longest_first",
    "model_digest",
    "offline",
    "passes",
]

SMALL_BATCH = 2  # at most this many texts are encoded on one thread, ahead of any batch
# Texts per forward pass. Measured with the bundled model on 2 cores: 8 → 288 texts/s, 16 → 307,
# 32 → 310, 64 → 256; and a query waits at most one pass (16 texts: ~50 ms, 64: ~250 ms).
BATCH_SIZE = 16
# While queries arrive (one in the last QUERY_WINDOW seconds) a batch leaves one lane to them;
# with a single lane it runs in passes of QUIET_BATCH texts and, after each, waits QUIET_SHARE
# of the time the pass took. Either way a query waits behind at most one small pass (none with
# a lane of its own), and its search, fusion and Postgres reads get a core.
QUERY_WINDOW = 1.0
QUIET_BATCH = 4
QUIET_SHARE = 1.0


class Encoder(Protocol):
    """One model run: unit vectors of texts, in order. ``kind``: onnx, onnx-int8, torch (the
    TorchScript graph) or eager."""

    @property
    def kind(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def encode(
        self, texts: Sequence[str], batch_size: int, threads: int | None
    ) -> list[list[float]]: ...


class _ModelGate:
    """``lanes`` forward passes at a time; queries that wait go before batches that wait.

    A lane passes straight from the releaser to the next waiter, so nothing can slip in
    between; a waiter cancelled after it was handed a lane hands it on.
    """

    def __init__(self, lanes: int = 1) -> None:
        self._free = lanes
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._other: deque[asyncio.Future[None]] = deque()

    async def acquire(self, urgent: bool) -> None:
        if self._free and not self._urgent and (urgent or not self._other):
            self._free -= 1
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
                    turn.set_result(None)  # the lane stays taken: it is theirs now
                    return
        self._free += 1


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class SentenceTransformerEmbedder:
    """Texts → unit vectors. ``embed`` runs forward passes in worker threads, ``lanes`` at a
    time: a batch pass by pass (``BATCH_SIZE`` texts, longest first), a query (``SMALL_BATCH``
    texts at most, or ``urgent``) ahead of the batch passes still waiting — measured while the
    worker ingested 8,000 events, a query's embedding waited up to 2.5 s behind the indexer's
    batches. While queries arrive, a batch backs off: it leaves one lane to them, or with one
    lane runs passes of ``QUIET_BATCH`` and pauses after each.

    Lanes (ONNX Runtime): as many one-thread passes at once as ``threads`` (0: one per usable
    core), rather than one pass at a time split over every core. A pass split over two threads
    waits at each operator for the slower thread, and on cores shared with PostgreSQL, the
    broker and the worker's own Python one of them is often preempted: measured on 2 cores
    beside a process busy half a core, 183-188 texts/s with two one-thread lanes against
    149-162 with one two-thread pass (CPU per text 8.4-8.6 ms against 9.7-10.6); alone,
    223-234 against 194-225. A lone query on one thread takes ~1.4 ms more (5.6 against
    4.2 ms), and under ingest it no longer waits for a batch pass while a lane is free."""

    def __init__(
        self,
        encoder: Encoder,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
        *,
        lanes: int = 1,
    ) -> None:
        self._encoder = encoder
        self._batch_size = batch_size
        self._threads = threads  # torch intra-op threads for batches; None: torch's default
        self.lanes = max(1, lanes)
        self._gate = _ModelGate(self.lanes)
        self._last_query = -QUERY_WINDOW  # monotonic time of the last urgent pass asked
        self.pass_sizes: deque[int] = deque(maxlen=256)  # batch passes, newest last

    @classmethod
    def load(
        cls,
        path: Path,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
        *,
        trace: bool = True,
        encoder: str = "torch",
        cache: Path | None = None,
        lanes: bool = True,
    ) -> SentenceTransformerEmbedder:
        """The model in ``path`` through ``encoder`` (one of ENCODERS). An ONNX encoder is
        exported into ``cache`` the first time; when it cannot be used (onnxruntime missing, a
        model of another shape, vectors that differ) the torch encoder answers, logged once.
        ONNX runs ``threads`` one-thread lanes (0 or None: one per usable core), or with
        ``lanes=False`` one pass at a time on that many threads; torch one pass at a time."""
        if encoder not in ENCODERS:
            raise ValueError(f"encoder {encoder!r}: use one of {', '.join(ENCODERS)}")
        offline()
        if encoder != "torch":
            from memstream.services.adapters.onnx_encoder import build_onnx

            if cache is None:
                raise ValueError(f"the {encoder} encoder needs a cache directory")
            count = (threads or usable_cores()) if lanes else 1
            onnx = build_onnx(path, cache, encoder, 1 if count > 1 else threads or 0)
            if onnx is not None:
                return cls(onnx, batch_size, threads, lanes=count)
        from memstream.services.adapters.torch_encoder import load_torch

        return cls(load_torch(path, trace=trace), batch_size, threads)

    @property
    def dimension(self) -> int:
        return self._encoder.dimension

    @property
    def encoder(self) -> str:
        """Which encoder runs: onnx, onnx-int8, torch (TorchScript graph) or eager."""
        return self._encoder.kind

    @property
    def vectors(self) -> str:
        """The vectors' kind, as the index records it: every encoder but int8 gives the same
        fp32 vectors (cosine ≥ 0.9999, checked at load), so switching among them is safe."""
        return "int8" if self._encoder.kind == "onnx-int8" else "fp32"

    @property
    def traced(self) -> bool:
        """Whether texts go through a compiled graph (TorchScript or ONNX), else the eager model."""
        return self._encoder.kind != "eager"

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        # A query or two: one intra-op thread. Waking torch's thread pool from a worker thread
        # costs more than it saves on a single short text, and in a busy worker the pool's
        # second thread competes with the consumer's: measured 8 ms vs 12.5-22 ms for one query.
        # (ONNX Runtime's threads are the session's, fixed when it opens.)
        threads = 1 if len(texts) <= SMALL_BATCH else self._threads
        if self.lanes == 1 or len(texts) <= self._batch_size:
            return self._encoder.encode(texts, self._batch_size, threads)
        # Many texts at once (a bench, a bulk embedding): the passes on every lane.
        vectors: list[list[float]] = [[] for _ in texts]
        chosen = passes(texts, self._batch_size)
        with ThreadPoolExecutor(self.lanes, thread_name_prefix="embed-lane") as pool:
            runs = pool.map(
                lambda c: self._encoder.encode([texts[i] for i in c], self._batch_size, threads),
                chosen,
            )
            for indices, done in zip(chosen, runs, strict=True):
                for i, vector in zip(indices, done, strict=True):
                    vectors[i] = vector
        return vectors

    async def embed(self, texts: Sequence[str], *, urgent: bool = False) -> list[list[float]]:
        """Unit vectors of ``texts`` in order; ``urgent`` (a query, or queries coalesced) goes
        as one pass ahead of waiting batch passes, as do texts of SMALL_BATCH or fewer. A batch
        runs its passes on up to ``lanes`` lanes at once, longest texts first."""
        if not texts:
            return []
        if urgent or len(texts) <= SMALL_BATCH:
            self._last_query = time.monotonic()
            return await self._pass(texts, urgent=True)
        vectors: list[list[float]] = [[] for _ in texts]
        order = longest_first(texts)
        taken = 0

        async def lane(index: int) -> None:
            nonlocal taken
            while taken < len(order):
                quiet = self._queries_active()
                if quiet and index >= self.lanes - 1 > 0:
                    return  # while queries arrive one lane is theirs
                small = quiet and self.lanes == 1
                chosen = order[taken : taken + (QUIET_BATCH if small else self._batch_size)]
                taken += len(chosen)
                began = time.monotonic()
                done = await self._pass([texts[i] for i in chosen], urgent=False)
                self.pass_sizes.append(len(chosen))
                for i, vector in zip(chosen, done, strict=True):
                    vectors[i] = vector
                if taken < len(order) and self.lanes == 1 and self._queries_active():
                    await asyncio.sleep((time.monotonic() - began) * QUIET_SHARE)

        count = min(self.lanes, -(-len(texts) // self._batch_size))
        if count == 1:
            await lane(0)
        else:
            async with asyncio.TaskGroup() as lanes:  # one failing pass stops the others
                for i in range(count):
                    lanes.create_task(lane(i))
        return vectors

    def _queries_active(self) -> bool:
        return time.monotonic() - self._last_query < QUERY_WINDOW

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
            vectors = await self._inner.embed([text for text, _ in batch], urgent=True)
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), vector in zip(batch, vectors, strict=True):
            if not future.done():
                future.set_result(vector)
