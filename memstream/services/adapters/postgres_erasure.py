"""PostgresErasure: the Postgres side of erasing a data subject (``ports.ErasureRepository``).

One transaction per erasure, under the tenant's erasure lock: an exclusive advisory lock whose
shared form every ingest transaction of the tenant takes (``PostgresMemoryRepository.record``),
so no event of the tenant is half-recorded while its subject is erased, and none starts until the
erasure commits. The versions and ledger rows in scope keep ids, positions and timestamps and
lose their content to a tombstone; the digests are computed by the domain. Must not import
handlers or streams.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.services.adapters.postgres_rows import translate
from memstream.services.domain.erasure import (
    ERASED_ENTITY_ID,
    ErasureCounts,
    ErasureResult,
    ErasureScope,
    ScopeKind,
    content_digest,
    erasure_lock_key,
    ledger_tombstone,
    payload_digest,
)
from memstream.services.ports import ErasureMark, PendingErasure

TOUCHED_TABLES = ("memory_versions", "event_ledger", "query_log", "dead_letters", "version_scores")


_KEYS_OF_ENTITY = (
    "SELECT DISTINCT memory_key FROM memory_versions"
    " WHERE tenant_id = %s AND anchors @> ARRAY[%s]::text[] AND erased_at IS NULL"
)
_VERSIONS = (
    "SELECT version_id::text AS version_id, memory_key, content, attributes, entity_type,"
    " entity_id, entities FROM memory_versions"
    " WHERE tenant_id = %s AND memory_key = ANY(%s) AND erased_at IS NULL"
    " ORDER BY memory_key, version FOR UPDATE"
)
_LEDGER = (
    "SELECT event_id, payload FROM event_ledger"
    " WHERE tenant_id = %s AND memory_key = ANY(%s) AND erased_at IS NULL"
    " ORDER BY event_id FOR UPDATE"
)
# A query-log entry is in scope when one of its results is an erased version, or when its request
# names the subject as a whole word (an anchor, the user it was asked about, the question text).
_QUERY_LOG_SCOPE = sql.SQL(
    " FROM query_log q WHERE q.tenant_id = %(tenant)s AND NOT q.reply ? 'redacted_by' AND ("
    " EXISTS (SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(q.reply -> 'results')"
    " WHEN 'array' THEN q.reply -> 'results' ELSE '[]'::jsonb END) AS r"
    " WHERE r ->> 'version_id' = ANY(%(ids)s::text[]))"
    " OR (%(pattern)s::text <> '' AND q.request::text ~ %(pattern)s))"
)
_REDACT_QUERY_LOG = sql.SQL(
    "UPDATE query_log q SET request = jsonb_build_object('request_id', q.request_id,"
    " 'redacted_by', %(erasure)s::text),"
    " reply = jsonb_build_object('request_id', q.request_id, 'status', q.status,"
    " 'redacted_by', %(erasure)s::text, 'version_ids',"
    " coalesce((SELECT jsonb_agg(r -> 'version_id')"
    " FROM jsonb_array_elements(CASE jsonb_typeof(q.reply -> 'results') WHEN 'array'"
    " THEN q.reply -> 'results' ELSE '[]'::jsonb END) AS r), '[]'::jsonb))"
    " WHERE q.id IN (SELECT q.id{scope})"
).format(scope=_QUERY_LOG_SCOPE)
# Dead letters of the tenant (or of no known tenant: undecodable bytes) whose event is in scope
# or whose original bytes / detail name the subject.
_DEAD_SCOPE = sql.SQL(
    " FROM dead_letters d WHERE (d.tenant_id = %(tenant)s OR d.tenant_id IS NULL) AND ("
    " d.event_id = ANY(%(events)s::text[])"
    " OR strpos(d.detail, %(needle)s) > 0"
    " OR position(convert_to(%(needle)s, 'UTF8') IN coalesce(d.original, ''::bytea)) > 0)"
)


class PostgresErasure:
    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def erase(
        self,
        scope: ErasureScope,
        *,
        erasure_id: str,
        requested_by: str,
        reason: str,
        requested_at: datetime,
        dry_run: bool,
    ) -> ErasureResult:
        try:
            return await self._erase(scope, erasure_id, requested_by, reason, requested_at, dry_run)
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"erasing a {scope.kind.value} of {scope.tenant_id!r}") from exc

    async def _erase(
        self,
        scope: ErasureScope,
        erasure_id: str,
        requested_by: str,
        reason: str,
        requested_at: datetime,
        dry_run: bool,
    ) -> ErasureResult:
        tenant = scope.tenant_id
        async with (
            self._pool.connection() as conn,
            conn.transaction(force_rollback=dry_run),
        ):
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (erasure_lock_key(tenant),)
            )
            cur = conn.cursor(row_factory=dict_row)
            if scope.kind is ScopeKind.ENTITY:
                await cur.execute(_KEYS_OF_ENTITY, (tenant, scope.value))
                keys = [r["memory_key"] for r in await cur.fetchall()]
            else:
                keys = [scope.value]
            await cur.execute(_VERSIONS, (tenant, keys))
            versions = await cur.fetchall()
            await cur.execute(_LEDGER, (tenant, keys))
            ledger = await cur.fetchall()
            now_row = await (await conn.execute("SELECT clock_timestamp()")).fetchone()
            assert now_row is not None
            erased_at: datetime = now_row[0]
            digests = {
                r["version_id"]: content_digest(
                    r["content"],
                    r["attributes"],
                    f"{r['entity_type']}:{r['entity_id']}",
                    r["entities"],
                )
                for r in versions
            }
            version_ids = list(digests)
            event_ids = [r["event_id"] for r in ledger]
            needle = scope.needles()[0]
            params = {
                "tenant": tenant,
                "ids": version_ids,
                "pattern": scope.word_pattern() if scope.kind is ScopeKind.ENTITY else "",
                "events": event_ids,
                "erasure": erasure_id,
            }
            dead_params = params | {"needle": needle}
            if dry_run:
                logged = await _count(conn, sql.SQL("SELECT count(*)") + _QUERY_LOG_SCOPE, params)
                dead = await _count(conn, sql.SQL("SELECT count(*)") + _DEAD_SCOPE, dead_params)
            else:
                await conn.execute(
                    "UPDATE memory_versions AS m SET content = '', attributes = '{}',"
                    " search_text = '', entity_id = %s, entities = '[]', anchors = '{}',"
                    " is_current = false, index_dirty = false,"
                    " indexed_at = coalesce(m.indexed_at, %s), erased_at = %s, erasure_id = %s,"
                    " content_digest = s.digest"
                    " FROM unnest(%s::uuid[], %s::text[]) AS s(id, digest)"
                    " WHERE m.version_id = s.id",
                    (
                        ERASED_ENTITY_ID,
                        erased_at,
                        erased_at,
                        erasure_id,
                        version_ids,
                        [digests[v] for v in version_ids],
                    ),
                )
                await conn.execute(
                    "DELETE FROM version_scores WHERE version_id = ANY(%s::uuid[])", (version_ids,)
                )
                ledger_digests = [payload_digest(r["payload"]) for r in ledger]
                await conn.execute(
                    "UPDATE event_ledger AS l SET payload = s.tombstone, erased_at = %s,"
                    " erasure_id = %s, payload_digest = s.digest"
                    " FROM unnest(%s::text[], %s::text[], %s::jsonb[])"
                    " AS s(event_id, digest, tombstone)"
                    " WHERE l.tenant_id = %s AND l.event_id = s.event_id",
                    (
                        erased_at,
                        erasure_id,
                        event_ids,
                        ledger_digests,
                        [
                            json.dumps(ledger_tombstone(erasure_id, erased_at, d))
                            for d in ledger_digests
                        ],
                        tenant,
                    ),
                )
                logged = (await conn.execute(_REDACT_QUERY_LOG, params)).rowcount
                dead = (await conn.execute(sql.SQL("DELETE") + _DEAD_SCOPE, dead_params)).rowcount
            counts = ErasureCounts(
                memories=len({r["memory_key"] for r in versions}),
                versions=len(versions),
                ledger_rows=len(ledger),
                query_log=logged,
                dead_letters=dead,
            )
            if not dry_run and not counts.nothing:
                await conn.execute(
                    "INSERT INTO erasure_log (erasure_id, tenant_id, requested_by, reason,"
                    " scope_kind, subject_digest, requested_at, erased_at, counts, digests,"
                    " version_ids) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (erasure_id) DO NOTHING",
                    (
                        erasure_id,
                        tenant,
                        requested_by,
                        reason,
                        scope.kind.value,
                        scope.digest,
                        requested_at,
                        erased_at,
                        json.dumps(counts.as_dict()),
                        json.dumps(digests),
                        version_ids,
                    ),
                )
        return ErasureResult(
            erasure_id=None if dry_run or counts.nothing else erasure_id,
            tenant_id=tenant,
            scope_kind=scope.kind,
            subject_digest=scope.digest,
            dry_run=dry_run,
            counts=counts,
            digests=digests,
        )

    async def pending(self, tenant_id: str) -> list[PendingErasure]:
        try:
            async with self._pool.connection() as conn:
                rows = await (
                    await conn.execute(
                        "SELECT erasure_id::text, version_ids::text[] FROM erasure_log"
                        " WHERE tenant_id = %s AND completed_at IS NULL ORDER BY erased_at",
                        (tenant_id,),
                    )
                ).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading the pending erasures of {tenant_id!r}") from exc
        return [PendingErasure(r[0], tenant_id, tuple(r[1])) for r in rows]

    async def complete(self, erasure_ids: Sequence[str], at: datetime) -> None:
        if not erasure_ids:
            return
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "UPDATE erasure_log SET completed_at = %s"
                    " WHERE erasure_id = ANY(%s::uuid[]) AND completed_at IS NULL",
                    (at, list(erasure_ids)),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"completing erasures {list(erasure_ids)}") from exc

    async def vacuum(self) -> None:
        try:
            async with self._pool.connection() as conn:  # autocommit: VACUUM needs it
                for table in TOUCHED_TABLES:
                    await conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "vacuuming after an erasure") from exc

    async def marks(self, tenant_id: str, memory_key: str) -> dict[str, ErasureMark]:
        try:
            async with self._pool.connection() as conn:
                rows = await (
                    await conn.execute(
                        "SELECT m.version_id::text, m.erasure_id::text, m.erased_at,"
                        " coalesce(e.reason, ''), m.content_digest FROM memory_versions m"
                        " LEFT JOIN erasure_log e ON e.erasure_id = m.erasure_id"
                        " WHERE m.tenant_id = %s AND m.memory_key = %s AND m.erased_at IS NOT NULL",
                        (tenant_id, memory_key),
                    )
                ).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading erasures of {memory_key!r} of {tenant_id!r}") from exc
        return {r[0]: ErasureMark(r[1], r[2], r[3], r[4]) for r in rows}

    async def log(self, tenant_id: str) -> list[dict[str, Any]]:
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(
                    "SELECT erasure_id::text AS erasure_id, tenant_id, requested_by, reason,"
                    " scope_kind, subject_digest, requested_at, erased_at, completed_at, counts,"
                    " digests FROM erasure_log WHERE tenant_id = %s ORDER BY erased_at",
                    (tenant_id,),
                )
                return list(await cur.fetchall())
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading the erasure log of {tenant_id!r}") from exc


async def _count(conn: psycopg.AsyncConnection[Any], query: sql.Composed, params: Any) -> int:
    row = await (await conn.execute(query, params)).fetchone()
    return int(row[0]) if row is not None else 0
