"""The embedding adapters on the bundled model (no stand-in): vectors, batching of queries."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from services.adapters.embedding import BatchingEmbedder, SentenceTransformerEmbedder


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
