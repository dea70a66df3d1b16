"""The embedding adapters on the bundled model (no stand-in): vectors, batching of queries,
the ONNX encoders against the torch one, and the scheduling of queries beside batches."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from memstream.services.adapters.embedding import (
    QUIET_BATCH,
    SMALL_BATCH,
    BatchingEmbedder,
    SentenceTransformerEmbedder,
    usable_cores,
)
from memstream.services.adapters.onnx_encoder import OnnxEncoder, build_onnx, cached_export
from memstream.services.adapters.torch_encoder import EagerEncoder, TracedEncoder
from memstream.services.settings import Settings
from tests.e2e.processes import guard

TEXTS = [
    "ok",
    "Which USB-C charger did customer C-15 order last?",
    "订单号A-2002已发货，客户说耳机是红色的",
    "The K2 kettle has a two-year warranty. " * 40,  # truncated to the model's window
]


@pytest.fixture(scope="module")
def embedder(model_path: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder.load(model_path)


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """The user's model cache, as the worker uses it: exports are keyed by the model's hash and
    the libraries' versions, so a cached one is the one this code would export."""
    return Settings().model_cache_dir


@pytest.fixture(scope="module")
def onnx(model_path: Path, model_cache: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder.load(model_path, encoder="onnx", cache=model_cache)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_unit_vectors_of_the_model_dimension(embedder: SentenceTransformerEmbedder) -> None:
    one, two = await embedder.embed(["a refund for the XR-500", "退货 耳机"])
    assert len(one) == len(two) == embedder.dimension == 384
    assert math.isclose(cosine(one, one), 1.0, abs_tol=1e-5)
    assert await embedder.embed([]) == []


async def test_concurrent_queries_share_model_calls_and_get_their_own_vectors(
    embedder: SentenceTransformerEmbedder,
) -> None:
    batching = BatchingEmbedder(embedder, max_batch=4)
    texts = [f"did customer C-{i} return the kettle?" for i in range(10)]
    alone = [(await embedder.embed([t]))[0] for t in texts]
    # A lone query goes to the model at once: one call, no waiting for company.
    assert await batching.embed([texts[0]]) == [pytest.approx(alone[0], abs=1e-5)]
    assert batching.model_calls == 1
    together = await asyncio.gather(*(batching.embed([t]) for t in texts))
    for (vector,), expected in zip(together, alone, strict=True):
        assert cosine(vector, expected) > 0.9999
    # All ten are queued before the model is free: batches of at most four (4, 4, 2).
    assert batching.model_calls == 1 + 3
    # Several texts at once bypass the coalescing and are one batch of their own.
    assert len(await batching.embed(texts[:3])) == 3 and batching.model_calls == 4


async def test_the_bundled_model_runs_traced_and_gives_the_eager_vectors(
    embedder: SentenceTransformerEmbedder, model_path: Path
) -> None:
    assert embedder.traced and embedder.encoder == "torch"
    eager = SentenceTransformerEmbedder.load(model_path, trace=False)
    assert not eager.traced and eager.encoder == "eager"
    texts = TEXTS
    # One batch (padded to the longest) and one at a time: the same vectors as the eager model.
    for got in (await embedder.embed(texts), [(await embedder.embed([t]))[0] for t in texts]):
        for vector, expected in zip(got, await eager.embed(texts), strict=True):
            assert cosine(vector, expected) > 0.9999


def test_a_model_of_another_shape_is_used_eagerly(
    embedder: SentenceTransformerEmbedder, model_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:  # sentence-transformers before 6
        from sentence_transformers.models import Pooling

    bundled = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
    cls_pooled = SentenceTransformer(  # the bundled transformer, pooled on [CLS] instead
        modules=[bundled[0], Pooling(embedder.dimension, pooling_mode="cls")], device="cpu"
    )
    assert TracedEncoder.build(cls_pooled) is None
    other = SentenceTransformerEmbedder(EagerEncoder(cls_pooled))
    assert not other.traced
    assert len(other.embed_sync(["a question"])[0]) == embedder.dimension


async def test_a_query_is_embedded_between_the_passes_of_a_batch(
    embedder: SentenceTransformerEmbedder,
) -> None:
    texts = [f"customer C-{i} returned the kettle bought on day {i}" for i in range(160)]
    batch = asyncio.ensure_future(embedder.embed(texts))  # ten passes of BATCH_SIZE
    await asyncio.sleep(0.01)  # the batch holds the model
    (query,) = await embedder.embed(["where is my order?"])
    assert not batch.done()  # it went before the batch's remaining passes
    vectors = await batch
    assert len(vectors) == 160 and len(query) == embedder.dimension
    # Passes are formed longest first; the vectors still come back in the order asked.
    for i in (0, 17, 159):
        (alone,) = await embedder.embed([texts[i]])
        assert cosine(vectors[i], alone) > 0.9999


async def _queries_beside_a_batch(
    embedder: SentenceTransformerEmbedder, texts: list[str], pause: float
) -> int:
    """A query (the batch starts in quiet mode), then the batch, with a query every ``pause``
    seconds until it is done (``pass_sizes`` cleared before it); how many were answered."""
    await embedder.embed(["is my refund through?"])
    embedder.pass_sizes.clear()
    batch = asyncio.ensure_future(embedder.embed(texts))
    answered = 0
    while not batch.done():
        await embedder.embed([f"where is order A-{answered}?"])
        answered += 1
        await asyncio.sleep(pause)
    await batch
    return answered


def _worst(got: list[list[float]], expected: list[list[float]]) -> float:
    return min(cosine(a, b) for a, b in zip(got, expected, strict=True))


async def test_the_onnx_encoder_gives_the_torch_vectors(
    onnx: SentenceTransformerEmbedder, embedder: SentenceTransformerEmbedder
) -> None:
    assert (onnx.encoder, onnx.vectors, onnx.dimension) == ("onnx", "fp32", 384)
    many = [
        f"customer C-{i} returned the kettle bought on day {i}" * (1 + i % 7) for i in range(60)
    ]
    for texts in (TEXTS, many):
        expected = await embedder.embed(texts)
        assert _worst(await onnx.embed(texts), expected) > 0.9999  # passes, padded together
        alone = [(await onnx.embed([t]))[0] for t in texts]  # one text per run, unpadded
        assert _worst(alone, expected) > 0.9999


async def test_the_int8_encoder_is_close_and_says_its_vectors_differ(
    model_path: Path, model_cache: Path, embedder: SentenceTransformerEmbedder
) -> None:
    int8 = SentenceTransformerEmbedder.load(model_path, encoder="onnx-int8", cache=model_cache)
    assert (int8.encoder, int8.vectors, int8.dimension) == ("onnx-int8", "int8", 384)
    got, expected = await int8.embed(TEXTS), await embedder.embed(TEXTS)
    cosines = [cosine(a, b) for a, b in zip(got, expected, strict=True)]
    assert min(cosines) > 0.95 and sum(cosines) / len(cosines) > 0.97, cosines
    fp32 = cached_export(model_path, model_cache)
    assert (fp32.parent / "model-int8.onnx").stat().st_size < fp32.stat().st_size / 3


def test_an_export_is_cached_once_and_a_differing_one_is_not_used(
    model_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "models"
    first = SentenceTransformerEmbedder.load(model_path, encoder="onnx", cache=cache)
    assert first.encoder == "onnx"
    (export,) = cache.iterdir()  # one directory, keyed by hash; no temporary left behind
    assert {p.name for p in export.iterdir()} == {"model.onnx", "probes.json"}
    written = (export / "model.onnx").stat().st_mtime_ns
    assert SentenceTransformerEmbedder.load(model_path, encoder="onnx", cache=cache).encoder == (
        "onnx"
    )
    assert (export / "model.onnx").stat().st_mtime_ns == written  # reused, not exported again
    # The torch model's probe vectors, as recorded at export, now disagree with the session:
    # the ONNX encoder is not used, and one line says so.
    probes = json.loads((export / "probes.json").read_text())
    (export / "probes.json").write_text(json.dumps([[-x for x in v] for v in probes]))
    with caplog.at_level("WARNING"):
        fallen = SentenceTransformerEmbedder.load(model_path, encoder="onnx", cache=cache)
    assert fallen.encoder == "torch"
    lines = [r.getMessage() for r in caplog.records if "encoder" in r.getMessage()]
    assert len(lines) == 1 and "differs from the torch model" in lines[0], lines


def test_without_onnxruntime_the_torch_encoder_answers(model_path: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import logging, sys
        sys.modules["onnxruntime"] = None  # not installed
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        from pathlib import Path
        from memstream.services.adapters.embedding import SentenceTransformerEmbedder
        e = SentenceTransformerEmbedder.load(
            Path({str(model_path)!r}), encoder="onnx", cache=Path({str(tmp_path)!r})
        )
        print("encoder", e.encoder, len(e.embed_sync(["where is my order?"])[0]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=guard(300),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["encoder", "torch", "384"], done.stdout
    lines = [line for line in done.stderr.splitlines() if "encoder" in line]
    assert len(lines) == 1 and "onnx encoder unavailable" in lines[0], done.stderr
    assert not list(tmp_path.iterdir())  # nothing exported


def test_a_model_of_another_shape_is_not_exported(model_path: Path, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:  # sentence-transformers before 6
        from sentence_transformers.models import Pooling

    bundled = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
    SentenceTransformer(modules=[bundled[0], Pooling(384, pooling_mode="cls")], device="cpu").save(
        str(tmp_path / "cls")
    )
    other = SentenceTransformerEmbedder.load(tmp_path / "cls", encoder="onnx", cache=tmp_path / "c")
    assert other.encoder == "eager" and not (tmp_path / "c").exists()


async def test_while_queries_arrive_a_batch_on_one_lane_runs_in_small_passes(
    model_path: Path, model_cache: Path
) -> None:
    onnx = SentenceTransformerEmbedder.load(
        model_path, encoder="onnx", cache=model_cache, lanes=False
    )
    texts = [f"customer C-{i} returned the kettle bought on day {i}" for i in range(96)]
    answered = await _queries_beside_a_batch(onnx, texts, pause=0.05)
    assert answered >= 2  # queries were answered between the batch's passes
    assert max(onnx.pass_sizes) == QUIET_BATCH and sum(onnx.pass_sizes) == len(texts)
    # Queries gone (none in the last second): full passes again.
    await asyncio.sleep(1.1)
    onnx.pass_sizes.clear()
    await onnx.embed(texts)
    assert max(onnx.pass_sizes) == 16


def test_onnx_runtime_lets_other_threads_run_while_it_encodes(
    onnx: SentenceTransformerEmbedder,
) -> None:
    import threading

    texts = ["The K2 kettle has a two-year warranty. " * 40] * 48  # one long pass
    started = time.perf_counter()
    onnx.embed_sync(texts)
    alone = time.perf_counter() - started
    gaps: list[float] = []
    runner = threading.Thread(target=onnx.embed_sync, args=(texts,))
    runner.start()
    last = time.perf_counter()
    while runner.is_alive():
        time.sleep(0.002)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    runner.join()
    # A run holding the GIL would keep this thread from waking for the whole pass.
    assert len(gaps) > 10 and max(gaps) < alone / 2, (alone, max(gaps))


class _Overlaps:
    """The real ONNX encoder, counting how many of its runs are under way at once (and how
    many of those are a batch's: more than SMALL_BATCH texts)."""

    def __init__(self, inner: OnnxEncoder) -> None:
        self._inner = inner
        self.kind, self.dimension = inner.kind, inner.dimension
        self._lock = threading.Lock()
        self.running = self.batches = self.most = self.most_batches = 0

    def encode(
        self, texts: Sequence[str], batch_size: int, threads: int | None = None
    ) -> list[list[float]]:
        batch = len(texts) > SMALL_BATCH
        with self._lock:
            self.running += 1
            self.batches += batch
            self.most = max(self.most, self.running)
            self.most_batches = max(self.most_batches, self.batches)
        try:
            return self._inner.encode(texts, batch_size, threads)
        finally:
            with self._lock:
                self.running -= 1
                self.batches -= batch


def test_onnx_runs_one_thread_lanes_one_per_core_unless_told(
    model_path: Path, model_cache: Path, onnx: SentenceTransformerEmbedder
) -> None:
    assert onnx.lanes == usable_cores()
    load = SentenceTransformerEmbedder.load
    assert load(model_path, threads=3, encoder="onnx", cache=model_cache).lanes == 3
    single = load(model_path, threads=2, encoder="onnx", cache=model_cache, lanes=False)
    assert single.lanes == 1 and single.encoder == "onnx"
    assert load(model_path, threads=2).lanes == 1  # torch: one pass at a time


async def test_a_batch_runs_its_passes_on_every_lane_and_a_query_takes_the_next_free_one(
    model_path: Path, model_cache: Path, embedder: SentenceTransformerEmbedder
) -> None:
    session = build_onnx(model_path, model_cache, "onnx", 1)
    assert session is not None
    runs = _Overlaps(session)
    lanes = SentenceTransformerEmbedder(runs, lanes=2)
    texts = [
        f"customer C-{i} returned the kettle bought on day {i}" * (1 + i % 5) for i in range(96)
    ]
    expected = await embedder.embed(texts)  # torch, one pass at a time
    got = await lanes.embed(texts)
    assert runs.most == 2 and sum(lanes.pass_sizes) == len(texts)
    assert _worst(got, expected) > 0.9999  # in the order asked, whichever lane ran them
    assert _worst(lanes.embed_sync(texts), expected) > 0.9999
    # Both lanes busy with a batch: a query waits for one pass, not for the batch, and never
    # runs as a third.
    runs.most = 0
    batch = asyncio.ensure_future(lanes.embed(texts * 2))
    await asyncio.sleep(0.01)
    (query,) = await lanes.embed(["where is my order?"])
    assert not batch.done()
    assert _worst(await batch, expected * 2) > 0.9999
    assert runs.most == 2 and len(query) == 384
    # While queries arrive the batch leaves a lane to them (full passes on the other).
    runs.most = runs.most_batches = 0
    asked = await _queries_beside_a_batch(lanes, texts, pause=0.02)
    assert asked >= 2 and runs.most_batches == 1 and runs.most == 2
    assert max(lanes.pass_sizes) == 16 and sum(lanes.pass_sizes) == len(texts)
