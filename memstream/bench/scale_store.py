"""``bench scale``'s stores: generated memories written through the worker's own handlers.

Memories are written as the worker writes them: Avro-encoded ``MemoryEvent`` messages handed to
``Ingestor.handle_batch`` (decode, validate, record: ledger + version + chain in Postgres) and
indexed by the ``Indexer`` (embed, upsert to the tenant's Qdrant Edge shard, mark indexed), in
a few concurrent lanes that split the memories between them, as partitions do.

What is not real: the model's time. Embedding 10^6 texts would take the model hours on a small
machine, so a ``VectorCache`` of ``pool`` distinct texts is embedded once with the real model,
and memory ``i`` is that pool's text ``i % pool`` with a reference of its own appended, its
vector the pool text's real vector plus a small deterministic perturbation (the sum of two
rows of a fixed table, chosen by the reference's hash: 16.7 million pairs for each pool text,
so points are practically never identical and the index holds realistic near-duplicates).
Texts outside the pool (the questions, the events of the ingest figures) go to the real model.
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memstream.bench.kit import synthetic_text
from memstream.schemas.codec import encode
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.index import Indexer
from memstream.services.handlers.ingest import Envelope, Ingestor
from memstream.services.ports import Embedder, Position
from memstream.streams.records import event_key, event_record

TOPIC = "memory.events"
REF = " [ref "
SUBJECT_MEMORIES = 50  # memories per customer: erasing one subject touches this many
NOISE = 0.02  # the perturbation's scale per dimension, before renormalising
NOISE_ROWS = 4_096  # perturbations to draw two from: 16.7 million pairs
_FACTS = [("note", None), ("complaint", "open"), ("order", "delivered"), ("preference", None)]


class VectorCache:
    """An ``Embedder``: pool texts (with a reference appended) from vectors the real model made
    once, anything else from the real model."""

    def __init__(self, model: Embedder, pool: Sequence[str], vectors: Sequence[Sequence[float]]):
        self._model = model
        self._rows = {text: i for i, text in enumerate(pool)}
        self._vectors = np.asarray(vectors, dtype=np.float32)
        # The perturbations: the sum of two rows of this table, chosen by the reference's hash
        # (a generator seeded per text cost 6 % of the build's CPU at 2 x 10^5 memories).
        shape = (NOISE_ROWS, self._vectors.shape[1])
        rng = np.random.default_rng(7)
        self._noise = rng.normal(0.0, NOISE / np.sqrt(2), shape).astype(np.float32)
        self.model_texts = 0  # texts the real model embedded through this cache

    @property
    def dimension(self) -> int:
        return self._model.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float] | None] = [None] * len(texts)
        fresh: list[int] = []
        cached: list[int] = []
        rows: list[int] = []
        hashes: list[int] = []
        for n, text in enumerate(texts):
            base, _, ref = text.rpartition(REF)
            row = self._rows.get(base) if base else None
            if row is None:
                fresh.append(n)
                continue
            cached.append(n)
            rows.append(row)
            hashes.append(zlib.crc32(ref.encode()))
        if cached:
            drawn = np.asarray(hashes, dtype=np.uint32)
            vectors = (
                self._vectors[rows]
                + self._noise[drawn % NOISE_ROWS]
                + self._noise[(drawn // NOISE_ROWS) % NOISE_ROWS]
            )
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            for n, vector in zip(cached, vectors.tolist(), strict=True):
                out[n] = vector
        if fresh:
            self.model_texts += len(fresh)
            made = await self._model.embed([texts[n] for n in fresh])
            for n, vector in zip(fresh, made, strict=True):
                out[n] = vector
        return [v for v in out if v is not None]


def pool_texts(count: int) -> list[str]:
    rng = random.Random(11)  # noqa: S311 - synthetic data, not crypto
    return [synthetic_text(rng, n) for n in range(count)]


def memory_events(
    tenant: str, start: int, end: int, pool: Sequence[str], now: datetime
) -> list[dict[str, Any]]:
    """Memories ``start`` … ``end - 1`` of ``tenant``: one version each, ``SUBJECT_MEMORIES``
    per customer, four fact types (open complaints and delivered orders among them), occurred
    over the last year."""
    events = []
    for i in range(start, end):
        fact, status = _FACTS[i % len(_FACTS)]
        raw: dict[str, Any] = {
            "event_id": f"{tenant}-{i}",
            "tenant_id": tenant,
            "memory_key": f"m:{i}",
            "entity_type": "customer",
            "entity_id": f"C-{i // SUBJECT_MEMORIES}",
            "fact_type": fact,
            "content": f"{pool[i % len(pool)]}{REF}{tenant}-{i}]",
            "source_system": "crm",
            "occurred_at": (now - timedelta(minutes=(i * 7919) % 525_600 + 1)).isoformat(),
        }
        if status is not None:
            raw["status"] = status
        events.append(raw)
    return events


def message(raw: dict[str, Any], now: datetime) -> tuple[bytes, bytes]:
    """The key and Avro value a producer would publish for ``raw`` (as ``memstream publish``)."""
    event = validate_event(raw, now)
    return event_key(event), encode("MemoryEvent", event_record(event))


class Writer:
    """Feeds events to the ingest handler in ``lanes`` concurrent lanes (by memory, as
    partitions split them), ``batch`` messages per ``handle_batch``; then lets the indexer
    finish."""

    def __init__(self, ingestor: Ingestor, indexer: Indexer, lanes: int = 4, batch: int = 256):
        self._ingestor, self._indexer = ingestor, indexer
        self._lanes, self._batch = lanes, batch
        self._offsets = [0] * lanes
        self.dead = 0

    async def write(self, raws: Sequence[dict[str, Any]], *, index: bool = True) -> int:
        now = datetime.now(UTC)
        lanes: list[list[tuple[bytes, bytes]]] = [[] for _ in range(self._lanes)]
        for raw in raws:
            key, value = message(raw, now)
            lanes[zlib.crc32(key) % self._lanes].append((key, value))
        written = await asyncio.gather(*(self._lane(p, m) for p, m in enumerate(lanes)))
        if index:
            await self.settle()
        return sum(written)

    async def settle(self) -> None:
        await self._indexer.drain()
        while await self._indexer.sweep(limit=5_000):
            pass

    async def _lane(self, partition: int, messages: list[tuple[bytes, bytes]]) -> int:
        done = 0
        for start in range(0, len(messages), self._batch):
            envelopes = []
            for key, value in messages[start : start + self._batch]:
                position = Position(TOPIC, partition, self._offsets[partition])
                self._offsets[partition] += 1
                envelopes.append(Envelope(key, value, position))
            report = await self._ingestor.handle_batch(envelopes)
            self.dead += len(report.dead)
            done += len(report.recorded)
        return done
