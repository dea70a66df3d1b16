"""The embedding adapters on the bundled model (no stand-in): vectors, batching of queries."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from memstream.services.adapters.embedding import (
    BatchingEmbedder,
    SentenceTransformerEmbedder,
    TracedEncoder,
)


@pytest.fixture(scope="module")
def embedder(model_path: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder.load(model_path)


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
    assert embedder.traced
    eager = SentenceTransformerEmbedder.load(model_path, trace=False)
    assert not eager.traced
    texts = [
        "ok",
        "Which USB-C charger did customer C-15 order last?",
        "订单号A-2002已发货，客户说耳机是红色的",
        "The K2 kettle has a two-year warranty. " * 40,  # truncated to the model's window
    ]
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
    other = SentenceTransformerEmbedder(cls_pooled)
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
