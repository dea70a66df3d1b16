"""The erasure bench's store, written in bulk (SQL, no model), and its lock probe.

``write_store``: one tenant's versions (memories of five versions each, the first ``subject``
anchored to the subject), a ledger row per version, 1,000 query-log entries (1 in 100
returning the subject) and 100 dead letters (5 naming it), then VACUUM ANALYZE; ``points``:
what the indexer would upsert for the first ``limit`` versions; ``lock_wait``: how long an
ingest transaction of a tenant waits for the erasure lock, by the server's clock. Used only by
``memstream bench erasure``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from memstream.services.domain.erasure import erasure_lock_key

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


def write_store(dsn: str, tenant: str, other: str, total: int, subject: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        params = {"t": tenant, "o": other, "n": subject, "total": total}
        for statement in _VERSIONS.split(";\n"):
            if statement.strip():
                conn.execute(statement.encode(), params)
        conn.execute("VACUUM ANALYZE")


async def points(dsn: str, tenant: str, limit: int) -> list[tuple[str, str, list[str]]]:
    """(version_id, memory_key, anchors) of the tenant's first ``limit`` versions."""
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT version_id::text, memory_key, anchors FROM memory_versions"
            " WHERE tenant_id = %s ORDER BY memory_key, version LIMIT %s",
            (tenant, limit),
        )
        return [(str(v), str(k), list(a)) for v, k, a in await cur.fetchall()]


async def lock_wait(pool: AsyncConnectionPool[Any], tenant: str) -> float:
    """Seconds an ingest transaction of ``tenant`` waits for the erasure lock, measured by the
    server's clock in one statement (immune to this process's scheduling); starts once an
    erasure holds its (exclusive) lock, or after ~10 s."""
    async with pool.connection() as conn:
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
            return float((row[2] - row[0]).total_seconds())
