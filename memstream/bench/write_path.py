"""``bench ingest``'s write path alone: events recorded in PostgreSQL with no model and no broker.

On the bench's own embedded PostgreSQL, once its worker has stopped: ``count`` synthetic events
recorded one at a time (``record_event``, a transaction each) and then in batches of
``BATCH`` (``record_batch``, the worker's path: a transaction per batch). Per way: events/s,
and the CPU per event of this process (the client: validation, the domain, psycopg) and of
PostgreSQL (``cpu_budget``, the postmaster's tree).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from memstream.bench import cpu_budget
from memstream.bench.kit import synthetic_events
from memstream.services import bootstrap
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.recording import Pending, record_batch, record_event
from memstream.services.ports import Position

BATCH = 64  # the ingest agent's batch (streams.agents.INGEST_BATCH)


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
        for way in ("one at a time", f"batches of {BATCH}"):
            now = datetime.now(UTC)
            tenant = f"bench-write-{uuid.uuid4().hex[:6]}"
            items = [
                Pending(validate_event(raw, now), raw, Position("bench", 0, i), now)
                for i, raw in enumerate(synthetic_events(tenant, count, seed=3))
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
