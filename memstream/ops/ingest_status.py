"""Where published events stand: ingested (versioned and indexed), dead-lettered, or pending;
and what an acknowledgement means on this stack.

Reads Postgres only (the ledger, the versions, the dead letters), so it works against any
broker. Used by ``publish`` (and ``--wait``), the benchmarks and the tests.

The acknowledgement contract (``acknowledgement``): a Kafka broker keeps what it acknowledged
(acks=all), so there an event is safe once the broker acks it. The embedded broker keeps its
topics in memory: an event it acknowledged is lost if ``up`` dies (SIGKILL, power loss) before
the worker records it. So on the embedded stack memstream's own producers acknowledge an event
only once it is in the ledger (or dead-lettered) in Postgres: ``confirm``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.ops.stack import read_runtime
from memstream.services import bootstrap
from memstream.services.bootstrap import Ident, PostgresStatus
from memstream.services.settings import Settings

Ack = Literal["broker", "ledger"]
Stage = Literal["ingested", "recorded"]


@dataclass
class Status:
    ingested: set[Ident] = field(default_factory=set)  # versioned and indexed
    dead: dict[Ident, str] = field(default_factory=dict)
    pending: set[Ident] = field(default_factory=set)
    recorded: set[Ident] = field(default_factory=set)  # in the ledger or dead-lettered


def acknowledgement(settings: Settings) -> Ack:
    """What an acknowledged event is safe in on this stack: ``ledger`` when the broker is the
    embedded, in-memory one that ``up`` runs on the data dir (MEMSTREAM_BROKER unset, or set
    to that broker), ``broker`` for any other (a Kafka broker keeps what it acknowledged)."""
    info = read_runtime(settings.data_dir)
    if info is None or info.get("broker_storage", "memory") != "memory":
        return "broker"
    return "ledger" if settings.broker in (None, info.get("broker")) else "broker"


def confirm(
    settings: Settings, idents: Sequence[Ident], *, timeout: float, console: Console | None = None
) -> Status | None:
    """The acknowledgement of events the broker took: None when the broker's is the contract
    (``acknowledgement``), else the wait until each is in the ledger or dead-lettered
    (``timeout`` s at most; those not by then are in ``pending``: not acknowledged)."""
    if acknowledgement(settings) == "broker":
        return None
    return wait_for(settings, idents, timeout=timeout, console=console, until="recorded")


def ingested_among(settings: Settings, idents: Sequence[Ident]) -> set[Ident]:
    assert settings.postgres_dsn is not None
    if not idents:
        return set()
    with bootstrap.event_status(settings.postgres_dsn) as status:
        return status.ingested(idents, migrated=False)


def status_of(status: PostgresStatus, idents: Sequence[Ident], until: Stage = "ingested") -> Status:
    found = Status()
    for start in range(0, len(idents), 5000):
        chunk = idents[start : start + 5000]
        if until == "ingested":
            found.ingested |= status.ingested(chunk)
        else:
            found.recorded |= status.recorded(chunk)
        found.dead.update(status.dead(chunk))
    done = found.ingested if until == "ingested" else found.recorded
    found.pending = set(idents) - done - set(found.dead)
    return found


def wait_for(
    settings: Settings,
    idents: Sequence[Ident],
    *,
    timeout: float,
    console: Console | None = None,
    poll: float = 0.25,
    until: Stage = "ingested",
) -> Status:
    """Poll until every ident is ingested (``recorded``: in the ledger) or dead-lettered, or
    ``timeout`` seconds pass."""
    assert settings.postgres_dsn is not None
    deadline = time.monotonic() + timeout
    remaining = list(idents)
    total = Status()
    with (
        bootstrap.event_status(settings.postgres_dsn) as status,
        Progress(
            TextColumn("ingesting" if until == "ingested" else "recording in the ledger"),
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
            step = status_of(status, remaining, until)
            total.ingested |= step.ingested
            total.recorded |= step.recorded
            total.dead.update(step.dead)
            remaining = sorted(step.pending)
            progress.update(task, completed=len(idents) - len(remaining))
            if not remaining or time.monotonic() >= deadline:
                break
            time.sleep(poll)
    total.pending = set(remaining)
    return total
