"""``bench scale``'s measurements on one built store: each phase through the worker's handlers.

Every function takes the in-process worker (``bootstrap.build``'s container) and returns plain
figures; ``scale`` runs them in order at each size.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

from memstream.bench.scale_store import Writer
from memstream.ops.replay import tools as replay_tools
from memstream.services import bootstrap
from memstream.services.domain.erasure import ErasureScope
from memstream.services.handlers.rebuild import Feedback, Options, replay_ledger
from memstream.services.handlers.rescore import Rescorer
from memstream.services.ports import SilentSink
from memstream.services.settings import Settings

QUESTIONS = [
    "what did customer C-{n} return?",
    "is the complaint of customer C-{n} resolved?",
    "which order of C-{n} was delivered last?",
    "did C-{n} ask for a refund?",
    "what does C-{n} prefer for delivery?",
]


# Another tenant's traffic while a subject is erased: a question every 100 ms at most. Each
# costs tens of ms of CPU (the model's embedding among them), so the erasure shares the cores
# with them, as it would with live traffic.
BESIDE_EVERY_S = 0.1


def questions(count: int, salt: str) -> list[str]:
    """Distinct questions (never asked before in this run: the reply cache cannot answer)."""
    return [QUESTIONS[i % len(QUESTIONS)].format(n=f"{i + 1}") + f" ({salt})" for i in range(count)]


def p50_p95(samples: list[float]) -> tuple[float, float]:
    if len(samples) < 2:
        value = samples[0] if samples else 0.0
        return value, value
    return statistics.median(samples), statistics.quantiles(samples, n=100)[94]


class Cpu:
    """CPU seconds (user + system) of this process and of the stack's PostgreSQL: the worker's
    and the database's share of a phase (other users of the machine are not counted)."""

    def __init__(self, data_dir: Path) -> None:
        self._own = psutil.Process()
        self._postmaster = next(
            (
                p
                for p in psutil.process_iter(["name", "cmdline"])
                if "postgres" in (p.info["name"] or "")
                and str(data_dir) in " ".join(p.info["cmdline"] or [])
            ),
            None,
        )

    def seconds(self) -> float:
        procs = [self._own]
        if self._postmaster is not None:
            with contextlib.suppress(psutil.Error):
                procs += [self._postmaster, *self._postmaster.children(recursive=True)]
        total = 0.0
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total


def rss_and_maps() -> tuple[int, int]:
    rss = psutil.Process().memory_info().rss
    with open(f"/proc/{os.getpid()}/maps", "rb") as maps:
        return rss, sum(1 for _ in maps)


def disk_bytes(path: Path) -> int:
    """Bytes allocated on disk under ``path`` (sparse files count what they hold)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, name)).st_blocks * 512
    return total


def request(tenant: str, text: str) -> dict[str, Any]:
    return {
        "request_id": uuid.uuid4().hex,
        "tenant_id": tenant,
        "query": text,
        "force": True,
        "limit": 10,
    }


async def ask(
    container: bootstrap.Container,
    tenant: str,
    text: str,
    stages: list[Mapping[str, float]] | None = None,
) -> float:
    """One retrieval through the retrieval handler; its latency in ms (an error raises). The
    reply's own stage timings (``latency_ms``) go to ``stages`` when given."""
    started = time.perf_counter()
    reply = await container.retriever.retrieve(request(tenant, text))
    spent = (time.perf_counter() - started) * 1000
    if reply.get("status") not in {"ok", "skipped"}:
        raise RuntimeError(f"retrieval failed: {reply.get('error')}")
    if stages is not None:
        stages.append(reply.get("latency_ms") or {})
    return spent


async def ask_all(
    container: bootstrap.Container,
    asks: list[tuple[str, str]],
    stages: list[Mapping[str, float]] | None = None,
) -> list[float]:
    return [await ask(container, tenant, text, stages) for tenant, text in asks]


