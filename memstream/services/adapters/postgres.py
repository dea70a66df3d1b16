"""PostgresMemoryRepository: the ledger and the immutable versions in PostgreSQL.

Implements ``services.ports.MemoryRepository`` with psycopg 3 (async, pooled). Events are
recorded in units of work (``locked``: one event; ``locked_batch``: a batch, see
``postgres_batch``; one transaction, serialised per memory by an advisory lock, idempotent on
(tenant_id, event_id)); the ingest handler decides where each event goes (``place_event``) and
the unit of work stores it. Driver errors become ``TransientError``
(retry) or ``AdapterError``.
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

from memstream.services.adapters.postgres_batch import PostgresBatchWrite, locked_batch
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
from memstream.services.ports import (
    DeadLetter,
    IndexTask,
    Position,
    Recorded,
    TransientError,
)

_CHAIN = sql.SQL("SELECT {} FROM memory_versions WHERE tenant_id = %s AND memory_key = %s").format(
    VERSION_SQL
)
_BY_ID = sql.SQL("SELECT {} FROM memory_versions WHERE version_id = %s").format(VERSION_SQL)


class PostgresMemoryWrite:
    """The writes of one unit of work (``PostgresMemoryRepository.locked``): pipelined, sent
    with the commit."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        chain: list[MemoryVersion],
        duplicate: Recorded | None,
    ) -> None:
        self._conn = conn
        self.chain: Sequence[MemoryVersion] = chain
        self.duplicate = duplicate

    async def save(
        self, event: MemoryEvent, raw: Mapping[str, Any], position: Position, placement: Placement
    ) -> None:
        cur = self._conn.cursor()
        await cur.execute(INSERT_TENANT, (event.tenant_id,))
        await cur.execute(INSERT_VERSION, version_params(placement.version))
        for old in placement.changed:
            await cur.execute(UPDATE_DERIVED, derived_params(old))
        await cur.execute(INSERT_LEDGER, ledger_params(event, raw, position, placement))


