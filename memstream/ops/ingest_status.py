"""Where published events stand: ingested (versioned and indexed), dead-lettered, or pending.

Reads Postgres only (the ledger, the versions, the dead letters), so it works against any
broker. Used by ``publish --wait``, the benchmarks and the tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.services.settings import Settings

Ident = tuple[str, str]  # (tenant_id, event_id)

_INGESTED = (
    "SELECT l.tenant_id, l.event_id FROM event_ledger l"
    " JOIN memory_versions v ON v.version_id = l.version_id"
    " WHERE (l.tenant_id, l.event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
    " AND (v.indexed_at IS NOT NULL OR v.op = 'RETRACT')"
)
_DEAD = (
    "SELECT DISTINCT ON (tenant_id, event_id) tenant_id, event_id, reason FROM dead_letters"
    " WHERE (tenant_id, event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)


@dataclass
class Status:
    ingested: set[Ident] = field(default_factory=set)
    dead: dict[Ident, str] = field(default_factory=dict)
    pending: set[Ident] = field(default_factory=set)


def _split(idents: Sequence[Ident]) -> tuple[list[str], list[str]]:
    return [i[0] for i in idents], [i[1] for i in idents]


def ingested_among(settings: Settings, idents: Sequence[Ident]) -> set[Ident]:
    assert settings.postgres_dsn is not None
    if not idents:
        return set()
    with psycopg.connect(settings.postgres_dsn) as conn:
        try:
            rows = conn.execute(_INGESTED, _split(idents)).fetchall()
        except psycopg.errors.UndefinedTable:
            return set()
    return {(r[0], r[1]) for r in rows}


def status_of(conn: psycopg.Connection, idents: Sequence[Ident]) -> Status:
    status = Status()
    for start in range(0, len(idents), 5000):
        chunk = idents[start : start + 5000]
        tenants, events = _split(chunk)
        status.ingested |= {(r[0], r[1]) for r in conn.execute(_INGESTED, (tenants, events))}
        for tenant, event, reason in conn.execute(_DEAD, (tenants, events)):
            status.dead[(tenant, event)] = reason
    status.pending = set(idents) - status.ingested - set(status.dead)
    return status


def wait_for(
    settings: Settings,
    idents: Sequence[Ident],
    *,
    timeout: float,
    console: Console | None = None,
    poll: float = 0.25,
) -> Status:
    """Poll until every ident is ingested or dead-lettered, or ``timeout`` seconds pass."""
    assert settings.postgres_dsn is not None
    deadline = time.monotonic() + timeout
    remaining = list(idents)
    total = Status()
    with (
        psycopg.connect(settings.postgres_dsn, autocommit=True) as conn,
        Progress(
            TextColumn("ingesting"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=console is None or len(idents) < 50,
            transient=True,
        ) as progress,
    ):
        task = progress.add_task("wait", total=len(idents))
        while True:
            step = status_of(conn, remaining)
            total.ingested |= step.ingested
            total.dead.update(step.dead)
            remaining = sorted(step.pending)
            progress.update(task, completed=len(idents) - len(remaining))
            if not remaining or time.monotonic() >= deadline:
                break
            time.sleep(poll)
    total.pending = set(remaining)
    return total