def stage_medians(stages: list[Mapping[str, float]]) -> dict[str, float]:
    """The median of each stage the replies timed (ms), over the replies that timed it."""
    names = sorted({name for timed in stages for name in timed})
    return {name: statistics.median(float(t[name]) for t in stages if name in t) for name in names}


async def ingest(
    writer: Writer, cpu: Cpu, raws: list[dict[str, Any]], model_ms_per_text: float
) -> dict[str, float]:
    """``raws`` (texts the model has not seen) through the ingest handler and the indexer with
    the real model: events/s, and CPU ms per event in all and outside the model."""
    before, started = cpu.seconds(), time.perf_counter()
    await writer.write(raws)
    seconds, spent = time.perf_counter() - started, cpu.seconds() - before
    per_event = spent * 1000 / len(raws)
    return {
        "ingest_events_per_s": len(raws) / seconds,
        "ingest_cpu_ms_per_event": per_event,
        "ingest_cpu_ms_outside_model": max(0.0, per_event - model_ms_per_text),
    }


async def queries_under_ingest(
    container: bootstrap.Container, writer: Writer, tenant: str, raws: list[dict[str, Any]],
    texts: list[str],
) -> list[float]:  # fmt: skip
    """Questions one at a time while ``raws`` are being ingested; only those answered before
    the ingest finished count."""
    task = asyncio.create_task(writer.write(raws))
    times = []
    try:
        for text in texts:
            if task.done():
                break
            spent = await ask(container, tenant, text)
            if not task.done():
                times.append(spent)
    finally:
        await task
    return times


class Clock:
    """The bench's clock, the worker's (``bootstrap.build``'s) and its rescoring timer's: the
    wall clock and a lead each rescoring pass moves on (``pass_number`` periods and a second),
    never back — versions are recorded on the same clock the timer reads, as in the worker."""

    def __init__(self) -> None:
        self.lead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.lead


class Timer:
    """The worker's rescoring timer over the bench's stores: one ``Rescorer`` for the whole run,
    as the worker holds one (after a complete pass, a pass reads only what fell due or was
    recorded since it began), on the bench's ``Clock``."""

    def __init__(self, container: bootstrap.Container, clock: Clock) -> None:
        self.clock = clock
        self.rescorer = Rescorer(container.rules, SilentSink().scored, clock)


async def rescore(
    timer: Timer, cpu: Cpu, period_s: int, budget_s: float, current: int, passes: int = 1
) -> dict[str, Any]:
    """The rescoring timer twice, a period apart: the versions whose state the clock changed
    since their last scoring (escalations, expiries: ``Rescorer``).

    The first pass catches up with the build: a bulk load leaves every open complaint older
    than the escalation delay due at once, which a live store meets one complaint at a time. It
    runs until nothing is due or ``budget_s`` is spent (then extrapolated from its rate to the
    ``current`` versions). The second pass, one period later, is what the timer costs each
    period once it has caught up: its CPU (worker + PostgreSQL) per period is the core share.
    ``passes``: the passes this run made before, so each pass's clock is a period past the
    last one's."""
    first = await _pass(timer, cpu, passes, period_s, budget_s)
    complete = first["examined"] >= current or first["seconds"] < budget_s
    scale = 1.0 if complete or not first["examined"] else current / first["examined"]
    later = await _pass(timer, cpu, passes + 1, period_s, budget_s)
    return {
        "rescore_rows": first["examined"] if complete else current,
        "rescore_rows_measured": first["examined"],
        "rescore_changed": first["changed"],
        "rescore_pass_s": first["seconds"] * scale,
        "rescore_ms_per_row": first["cpu"] * 1000 / max(1, first["examined"]),
        "rescore_extrapolated": not complete,
        "rescore_next_pass_s": later["seconds"],
        "rescore_next_rows": later["examined"],
        "rescore_core_share": later["cpu"] / period_s,
    }


