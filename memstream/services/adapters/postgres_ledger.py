"""PostgresLedger: the ledger and the versions read in bulk, for rebuilds, copies and audits.

Implements ``services.ports.Ledger`` on one autocommit psycopg connection (a rebuild is one
process, one reader). Every statement is a literal or composed with ``psycopg.sql``. Replay
order is (received_at, topic, partition, offset, tenant_id, event_id), texts compared with
``COLLATE "C"`` (code-point order, whatever the database's collation). Also: ``schema_dsn``.
Must not import handlers or streams.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from memstream.services.adapters.postgres_rows import VERSION_SQL, row_to_version
from memstream.services.domain.checksum import LedgerLine
from memstream.services.domain.model import MemoryVersion
from memstream.services.ports import (
    AdapterError,
    CopyMeta,
    LedgerEvent,
    LedgerKey,
    OffsetRange,
    Position,
    ReplayScope,
)

_KEY_NAMES = ("at", "topic", "part", "off", "tenant", "event")
START: LedgerKey = (datetime.min.replace(tzinfo=UTC), "", -1, -1, "", "")

_KEY = sql.SQL(
    'l.received_at, l.topic COLLATE "C", l."partition", l."offset", l.tenant_id COLLATE "C",'
    ' l.event_id COLLATE "C"'
)
_KEY_DESC = sql.SQL(
    'l.received_at DESC, l.topic COLLATE "C" DESC, l."partition" DESC, l."offset" DESC,'
    ' l.tenant_id COLLATE "C" DESC, l.event_id COLLATE "C" DESC'
)
# The events still to replay: in scope, and after the last one the copy holds of their tenant.
_SCOPE = sql.SQL(
    " FROM event_ledger l LEFT JOIN unnest(%(d_tenant)s::text[], %(d_at)s::timestamptz[],"
    " %(d_topic)s::text[], %(d_part)s::int[], %(d_off)s::bigint[], %(d_event)s::text[])"
    ' AS d(tenant_id, received_at, topic, "partition", "offset", event_id)'
    " ON d.tenant_id = l.tenant_id"
    " WHERE (%(tenants)s::text[] IS NULL OR l.tenant_id = ANY(%(tenants)s::text[]))"
    " AND (%(until)s::timestamptz IS NULL OR l.received_at <= %(until)s)"
    " AND l.erased_at IS NULL"  # erased events are never replayed (their payload is gone)
    ' AND (d.tenant_id IS NULL OR ({key}) > (d.received_at, d.topic, d."partition",'
    ' d."offset", d.tenant_id, d.event_id))'
).format(key=_KEY)
_COUNT = sql.SQL("SELECT count(*){scope}").format(scope=_SCOPE)
_PAGE = sql.SQL(
    'SELECT l.tenant_id, l.event_id, l.payload, l.received_at, l.topic, l."partition", l."offset"'
    "{scope} AND l.received_at >= %(c_at)s AND ({key}) > (%(c_at)s, %(c_topic)s, %(c_part)s,"
    " %(c_off)s, %(c_tenant)s, %(c_event)s) ORDER BY {key} LIMIT %(limit)s"
).format(scope=_SCOPE, key=_KEY)
# In a copy, a version's recorded_at is the source's received_at of its event.
_LAST_DONE = sql.SQL(
    'SELECT DISTINCT ON (l.tenant_id) m.recorded_at, l.topic, l."partition", l."offset",'
    " l.tenant_id, l.event_id FROM event_ledger l JOIN memory_versions m USING (version_id)"
    ' ORDER BY l.tenant_id, m.recorded_at DESC, l.topic COLLATE "C" DESC, l."partition" DESC,'
    ' l."offset" DESC, l.event_id COLLATE "C" DESC'
)
_STEP_BACK = sql.SQL(
    "SELECT {key} FROM event_ledger l"
    " WHERE (%(tenants)s::text[] IS NULL OR l.tenant_id = ANY(%(tenants)s::text[]))"
    " AND ({key}) <= (%(m_at)s, %(m_topic)s, %(m_part)s, %(m_off)s, %(m_tenant)s, %(m_event)s)"
    " ORDER BY {desc} OFFSET %(page)s LIMIT 1"
).format(key=_KEY, desc=_KEY_DESC)
_VERSIONS = sql.SQL(
    "SELECT {columns}, ledger_received_at FROM ("
    " SELECT m.*, l.received_at AS ledger_received_at FROM memory_versions m"
    " JOIN event_ledger l ON l.tenant_id = m.tenant_id AND l.event_id = m.event_id"
    " WHERE (%(tenants)s::text[] IS NULL OR m.tenant_id = ANY(%(tenants)s::text[]))"
    " AND m.erased_at IS NULL"  # erased: tombstones that no replay reproduces, by design
    " AND (%(until)s::timestamptz IS NULL OR l.received_at <= %(until)s)) AS v"
).format(columns=VERSION_SQL)
_LEDGER = sql.SQL(
    'SELECT tenant_id, event_id, memory_key, op, version_id::text, outcome, topic, "partition",'
    ' "offset", received_at, md5(payload::text) FROM event_ledger'
    " WHERE (%(tenants)s::text[] IS NULL OR tenant_id = ANY(%(tenants)s::text[]))"
    " AND erased_at IS NULL"
    " AND (%(until)s::timestamptz IS NULL OR received_at <= %(until)s)"
)
_RANGES = sql.SQL(
    'SELECT "partition", min("offset"), max("offset") FROM ('
    ' SELECT "partition", "offset" FROM event_ledger WHERE topic = %(topic)s'
    "  AND (%(tenants)s::text[] IS NULL OR tenant_id = ANY(%(tenants)s::text[]))"
    "  AND (%(until)s::timestamptz IS NULL OR received_at <= %(until)s)"
    ' UNION ALL SELECT "partition", "offset" FROM dead_letters WHERE topic = %(topic)s'
    "  AND %(tenants)s::text[] IS NULL"
    "  AND (%(until)s::timestamptz IS NULL OR failed_at <= %(until)s)"
    ") AS recorded GROUP BY 1 ORDER BY 1"
)
_HELD = sql.SQL(
    'SELECT "partition", max("offset") FROM (SELECT "partition", "offset" FROM event_ledger'
    ' WHERE topic = %(t)s UNION ALL SELECT "partition", "offset" FROM dead_letters'
    " WHERE topic = %(t)s) AS held GROUP BY 1"
)
_RECEIVED = sql.SQL(
    'SELECT "offset", received_at FROM event_ledger WHERE topic = %(t)s AND'
    ' "partition" = %(p)s AND "offset" = ANY(%(o)s) UNION ALL SELECT "offset", failed_at'
    ' FROM dead_letters WHERE topic = %(t)s AND "partition" = %(p)s AND "offset" = ANY(%(o)s)'
)
_ERASED = sql.SQL(
    "SELECT l.tenant_id, l.event_id FROM event_ledger l"
    " JOIN unnest(%s::text[], %s::text[]) AS i(tenant_id, event_id)"
    " ON l.tenant_id = i.tenant_id AND l.event_id = i.event_id WHERE l.erased_at IS NOT NULL"
)
_WRITE_META = sql.SQL(
    "INSERT INTO replay_meta (source, tenants, until, vectors) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET tenants = excluded.tenants, until = excluded.until,"
    " vectors = coalesce(excluded.vectors, replay_meta.vectors), updated_at = now()"
)


def schema_dsn(dsn: str, schema: str) -> str:
    """``dsn`` whose sessions use ``schema`` first (public stays on the path for pg_trgm)."""
    options = conninfo_to_dict(dsn).get("options") or ""
    return make_conninfo(dsn, options=f"{options} -c search_path={schema},public".strip())


def _scope(scope: ReplayScope) -> dict[str, Any]:
    return {"tenants": list(scope.tenants) if scope.tenants else None, "until": scope.until}


def _done(done: Mapping[str, LedgerKey]) -> dict[str, Any]:
    return {f"d_{n}": [k[i] for k in done.values()] for i, n in enumerate(_KEY_NAMES)}


def _key(row: Sequence[Any]) -> LedgerKey:
    return (row[0], row[1], int(row[2]), int(row[3]), row[4], row[5])


class PostgresLedger:
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn

    @classmethod
    async def connect(cls, dsn: str) -> PostgresLedger:
        try:
            return cls(await psycopg.AsyncConnection.connect(dsn, autocommit=True))
        except psycopg.Error as exc:
            raise AdapterError(f"postgres unreachable: {exc}") from exc

    async def close(self) -> None:
        await self._conn.close()

    async def _rows(self, query: sql.SQL | sql.Composed, params: Any = None) -> list[Any]:
        return await (await self._conn.execute(query, params)).fetchall()

    async def _one(self, query: sql.SQL | sql.Composed, params: Any = None) -> Any:
        return await (await self._conn.execute(query, params)).fetchone()

    async def identity(self) -> str:
        row = await self._one(sql.SQL(
            "SELECT coalesce(host(inet_server_addr()), 'local'), inet_server_port(),"
            " current_database(), current_schema()"
        ))  # fmt: skip
        return f"{row[0]}:{row[1]}/{row[2]}/{row[3]}"

    async def tenants(self, wanted: Sequence[str] | None) -> list[str]:
        rows = await self._rows(sql.SQL("SELECT tenant_id FROM tenants ORDER BY tenant_id"))
        known = [r[0] for r in rows]
        unknown = sorted(set(wanted or ()) - set(known))
        if unknown:
            raise AdapterError(f"unknown tenant {unknown[0]!r}: it has no memory in this database")
        return list(wanted) if wanted else known

    async def pending_count(self, tenants: Sequence[str] | None) -> int:
        row = await self._one(sql.SQL(
            "SELECT count(*) FROM memory_versions WHERE (%(t)s::text[] IS NULL OR"
            " tenant_id = ANY(%(t)s::text[])) AND op = 'UPSERT' AND erased_at IS NULL"
            " AND (indexed_at IS NULL OR index_dirty)"
        ), {"t": list(tenants) if tenants is not None else None})  # fmt: skip
        return int(row[0])

    async def reset_index(self, tenant_id: str) -> None:
        await self._conn.execute(sql.SQL(
            "UPDATE memory_versions SET indexed_at = NULL, index_dirty = false"
            " WHERE tenant_id = %s"
        ), (tenant_id,))  # fmt: skip

    async def upsert_counts(self, tenant_id: str) -> list[tuple[str, int]]:
        rows = await self._rows(sql.SQL(
            "SELECT memory_key, count(*) FROM memory_versions WHERE tenant_id = %s AND"
            " op = 'UPSERT' AND erased_at IS NULL"
            ' GROUP BY memory_key ORDER BY memory_key COLLATE "C"'
        ), (tenant_id,))  # fmt: skip
        return [(key, int(n)) for key, n in rows]

    async def upsert_ids(self, tenant_id: str) -> list[tuple[str, str]]:
        return [tuple(r) for r in await self._rows(sql.SQL(
            "SELECT version_id::text, memory_key FROM memory_versions"
            " WHERE tenant_id = %s AND op = 'UPSERT' AND erased_at IS NULL"
        ), (tenant_id,))]  # fmt: skip

    async def mark_unindexed(self, version_ids: Sequence[str]) -> None:
        await self._conn.execute(sql.SQL(
            "UPDATE memory_versions SET indexed_at = NULL WHERE version_id = ANY(%s::uuid[])"
        ), (list(version_ids),))  # fmt: skip

    async def versions(self, scope: ReplayScope) -> list[tuple[MemoryVersion, datetime]]:
        cur = self._conn.cursor(row_factory=dict_row)
        await cur.execute(_VERSIONS, _scope(scope))
        return [(row_to_version(r), r["ledger_received_at"]) for r in await cur.fetchall()]

    async def ledger_lines(self, scope: ReplayScope) -> list[LedgerLine]:
        return [LedgerLine(*r) for r in await self._rows(_LEDGER, _scope(scope))]

    async def create_schema(self, schema: str) -> None:
        await self._conn.execute(
            sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
        )

    async def holds_copy(self, schema: str) -> bool:
        row = await self._one(sql.SQL(
            "SELECT current_schema() = %s AND to_regclass(format('%%I.replay_meta',"
            " current_schema())) IS NOT NULL"
        ), (schema,))  # fmt: skip
        return bool(row and row[0]) and await self.read_meta() is not None

    async def read_meta(self) -> CopyMeta | None:
        row = await self._one(sql.SQL("SELECT source, tenants, until, vectors FROM replay_meta"))
        if row is None:
            return None
        return CopyMeta(row[0], tuple(row[1]) if row[1] else None, row[2], row[3])

    async def write_meta(self, meta: CopyMeta) -> None:
        tenants = list(meta.tenants) if meta.tenants else None
        await self._conn.execute(_WRITE_META, (meta.source, tenants, meta.until, meta.vectors))

    async def last_replayed(self) -> dict[str, LedgerKey]:
        return {row[4]: _key(row) for row in await self._rows(_LAST_DONE)}

    async def step_back(self, scope: ReplayScope, key: LedgerKey, page: int) -> LedgerKey | None:
        last = dict(zip((f"m_{n}" for n in _KEY_NAMES), key, strict=True))
        row = await self._one(_STEP_BACK, {**_scope(scope), **last, "page": page})
        return _key(row) if row else None

    async def count_to_replay(self, scope: ReplayScope, done: Mapping[str, LedgerKey]) -> int:
        row = await self._one(_COUNT, {**_scope(scope), **_done(done)})
        return int(row[0]) if row else 0

    async def page_to_replay(
        self, scope: ReplayScope, done: Mapping[str, LedgerKey], after: LedgerKey, limit: int
    ) -> list[LedgerEvent]:
        cursor = {f"c_{n}": v for n, v in zip(_KEY_NAMES, after, strict=True)}
        cur = self._conn.cursor(row_factory=dict_row)
        await cur.execute(_PAGE, {**_scope(scope), **_done(done), **cursor, "limit": limit})
        return [
            LedgerEvent(
                r["tenant_id"],
                r["event_id"],
                r["payload"],
                Position(r["topic"], r["partition"], r["offset"]),
                r["received_at"],
            )
            for r in await cur.fetchall()
        ]

    async def count_events(self) -> int:
        row = await self._one(sql.SQL("SELECT count(*) FROM event_ledger"))
        return int(row[0]) if row else 0

    async def keep_transaction_time(self) -> None:
        await self._conn.execute(sql.SQL(
            "UPDATE event_ledger l SET received_at = m.recorded_at FROM memory_versions m"
            " WHERE m.version_id = l.version_id AND l.received_at IS DISTINCT FROM m.recorded_at"
        ))  # fmt: skip

    async def topic_ranges(self, topic: str, scope: ReplayScope) -> list[OffsetRange]:
        rows = await self._rows(_RANGES, {"topic": topic, **_scope(scope)})
        return [OffsetRange(p, first, last) for p, first, last in rows]

    async def held_offsets(self, topic: str) -> dict[int, int]:
        return {int(p): int(o) for p, o in await self._rows(_HELD, {"t": topic})}

    async def erased_events(self, ids: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        if not ids:
            return set()
        rows = await self._rows(_ERASED, ([t for t, _ in ids], [e for _, e in ids]))
        return {(str(t), str(e)) for t, e in rows}

    async def received(
        self, topic: str, partition: int, offsets: Sequence[int]
    ) -> dict[int, datetime]:
        found: dict[int, datetime] = {}
        params = {"t": topic, "p": partition, "o": list(offsets)}
        for offset, at in await self._rows(_RECEIVED, params):
            found.setdefault(int(offset), at)  # the ledger row first
        return found
