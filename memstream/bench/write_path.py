"""``bench ingest``'s write path alone: events recorded in PostgreSQL with no model and no broker.

On the bench's own embedded PostgreSQL, once its worker has stopped: ``count`` synthetic events
recorded one at a time (``record_event``, a transaction each) and then in batches of
``BATCH`` (``record_batch``, the worker's path: a transaction per batch), then in batches all to
ONE memory, every tenth event late (a record updated all day long: recording must not cost
more as its history grows). Per way: events/s,
and the CPU per event of this process (the client: validation, the domain, psycopg) and of
PostgreSQL (``cpu_budget``, the postmaster's tree).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.bench import cpu_budget
from memstream.bench.kit import synthetic_events
from memstream.services import bootstrap
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.recording import Pending, record_batch, record_event
from memstream.services.ports import Position

BATCH = 64  # the ingest agent's batch (streams.agents.INGEST_BATCH)
ONE_MEMORY = f"batches of {BATCH}, one memory (every 10th late)"


def _one_memory(raws: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        {**raw, "memory_key": "m:hot", "occurred_at": (start + timedelta(
            minutes=i - 5 if i % 10 == 9 else i)).isoformat()}
        for i, raw in enumerate(raws)
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class WritePath:
    way: str
    events_per_s: float
    client_cpu_ms: float  # per event
    postgres_cpu_ms: float  # per event


async def measure(dsn: str, count: int, roots: set[int]) -> list[WritePath]:
    repo = await bootstrap.open_repository(dsn)
    found = []
    try:
        for way in ("one at a time", f"batches of {BATCH}", ONE_MEMORY):
            now = datetime.now(UTC)
            tenant = f"bench-write-{uuid.uuid4().hex[:6]}"
            raws = synthetic_events(tenant, count, seed=3)
            if way == ONE_MEMORY:
                raws = _one_memory(raws)
            items = [
                Pending(validate_event(raw, now), raw, Position("bench", 0, i), now)
                for i, raw in enumerate(raws)
            ]
            before, cpu, started = (
                cpu_budget.snapshot(roots=roots),
                time.process_time(),
                time.perf_counter(),
            )
            if way == "one at a time":
                for item in items:
                    await record_event(repo, item.event, item.raw, item.position, item.recorded_at)
            else:
                for start in range(0, count, BATCH):
                    await record_batch(repo, items[start : start + BATCH])
            wall, client = time.perf_counter() - started, time.process_time() - cpu
            postgres = cpu_budget.spent(before, cpu_budget.snapshot(roots=roots)).get(
                "postgres", 0.0
            )
            found.append(
                WritePath(way, count / wall, client * 1000 / count, postgres * 1000 / count)
            )
    finally:
        await repo.close()
    return found