async def catch_up(timer: Timer, cpu: Cpu, period_s: int, budget_s: float) -> None:
    """A rescoring pass at the clock's present (before any measured pass): what a store
    written before the measurements has due is scored, and is not counted in them."""
    await _pass(timer, cpu, 0, period_s, budget_s)


async def _pass(
    timer: Timer, cpu: Cpu, pass_number: int, period_s: int, budget_s: float
) -> dict[str, float]:
    timer.clock.lead = max(timer.clock.lead, timedelta(seconds=pass_number * (period_s + 1)))
    rescorer = timer.rescorer
    examined = changed = 0
    before, started = cpu.seconds(), time.perf_counter()
    while time.perf_counter() - started < budget_s:
        report = await rescorer.run_once()
        examined, changed = examined + report.examined, changed + report.changed
        if not report.examined:
            break
    return {
        "examined": examined,
        "changed": changed,
        "seconds": time.perf_counter() - started,
        "cpu": cpu.seconds() - before,
    }


async def erase(
    container: bootstrap.Container,
    tenant: str,
    subject: str,
    beside: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """``memstream forget`` of one customer through the erasure handler, by phase; meanwhile
    ``beside``'s questions (of another tenant, or of the one erased), one every
    ``BESIDE_EVERY_S`` at most, until it ends: whether the worker answers others — and the
    tenant it erases from — while it erases (how many were asked, their p50 and the slowest)."""
    forgetting = asyncio.ensure_future(
        container.forgetter.forget(
            tenant, ErasureScope.entity(tenant, subject), "bench", "bench-admin"
        )
    )
    waited: dict[bool, list[float]] = {False: [], True: []}  # by: is it the erased tenant?
    for who, text in beside:
        if forgetting.done():
            break
        started = time.perf_counter()
        waited[who == tenant].append(await ask(container, who, text))
        await asyncio.wait(
            [forgetting], timeout=max(0.0, BESIDE_EVERY_S - (time.perf_counter() - started))
        )
    result = await forgetting
    after = time.perf_counter()  # the worker's VACUUM follows the completed erasure
    await container.forgetter.vacuumed()
    vacuum_after = time.perf_counter() - after
    figures = result.as_dict()
    seconds: dict[str, float] = figures["seconds"]
    asked: dict[str, float] = {}
    for own, name in [(False, "beside"), (True, "self")]:
        asked[f"erase_{name}_asked"] = len(waited[own])
        asked[f"erase_{name}_p50_ms"] = p50_p95(waited[own])[0]
        asked[f"erase_{name}_max_ms"] = max(waited[own], default=0.0)
    return {
        "erase_subject_s": sum(seconds.values()),
        "erase_phases_s": seconds,
        "erase_vacuum_after_s": vacuum_after,
        "erase_versions": figures["counts"]["versions"],
        "erase_vectors": figures["vectors_deleted"],
        "erase_pending": len(figures["pending"]),  # not completed: its phases are not all done
        **asked,
    }


@contextlib.contextmanager
def _counting(pages: list[tuple[float, int]]) -> Iterator[Callable[[int], None]]:
    yield lambda n: pages.append((time.perf_counter(), n))


async def replay(settings: Settings, tenant: str, schema: str, budget_s: float) -> float:
    """``memstream replay --into-schema`` of the tenant without vectors for ``budget_s``
    seconds at most (then stopped): events/s from the first page recorded to the last (the
    copy's schema is made before)."""
    assert settings.postgres_dsn is not None
    pages: list[tuple[float, int]] = []
    feedback = Feedback(lambda line: None, lambda label, total: _counting(pages))
    options = Options(schema=schema, tenants=(tenant,), no_vectors=True, batch=256)
    task = asyncio.create_task(
        replay_ledger(replay_tools(settings), feedback, settings.postgres_dsn, options, None)
    )
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(task), budget_s)
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    else:
        task.result()
    if len(pages) < 2:
        return 0.0
    return sum(n for _, n in pages[1:]) / (pages[-1][0] - pages[0][0])
