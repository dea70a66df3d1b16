"""``memstream bench rescore``: one rescoring pass over a store of current versions, and the next.

One run on this machine, in a temporary data dir with its own embedded PostgreSQL:

1. one tenant's store is written in bulk (SQL, no model): ``--versions`` current versions, one
   in 100 a pending complaint (occurred over the last ten days), the rest notes;
2. the ``Rescorer`` the worker's timer runs drains everything due with the clock three days on
   (a first pass), then again one timer period (60 s) later (the steady state), timed, with the
   versions it read and the changes it made.

The share of one core is the pass's wall time over the period: an upper bound (the pass waits on
PostgreSQL part of the time). Nothing is asserted.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memstream.services.settings import Settings

out = Console(highlight=False)
TENANT = "bench-rescore"
PERIOD = timedelta(seconds=60)  # MEMSTREAM_RESCORE_SECONDS' default


@dataclass
class Pass:
    label: str
    examined: int
    changed: int
    runs: int
    seconds: float
    cpu_seconds: float


async def _passes(dsn: str) -> list[Pass]:
    from memstream.services import bootstrap

    now = [datetime.now(UTC) + timedelta(days=3)]
    passes = []
    async with bootstrap.offline_rescorer(dsn, lambda: now[0]) as rescorer:
        for label, at in (
            ("first pass, three days on", now[0]),
            ("next pass, one period later", now[0] + PERIOD + timedelta(seconds=1)),
        ):
            now[0] = at
            examined = changed = runs = 0
            started, cpu = time.monotonic(), time.process_time()
            while (report := await rescorer.run_once()).examined:
                examined, changed = examined + report.examined, changed + report.changed
                runs += 1
            seconds = time.monotonic() - started
            passes.append(Pass(label, examined, changed, runs, seconds, time.process_time() - cpu))
    return passes


def bench_rescore(total: int) -> tuple[float, list[Pass]]:
    from memstream.ops.migrate import migrate
    from memstream.ops.stack import EmbeddedStack
    from memstream.services import bootstrap

    with tempfile.TemporaryDirectory(prefix="memstream-bench-rescore-") as tmp:
        stack = EmbeddedStack(Settings(data_dir=Path(tmp), web_port=0), write_runtime=False)
        resolved = stack.start()
        try:
            assert resolved.postgres_dsn is not None
            migrate(resolved.postgres_dsn)
            out.print(f"writing {total} current versions in bulk …")
            started = time.monotonic()
            bootstrap.rescore_bench_store(resolved.postgres_dsn, TENANT, total)
            build_s = time.monotonic() - started
            out.print("rescoring …")
            passes = asyncio.run(_passes(resolved.postgres_dsn))
        finally:
            stack.stop()
    return build_s, passes


def print_rescore(total: int, build_s: float, passes: list[Pass]) -> None:
    table = Table(title=f"memstream bench rescore ({total} current versions)", title_justify="left")
    for column in ("pass", "versions read", "changed", "runs", "wall", "CPU here", "core share"):
        table.add_column(column, justify="left" if column == "pass" else "right")
    table.add_row("store written (bulk)", "", "", "", f"{build_s:.1f} s", "", "")
    for p in passes:
        share = p.seconds / PERIOD.total_seconds()
        table.add_row(
            p.label, str(p.examined), str(p.changed), str(p.runs),
            f"{p.seconds:.2f} s", f"{p.cpu_seconds:.2f} s", f"≤ {share:.1%} per 60 s",
        )  # fmt: skip
    out.print(table)
