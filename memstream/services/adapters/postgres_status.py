"""PostgresStatus: where published events stand, read synchronously by one-shot commands.

``publish --wait``, the demo, the benchmarks and the health check ask Postgres (the ledger, the
versions, the dead letters) whether events are in; they run outside any event loop, so this
adapter is psycopg's synchronous connection. Driver errors become ``AdapterError``. Must not
import handlers or streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import psycopg
from psycopg import sql

from memstream.services.ports import AdapterError

Ident = tuple[str, str]  # (tenant_id, event_id)

_INGESTED = sql.SQL(
    "SELECT l.tenant_id, l.event_id FROM event_ledger l"
    " JOIN memory_versions v ON v.version_id = l.version_id"
    " WHERE (l.tenant_id, l.event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
    " AND (v.indexed_at IS NOT NULL OR v.op = 'RETRACT')"
)
_RECORDED = sql.SQL(
    "SELECT tenant_id, event_id FROM event_ledger"
    " WHERE (tenant_id, event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
    " UNION SELECT tenant_id, event_id FROM dead_letters"
    " WHERE (tenant_id, event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)
_DEAD = sql.SQL(
    "SELECT DISTINCT ON (tenant_id, event_id) tenant_id, event_id, reason FROM dead_letters"
    " WHERE (tenant_id, event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)
_INDEXED = sql.SQL(
    "SELECT count(*) FROM memory_versions WHERE tenant_id = %(t)s AND indexed_at IS NOT NULL"
)
_LAST_INDEXED = sql.SQL(
    "SELECT extract(epoch FROM max(indexed_at)) FROM memory_versions WHERE tenant_id = %(t)s"
)
_SETTLED = sql.SQL(
    "SELECT (SELECT count(*) FROM memory_versions WHERE tenant_id = %(t)s"
    " AND (indexed_at IS NOT NULL OR op = 'RETRACT'))"
    " + (SELECT count(*) FROM dead_letters WHERE tenant_id = %(t)s)"
)


def _split(idents: Sequence[Ident]) -> tuple[list[str], list[str]]:
    return [i[0] for i in idents], [i[1] for i in idents]


def server_version(dsn: str, timeout: float) -> str:
    """The server's version, or AdapterError (its first line says why)."""
    try:
        with psycopg.connect(dsn, connect_timeout=max(1, int(timeout))) as conn:
            row = conn.execute(sql.SQL("SHOW server_version")).fetchone()
    except psycopg.Error as exc:
        raise AdapterError(str(exc).strip().splitlines()[0]) from None
    return str(row[0]) if row else "?"


class SyncPostgres:
    """One autocommit connection for a command-line tool's short reads and writes."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    @classmethod
    def connect(cls, dsn: str) -> Self:
        try:
            return cls(psycopg.connect(dsn, autocommit=True))
        except psycopg.Error as exc:
            raise AdapterError(f"postgres unreachable: {exc}") from exc

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PostgresStatus(SyncPostgres):
    def ingested(self, idents: Sequence[Ident], *, migrated: bool = True) -> set[Ident]:
        """Those of ``idents`` versioned and indexed (or retracted). ``migrated=False``: a
        database not migrated yet holds none (instead of an error)."""
        try:
            rows = self._conn.execute(_INGESTED, _split(idents)).fetchall()
        except psycopg.errors.UndefinedTable:
            if migrated:
                raise
            return set()
        return {(r[0], r[1]) for r in rows}

    def recorded(self, idents: Sequence[Ident]) -> set[Ident]:
        """Those of ``idents`` in the ledger or dead-lettered: committed to Postgres, whether
        or not versioned and indexed yet (the index catches up from Postgres)."""
        tenants, events = _split(idents)
        rows = self._conn.execute(_RECORDED, (tenants, events, tenants, events)).fetchall()
        return {(r[0], r[1]) for r in rows}

    def dead(self, idents: Sequence[Ident]) -> dict[Ident, str]:
        """Those of ``idents`` dead-lettered, with the reason."""
        rows = self._conn.execute(_DEAD, _split(idents)).fetchall()
        return {(tenant, event): reason for tenant, event, reason in rows}

    def indexed(self, tenant_id: str) -> int:
        """How many of the tenant's versions are indexed."""
        row = self._conn.execute(_INDEXED, {"t": tenant_id}).fetchone()
        return int(row[0]) if row else 0

    def last_indexed(self, tenant_id: str) -> float | None:
        """When the tenant's last version was indexed (epoch seconds, the server's clock)."""
        row = self._conn.execute(_LAST_INDEXED, {"t": tenant_id}).fetchone()
        return float(row[0]) if row and row[0] is not None else None

    def settled(self, tenant_id: str) -> int:
        """How many of the tenant's events are versioned and indexed, or dead-lettered."""
        row = self._conn.execute(_SETTLED, {"t": tenant_id}).fetchone()
        return int(row[0]) if row else 0
