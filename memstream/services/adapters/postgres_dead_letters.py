"""PostgresDeadLetters: the ``dead_letters`` table read and stamped for ``memstream dlq``.

One synchronous connection (a one-shot command). ``find`` filters by ids, tenant, reason and
whether a letter was redriven, in id order; ``mark_redriven`` stamps ``redriven_at``. Every
statement is composed with ``psycopg.sql``. Must not import handlers or streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql
from psycopg.rows import dict_row

from memstream.services.adapters.postgres_status import SyncPostgres

_SELECT = sql.SQL(
    'SELECT id, failed_at, reason, detail, tenant_id, event_id, topic, "partition", "offset",'
    " redriven_at, original FROM dead_letters WHERE {where} ORDER BY id LIMIT %s"
)
_REDRIVEN = sql.SQL("UPDATE dead_letters SET redriven_at = clock_timestamp() WHERE id = ANY(%s)")


class PostgresDeadLetters(SyncPostgres):
    def find(
        self,
        ids: Sequence[int] | None = None,
        tenant_id: str | None = None,
        reason: str | None = None,
        *,
        include_redriven: bool = True,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        conditions: list[sql.Composable] = [sql.SQL("TRUE")]
        params: list[Any] = []
        if ids:
            conditions.append(sql.SQL("id = ANY(%s)"))
            params.append(list(ids))
        for column, value in (("tenant_id", tenant_id), ("reason", reason)):
            if value:
                conditions.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
                params.append(value)
        if not include_redriven:
            conditions.append(sql.SQL("redriven_at IS NULL"))
        params.append(limit or 1_000_000)
        query = _SELECT.format(where=sql.SQL(" AND ").join(conditions))
        cur = self._conn.cursor(row_factory=dict_row)
        return list(cur.execute(query, params).fetchall())

    def mark_redriven(self, ids: Sequence[int]) -> None:
        self._conn.execute(_REDRIVEN, (list(ids),))
