"""``bench scale``'s vector cache: pool texts get their pool vector, perturbed by their
reference (deterministic, unit length, distinct, near the pool text's); other texts go to the
model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstream.bench.scale_store import REF, VectorCache


class Model:
    """A stand-in for the model: one fixed unit vector a text, counting what it embeds."""

    dimension = 8

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        return [[1.0] + [0.0] * 7 for _ in texts]


POOL = ["the customer returned a kettle", "the order shipped late"]
POOL_VECTORS = [[0.0, 1.0] + [0.0] * 6, [0.0, 0.0, 1.0] + [0.0] * 5]


async def test_pool_texts_are_perturbed_by_reference_and_others_go_to_the_model() -> None:
    model = Model()
    cache = VectorCache(model, POOL, POOL_VECTORS)
    texts = [f"{POOL[i % 2]}{REF}t-{i}]" for i in range(4_000)] + ["a new question"]
    vectors = np.asarray(await cache.embed(texts))

    assert model.asked == ["a new question"] and cache.model_texts == 1
    assert vectors.shape == (4_001, 8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    near = [vectors[i] @ np.asarray(POOL_VECTORS[i % 2]) for i in range(4_000)]
    assert min(near) > 0.9  # near-duplicates of the pool text
    assert len({v.tobytes() for v in vectors[:4_000]}) == 4_000  # no two alike
    again = np.asarray(await cache.embed(texts[:10]))
    assert np.array_equal(again, vectors[:10])  # the same text, the same vector
