"""PostgresQueryLog: every retrieval (request + reply with scores and latency) in Postgres.

Implements ``services.ports.QueryLog``. Values are stored as JSON (times as ISO strings, bytes
never occur in requests/replies). Must not import handlers or streams.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.services.adapters.postgres_rows import translate


def _json(value: Any) -> str:
    def default(item: Any) -> Any:
        if isinstance(item, datetime):
            return item.isoformat()
        return str(item)

    return json.dumps(value, default=default, ensure_ascii=False)


class PostgresQueryLog:
    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def record(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> None:
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "INSERT INTO query_log (request_id, tenant_id, status, request, reply)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (
                        str(reply.get("request_id") or request.get("request_id") or ""),
                        request.get("tenant_id") or None,
                        reply.get("status", "error"),
                        _json(dict(request)),
                        _json(dict(reply)),
                    ),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"logging request {reply.get('request_id')!r}") from exc

    async def find(self, request_id: str) -> list[dict[str, Any]]:
        """Every logged answer to ``request_id`` (a client may reuse an id), oldest first."""
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(
                    "SELECT request_id, tenant_id, answered_at, status, request, reply"
                    " FROM query_log WHERE request_id = %s ORDER BY id",
                    (request_id,),
                )
                return list(await cur.fetchall())
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading the log of request {request_id!r}") from exc

    async def answers_about(
        self, tenant_id: str, memory_key: str, limit: int = 20
    ) -> list[dict[str, Any]]:
        """The latest logged answers of ``tenant_id`` that returned a version of
        ``memory_key`` (newest first): when it was served, with what scores."""
        probe = json.dumps([{"memory_key": memory_key}])
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(
                    "SELECT request_id, tenant_id, answered_at, status, request, reply"
                    " FROM query_log WHERE tenant_id = %s AND reply -> 'results' @> %s::jsonb"
                    " ORDER BY id DESC LIMIT %s",
                    (tenant_id, probe, limit),
                )
                return list(await cur.fetchall())
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading the answers about {memory_key!r}") from exc
