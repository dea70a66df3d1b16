"""``memstream bench replay``: rebuilding from the ledger, and rescoring, at 100,000 versions.

One run on this machine, in a temporary data dir with its own embedded PostgreSQL:

1. a source ledger is written through the real write path (``record_event``, no model: the source's
   vectors are not what is measured): ``--versions`` memories that end current, a fifth of them
   superseded once, and one in fifty more upserted then retracted — 124,000 events for 100,000;
2. ``replay --into-schema`` of the whole ledger without vectors (events/s, embedding excluded);
3. indexing the copy: every UPSERT version embedded with the bundled model and written to Qdrant
   Edge (events/s of 2 + 3: embedding included);
4. rescoring every current version of the copy with the clock three days on (every one due, its
   recency changed materially): the ``Rescorer`` as the worker's timer runs it, in runs of its
   usual bound, until nothing is due (Postgres: the vector store is not written).

Prints the figures; nothing is asserted.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memstream.bench.kit import synthetic_text
from memstream.ops.migrate import migrate
from memstream.ops.replay import feedback
from memstream.ops.stack import EmbeddedStack
from memstream.services import bootstrap
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.rebuild import Options, index_copy, replay_ledger
from memstream.services.handlers.recording import record_event
from memstream.services.ports import Position
from memstream.services.settings import Settings

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

TENANTS = 4
WRITERS = 4  # concurrent writers building the source (different memories: no lock contention)
_BASE = datetime(2025, 1, 1, tzinfo=UTC)
_FACTS = [("note", None), ("complaint", "open"), ("order", "delivered"), ("preference", None)]


def source_events(current: int, seed: int = 3) -> Iterator[dict[str, Any]]:
    """``current`` memories that end current: first versions, then a fifth superseded, then
    one in fifty more memories upserted and retracted. Each memory's events in order."""
    rng = random.Random(seed)  # noqa: S311 - synthetic data, not crypto

    def upsert(i: int, key: str, n: int, second: int) -> dict[str, Any]:
        fact, status = _FACTS[i % len(_FACTS)]
        raw: dict[str, Any] = {
            "event_id": f"{key}#{n}",
            "tenant_id": f"bench-{i % TENANTS}",
            "memory_key": key,
            "entity_type": "customer",
            "entity_id": f"C-{i % 5000}",
            "fact_type": fact,
            "content": synthetic_text(rng, i),
            "source_system": "crm",
            "occurred_at": (_BASE + timedelta(seconds=second)).isoformat(),
        }
        if status is not None:
            raw["status"] = status
        return raw

    for i in range(current):
        yield upsert(i, f"m:{i}", 1, i)
    for i in range(0, current, 5):
        yield upsert(i, f"m:{i}", 2, current + i)
    for i in range(current // 50):
        yield upsert(i, f"r:{i}", 1, 2 * current + i)
        retract = upsert(i, f"r:{i}", 2, 2 * current + i + 1)
        yield {**retract, "op": "RETRACT", "content": ""}


@dataclass
class Figures:
    events: int
    current: int
    build_s: float
    replay_s: float
    indexed: int
    index_s: float
    rescored: int
    changed: int
    runs: int
    rescore_s: float


async def _build_source(dsn: str, events: list[dict[str, Any]]) -> float:
    """Record ``events`` through the write path with a few writers, each owning its memories."""
    repo = await bootstrap.open_repository(dsn, WRITERS)
    shards: list[list[dict[str, Any]]] = [[] for _ in range(WRITERS)]
    for raw in events:
        key = f"{raw['tenant_id']}|{raw['memory_key']}".encode()
        shards[zlib.crc32(key) % WRITERS].append(raw)
    done = 0

    async def write(partition: int, shard: list[dict[str, Any]]) -> None:
        nonlocal done
        for offset, raw in enumerate(shard):
            now = datetime.now(UTC)
            event = validate_event(raw, now)
            position = Position("memory.events", partition, offset)
            await record_event(repo, event, raw, position, now)
            done += 1

    started = time.monotonic()
    try:
        task = asyncio.gather(*(write(p, s) for p, s in enumerate(shards)))
        while not task.done():
            await asyncio.wait([task], timeout=10)
            err.print(f"  source ledger: {done} / {len(events)} events", markup=False)
        await task
    finally:
        await repo.close()
    return time.monotonic() - started


async def _rescore(dsn: str) -> tuple[int, ...]:
    later = datetime.now(UTC) + timedelta(days=3)
    examined = changed = runs = 0
    async with bootstrap.offline_rescorer(dsn, lambda: later) as rescorer:
        started = time.monotonic()
        while (report := await rescorer.run_once()).examined:
            examined, changed, runs = examined + report.examined, changed + report.changed, runs + 1
            if runs % 20 == 0:
                err.print(f"  rescoring: {examined} versions", markup=False)
        spent = time.monotonic() - started
    return examined, changed, runs, int(spent * 1000)


def bench_replay(current: int, batch: int = 256) -> Figures:
    events = list(source_events(current))
    with tempfile.TemporaryDirectory(prefix="memstream-bench-replay-") as tmp:
        base = Settings.from_env()
        settings = Settings(data_dir=Path(tmp), model_path=base.model_path, web_port=0)
        stack = EmbeddedStack(settings, write_runtime=False)
        resolved = stack.start()
        try:
            assert resolved.postgres_dsn is not None
            dsn = resolved.postgres_dsn
            migrate(dsn)
            tools = bootstrap.rebuild_tools(resolved, migrate)
            out.print(f"writing the source ledger: {len(events)} events …")
            build_s = asyncio.run(_build_source(dsn, events))
            out.print(f"replaying {len(events)} events without vectors …")
            options = Options(schema="bench_copy", no_vectors=True, batch=batch)
            started = time.monotonic()
            asyncio.run(replay_ledger(tools, feedback(), dsn, options, None))
            replay_s = time.monotonic() - started
            target, root = tools.schema_dsn(dsn, "bench_copy"), Path(tmp) / "replay-vectors"
            out.print("indexing the copy (embedding every UPSERT version) …")
            embedder = tools.load_embedder()
            started = time.monotonic()
            indexed = asyncio.run(index_copy(tools, feedback(), target, root, embedder, batch))
            index_s = time.monotonic() - started
            out.print(f"rescoring {current} current versions three days later …")
            rescored, changed, runs, ms = asyncio.run(_rescore(target))
        finally:
            stack.stop()
    return Figures(
        len(events), current, build_s, replay_s, indexed, index_s, rescored, changed, runs,
        ms / 1000,
    )  # fmt: skip


def print_replay(f: Figures) -> None:
    table = Table(title="memstream bench replay", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row(
        f"source ledger written ({f.events} events, record(), {WRITERS} writers)",
        f"{f.build_s:.1f} s · {f.events / f.build_s:.0f} events/s",
    )
    table.add_row(
        "replay from the ledger, embedding excluded",
        f"{f.replay_s:.1f} s · {f.events / f.replay_s:.0f} events/s",
    )
    table.add_row(
        f"indexing the copy ({f.indexed} versions embedded)",
        f"{f.index_s:.1f} s · {f.indexed / f.index_s:.0f} versions/s",
    )
    total = f.replay_s + f.index_s
    table.add_row(
        "replay from the ledger, embedding included",
        f"{total:.1f} s · {f.events / total:.0f} events/s",
    )
    table.add_row(
        f"rescoring {f.rescored} current versions ({f.runs} runs, {f.changed} changed)",
        f"{f.rescore_s:.1f} s · {f.rescored / max(f.rescore_s, 1e-9):.0f} versions/s",
    )
    out.print(table)
