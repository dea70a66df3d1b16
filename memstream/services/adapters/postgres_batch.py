"""The unit of work of a batch of events (``PostgresMemoryRepository.locked_batch``).

One transaction and two round trips per batch, whatever its size: the locks (the tenants'
erasure locks shared, then every memory's lock, each set in the order of its hash, so that two
writers never wait on each other in a cycle), the ledger's answers and what placing the events
reads of each chain (``versioning.neighbours``, at most four versions an event, whatever the
chain's length) go in the first; the writes (``executemany``, pipelined) and the commit in the
second. The statements and their parameters are those of the one-event unit of work
(``postgres.PostgresMemoryWrite``), so that a batch stores exactly what its events recorded one
at a time would.
Must not import handlers or streams.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.services.adapters.postgres_rows import (
    INSERT_LEDGER,
    INSERT_TENANT,
    INSERT_VERSION,
    UPDATE_DERIVED,
    VERSION_SQL,
    derived_params,
    ledger_params,
    row_to_version,
    translate,
    version_params,
)
from memstream.services.domain.erasure import erasure_lock_key
from memstream.services.domain.model import MemoryEvent, MemoryVersion
from memstream.services.domain.versioning import Placement
from memstream.services.ports import Position, Recorded

# Advisory locks taken in the order of their keys' hashes (the keys themselves are hashed as
# the one-event unit of work hashes them, so both paths exclude each other).
_LOCK_SHARED = (
    "SELECT pg_advisory_xact_lock_shared(h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h"
    " FROM unnest(%s::text[]) AS k ORDER BY h) AS ordered"
)
_LOCK = (
    "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h"
    " FROM unnest(%s::text[]) AS k ORDER BY h) AS ordered"
)
_SEEN = sql.SQL(
    "SELECT {}, s.outcome, s.ledger_tenant, s.ledger_event FROM memory_versions"
    " JOIN (SELECT l.version_id AS seen_id, l.outcome, l.tenant_id AS ledger_tenant,"
    " l.event_id AS ledger_event FROM event_ledger l JOIN unnest(%s::text[], %s::text[])"
    " AS i(t, e) ON l.tenant_id = i.t AND l.event_id = i.e) AS s ON version_id = s.seen_id"
).format(VERSION_SQL)
# What placing the batch's events reads of each chain (``versioning.neighbours``), not the
# whole chain: a memory updated every minute holds thousands of versions, and reading them all
# for every batch made recording cost grow with each memory's history.
_NEIGHBOURS = sql.SQL(
    "WITH w AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::timestamptz[]) AS w(t, k, at)),"
    " m AS (SELECT DISTINCT t, k FROM w),"
    " ids AS ("
    "  SELECT (SELECT version_id FROM memory_versions WHERE tenant_id = m.t AND memory_key = m.k"
    "   ORDER BY version DESC LIMIT 1) AS id FROM m"
    "  UNION SELECT (SELECT version_id FROM memory_versions"
    "   WHERE tenant_id = m.t AND memory_key = m.k"
    "   ORDER BY valid_from DESC, version DESC LIMIT 1) FROM m"
    "  UNION SELECT (SELECT version_id FROM memory_versions"
    "   WHERE tenant_id = w.t AND memory_key = w.k AND valid_from <= w.at"
    "   ORDER BY valid_from DESC, version DESC LIMIT 1) FROM w"
    "  UNION SELECT (SELECT version_id FROM memory_versions"
    "   WHERE tenant_id = w.t AND memory_key = w.k AND valid_from > w.at"
    "   ORDER BY valid_from, version LIMIT 1) FROM w)"
    " SELECT {} FROM memory_versions WHERE version_id IN (SELECT id FROM ids)"
).format(VERSION_SQL)

Placed = tuple[MemoryEvent, Mapping[str, Any], Position, Placement]


class PostgresBatchWrite:
    """The writes of one batch's unit of work: pipelined, sent with the commit."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        chains: dict[tuple[str, str], list[MemoryVersion]],
        recorded: dict[tuple[str, str], Recorded],
    ) -> None:
        self._conn = conn
        self.chains: Mapping[tuple[str, str], Sequence[MemoryVersion]] = chains
        self.recorded: Mapping[tuple[str, str], Recorded] = recorded

    async def save(self, placed: Sequence[Placed]) -> None:
        if not placed:
            return
        # A version changed twice in the batch is written once, in its last state; one
        # inserted and then changed by a later event is updated after its insert (index_dirty
        # set, as one event at a time would leave it).
        changed: dict[str, MemoryVersion] = {}
        for _, _, _, placement in placed:
            changed.update((v.version_id, v) for v in placement.changed)
        cur = self._conn.cursor()
        tenants = dict.fromkeys(event.tenant_id for event, _, _, _ in placed)
        await cur.executemany(INSERT_TENANT, [(t,) for t in tenants])
        await cur.executemany(INSERT_VERSION, [version_params(p.version) for *_, p in placed])
        if changed:
            await cur.executemany(UPDATE_DERIVED, [derived_params(v) for v in changed.values()])
        await cur.executemany(INSERT_LEDGER, [ledger_params(*item) for item in placed])


async def _open(
    conn: psycopg.AsyncConnection[Any], events: Sequence[MemoryEvent]
) -> PostgresBatchWrite:
    tenants = list(dict.fromkeys(e.tenant_id for e in events))
    memories = list(dict.fromkeys((e.tenant_id, e.memory_key) for e in events))
    ids = list(dict.fromkeys((e.tenant_id, e.event_id) for e in events))
    # Shared: an erasure of a tenant (exclusive) waits for this batch, or it for it.
    await conn.execute(_LOCK_SHARED, ([erasure_lock_key(t) for t in tenants],))
    await conn.execute(_LOCK, ([f"{t}\x1f{k}" for t, k in memories],))
    seen = conn.cursor(row_factory=dict_row)
    await seen.execute(_SEEN, ([t for t, _ in ids], [e for _, e in ids]))
    versions = conn.cursor(row_factory=dict_row)
    await versions.execute(
        _NEIGHBOURS,
        (
            [e.tenant_id for e in events],
            [e.memory_key for e in events],
            [e.occurred_at for e in events],
        ),
    )
    recorded = {
        (r["ledger_tenant"], r["ledger_event"]): Recorded(
            row_to_version(r), (), r["outcome"], duplicate=True
        )
        for r in await seen.fetchall()
    }
    chains: dict[tuple[str, str], list[MemoryVersion]] = {}
    for row in await versions.fetchall():
        version = row_to_version(row)
        chains.setdefault((version.tenant_id, version.memory_key), []).append(version)
    return PostgresBatchWrite(conn, chains, recorded)


@contextlib.asynccontextmanager
async def locked_batch(
    pool: AsyncConnectionPool[Any], events: Sequence[MemoryEvent]
) -> AsyncIterator[PostgresBatchWrite]:
    """One batch's unit of work: a clean exit commits, an exception rolls back."""
    try:
        async with pool.connection() as conn, conn.pipeline(), conn.transaction():
            yield await _open(conn, events)
    except (psycopg.Error, PoolTimeout) as exc:
        raise translate(exc, f"recording a batch of {len(events)} events") from exc