class PostgresMemoryRepository:
    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    @classmethod
    async def connect(
        cls, dsn: str, *, min_size: int = 1, max_size: int = 8
    ) -> PostgresMemoryRepository:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            open=False,
            timeout=5.0,
            kwargs={"autocommit": True},
            check=AsyncConnectionPool.check_connection,
            reconnect_timeout=3600.0,
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except PoolTimeout as exc:
            await pool.close()
            raise TransientError(f"postgres unreachable: {exc}") from exc
        return cls(pool)

    @property
    def pool(self) -> AsyncConnectionPool[Any]:
        return self._pool

    async def close(self) -> None:
        await self._pool.close()

    @contextlib.asynccontextmanager
    async def locked(self, event: MemoryEvent) -> AsyncIterator[PostgresMemoryWrite]:
        """One memory's unit of work: its lock, the ledger's answer for the event, its chain.

        Pipeline mode: the lock, the ledger check and the chain go in one round trip, the
        writes (``save``) and the commit in another (9 round trips → 2 for a new version). A
        clean exit commits; an exception (``InvalidEvent`` from the decision) rolls back.
        """
        try:
            async with self._pool.connection() as conn, conn.pipeline(), conn.transaction():
                yield await self._open(conn, event)
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(
                exc, f"recording event {event.event_id!r} of {event.tenant_id!r}"
            ) from exc

    async def _open(
        self, conn: psycopg.AsyncConnection[Any], event: MemoryEvent
    ) -> PostgresMemoryWrite:
        # Shared: an erasure of the tenant (exclusive) waits for this event, or it for it.
        await conn.execute(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))",
            (erasure_lock_key(event.tenant_id),),
        )
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"{event.tenant_id}\x1f{event.memory_key}",),
        )
        ledger = conn.cursor(row_factory=dict_row)
        await ledger.execute(
            "SELECT outcome, version_id::text AS version_id FROM event_ledger"
            " WHERE tenant_id = %s AND event_id = %s",
            (event.tenant_id, event.event_id),
        )
        versions = conn.cursor(row_factory=dict_row)
        await versions.execute(_CHAIN, (event.tenant_id, event.memory_key))
        seen = await ledger.fetchone()
        chain = [row_to_version(r) for r in await versions.fetchall()]
        duplicate = None
        if seen is not None:  # a redelivery: its version, usually in this very chain
            known = [v for v in chain if str(v.version_id) == seen["version_id"]]
            if not known:  # the event id was reused with another memory_key
                await versions.execute(_BY_ID, (seen["version_id"],))
                known = [row_to_version(r) for r in await versions.fetchall()]
            assert known, f"ledger names missing version {seen['version_id']}"
            duplicate = Recorded(known[0], (), seen["outcome"], duplicate=True)
        return PostgresMemoryWrite(conn, chain, duplicate)

    def locked_batch(
        self, events: Sequence[MemoryEvent]
    ) -> contextlib.AbstractAsyncContextManager[PostgresBatchWrite]:
        """The unit of work of a batch of events (``postgres_batch``)."""
        return locked_batch(self._pool, events)

    async def ping(self) -> None:
        """One round trip (the worker's /health); raises what the pool or driver raises."""
        async with self._pool.connection() as conn:
            await conn.execute("SELECT 1")

    async def dead_letter(self, letter: DeadLetter) -> None:
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "INSERT INTO dead_letters (reason, detail, tenant_id, event_id, topic,"
                    ' "partition", "offset", original) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)'
                    ' ON CONFLICT (topic, "partition", "offset") DO NOTHING',
                    (
                        letter.reason,
                        letter.detail,
                        letter.tenant_id,
                        letter.event_id,
                        letter.position.topic,
                        letter.position.partition,
                        letter.position.offset,
                        letter.original,
                    ),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"dead-lettering {letter.position}") from exc

    async def pending_index(
        self, keys: Sequence[tuple[str, str]] | None, limit: int
    ) -> list[IndexTask]:
        where: sql.Composable = sql.SQL(
            "(indexed_at IS NULL OR index_dirty) AND op = 'UPSERT' AND erased_at IS NULL"
        )
        params: list[Any] = []
        if keys is not None:
            if not keys:
                return []
            where += sql.SQL(
                " AND (tenant_id, memory_key) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
            )
            params += [[k[0] for k in keys], [k[1] for k in keys]]
        params.append(limit)
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(
                    sql.SQL(
                        "SELECT {}, indexed_at IS NULL AS needs_vector"
                        " FROM memory_versions WHERE {} ORDER BY recorded_at LIMIT %s"
                    ).format(VERSION_SQL, where),
                    params,
                )
                rows = await cur.fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "listing versions to index") from exc
        return [IndexTask(row_to_version(r), bool(r["needs_vector"])) for r in rows]

    async def erased(self, version_ids: Sequence[str]) -> set[str]:
        if not version_ids:
            return set()
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT version_id FROM memory_versions"
                    " WHERE version_id = ANY(%s::uuid[]) AND erased_at IS NOT NULL",
                    (list(version_ids),),
                )
                rows = await cur.fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading which of {len(version_ids)} are erased") from exc
        return {str(r[0]) for r in rows}

    async def mark_indexed(self, versions: Sequence[MemoryVersion]) -> None:
        """Mark versions indexed (their points are written); those whose derived state changed
        since they were read stay dirty, and the next pass re-syncs their payloads only."""
        if not versions:
            return
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "UPDATE memory_versions AS m SET indexed_at = clock_timestamp(),"
                    " index_dirty = NOT (m.is_current = s.cur"
                    " AND m.valid_to IS NOT DISTINCT FROM s.vt)"
                    " FROM unnest(%s::uuid[], %s::boolean[], %s::timestamptz[]) AS s(id, cur, vt)"
                    " WHERE m.version_id = s.id",
                    (
                        [v.version_id for v in versions],
                        [v.is_current for v in versions],
                        [v.valid_to for v in versions],
                    ),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"marking {len(versions)} versions indexed") from exc

    async def chain(self, tenant_id: str, memory_key: str) -> list[MemoryVersion]:
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(_CHAIN + sql.SQL(" ORDER BY version"), (tenant_id, memory_key))
                return [row_to_version(r) for r in await cur.fetchall()]
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading memory {memory_key!r} of {tenant_id!r}") from exc
