"""Where published events stand: ingested (versioned and indexed), dead-lettered, or pending.

Reads Postgres only (the ledger, the versions, the dead letters), so it works against any
broker. Used by ``publish --wait``, the benchmarks and the tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.services import bootstrap
from memstream.services.bootstrap import Ident, PostgresStatus
from memstream.services.settings import Settings


@dataclass
class Status:
    ingested: set[Ident] = field(default_factory=set)
    dead: dict[Ident, str] = field(default_factory=dict)
    pending: set[Ident] = field(default_factory=set)


def ingested_among(settings: Settings, idents: Sequence[Ident]) -> set[Ident]:
    assert settings.postgres_dsn is not None
    if not idents:
        return set()
    with bootstrap.event_status(settings.postgres_dsn) as status:
        return status.ingested(idents, migrated=False)


def status_of(status: PostgresStatus, idents: Sequence[Ident]) -> Status:
    found = Status()
    for start in range(0, len(idents), 5000):
        chunk = idents[start : start + 5000]
        found.ingested |= status.ingested(chunk)
        found.dead.update(status.dead(chunk))
    found.pending = set(idents) - found.ingested - set(found.dead)
    return found


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
        bootstrap.event_status(settings.postgres_dsn) as status,
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
            step = status_of(status, remaining)
            total.ingested |= step.ingested
            total.dead.update(step.dead)
            remaining = sorted(step.pending)
            progress.update(task, completed=len(idents) - len(remaining))
            if not remaining or time.monotonic() >= deadline:
                break
            time.sleep(poll)
    total.pending = set(remaining)
    return total
