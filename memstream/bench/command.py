"""``memstream bench ingest``: end-to-end ingest throughput next to the raw model throughput.

Everything runs on this machine in one run: a fresh embedded stack in a temporary data dir, the
embedding model alone (texts/s), then a real worker process consuming N events published to
Tansu until every one is versioned in Postgres and indexed in Qdrant Edge (events/s), then the
latency of the Postgres write transaction (``record``: ledger + version + chain, one
transaction) measured in-process. While the events are ingested it also counts the CPU time of
every part of the stack (``cpu_budget``): CPU milliseconds per event by part, and the rate the
machine's cores allow at that cost. Before publishing it measures the stack's CPU while idle
(the consumers' fetch polling, timers): that much is spent whether events flow or not, and
the run's share of it is printed beside the CPU outside the model. Prints the figures; nothing
is asserted.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memstream.bench import cpu_budget, write_path
from memstream.bench.kit import (
    publish_events,
    start_worker,
    stop_worker,
    synthetic_events,
    with_encoder,
)
from memstream.bench.model_alone import model_throughput
from memstream.ops.ingest_status import wait_for
from memstream.ops.stack import EmbeddedStack
from memstream.ops.up import prepare
from memstream.services import bootstrap
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.recording import record_event
from memstream.services.ports import Position
from memstream.services.settings import Settings

out = Console(highlight=False)


@dataclass
class Figures:
    encoder: str  # the encoder the worker ran (one of ENCODERS, or a fallback)
    model_texts_per_s: float
    end_to_end_events_per_s: float
    events: int
    seconds: float
    pg_p50_ms: float
    pg_p95_ms: float
    pg_p99_ms: float
    cpu_s: dict[str, float] = field(default_factory=dict)  # CPU seconds by part, end to end
    model_cpu_ms_per_text: float = 0.0  # the model alone: CPU (all its threads) per text
    writes: list[write_path.WritePath] = field(default_factory=list)  # no model, no broker
    idle_cpu_ms_per_s: dict[str, float] = field(default_factory=dict)  # by part, idle stack
    model_ways: dict[str, float] = field(default_factory=dict)  # texts/s each way it ran alone
    model_before_after: tuple[float, float] = (0.0, 0.0)  # texts/s before and after the runs

    def cpu_ms_outside_model(self) -> float:
        """CPU per event of the stack (worker, PostgreSQL, broker, Redis, publisher) less the
        model's CPU per text: what ingest costs besides embedding."""
        ours = [p for p in self.cpu_s if p not in (cpu_budget.OUTSIDE, cpu_budget.UNATTRIBUTED)]
        stack = sum(self.cpu_s[p] for p in ours) * 1000 / self.events
        return stack - self.model_cpu_ms_per_text

    def cpu_ms_per_event(self, part: str | None = None) -> float:
        """One part's CPU per event, or (None) the whole stack's: what runs outside it on a
        shared machine is not the stack's cost."""
        ours = sum(s for p, s in self.cpu_s.items() if p != cpu_budget.OUTSIDE)
        seconds = ours if part is None else self.cpu_s.get(part, 0.0)
        return seconds * 1000 / self.events

    def idle_ms_per_event(self) -> float:
        """The idle stack's CPU over the run's wall time, per event: what fetch polling and
        timers cost whether events flow or not (an upper bound of their share while busy)."""
        return sum(self.idle_cpu_ms_per_s.values()) * self.seconds / self.events

    def busy_ms_outside_model(self) -> float:
        """The CPU outside the model less what the idle stack would have spent meanwhile: the
        events' own cost, which a longer run on a loaded machine does not inflate."""
        return self.cpu_ms_outside_model() - self.idle_ms_per_event()


async def _pg_latency(dsn: str, count: int) -> list[float]:
    repo = await bootstrap.open_repository(dsn)
    tenant = f"bench-pg-{uuid.uuid4().hex[:6]}"
    samples = []
    try:
        for i, raw in enumerate(synthetic_events(tenant, count, seed=2)):
            event = validate_event(raw, datetime.now(UTC))
            started = time.perf_counter()
            await record_event(repo, event, raw, Position("bench", 0, i), datetime.now(UTC))
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        await repo.close()
    return samples


def _wait_counted(settings: Settings, tenant: str, events: int, timeout: float) -> float | None:
    """Until ``events`` of ``tenant`` are versioned and indexed (or dead-lettered): one cheap
    count per second, so that watching costs the worker next to nothing (polling the state of
    every event twice a second took ~20 % of a core from it). Returns when the last version
    was indexed (epoch seconds), so the second between two counts is not counted."""
    assert settings.postgres_dsn is not None
    deadline = time.monotonic() + timeout
    with bootstrap.event_status(settings.postgres_dsn) as status:
        while time.monotonic() < deadline:
            done = status.settled(tenant)
            out.print(f"  {done} / {events}", end="\r")
            if done >= events:
                out.print()
                return status.last_indexed(tenant)
            time.sleep(1.0)
    raise RuntimeError(f"not every event was ingested within {timeout:.0f} s")


def bench_ingest(events: int, model_sample: int, encoders: list[str]) -> list[Figures]:
    """Each encoder in turn: the model alone, then end to end on a fresh stack of its own (an
    index holds one encoder's vectors), then the Postgres write latency on that stack."""
    base = Settings.from_env()
    texts = [r["content"] for r in synthetic_events("sample", model_sample)]
    out.print(f"raw model throughput on {model_sample} texts, the encoders in turn …")
    settings = with_encoder(Settings(model_path=base.model_path), encoders[0])
    rates = model_throughput(settings, encoders, texts)
    runs = [_end_to_end(base, encoder, *rates[encoder], events=events) for encoder in encoders]
    out.print("the model alone again, after the end-to-end runs …")
    again = model_throughput(settings, encoders, texts)
    return [_bracketed(run, *again[encoder]) for run, encoder in zip(runs, encoders, strict=True)]


def _bracketed(
    run: Figures, _used: str, rate: float, model_cpu: float, ways: dict[str, float]
) -> Figures:
    """``run`` with the model alone as the mean of its rates measured before and after the
    end-to-end runs (a shared machine's speed drifts from one minute to the next: 194-240
    texts/s in six runs of one sitting), and its least CPU per text of both."""
    return replace(
        run,
        model_texts_per_s=(run.model_texts_per_s + rate) / 2,
        model_cpu_ms_per_text=min(run.model_cpu_ms_per_text, model_cpu),
        model_ways={w: (run.model_ways[w] + ways[w]) / 2 for w in ways},
        model_before_after=(run.model_texts_per_s, rate),
    )


def _end_to_end(
    base: Settings,
    encoder: str,
    used: str,
    rate: float,
    model_cpu: float,
    ways: dict[str, float],
    *,
    events: int,
) -> Figures:
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        Path(tmp).chmod(0o755)  # the embedded PostgreSQL runs as another user
        settings = with_encoder(
            Settings(
                data_dir=Path(tmp),
                model_path=base.model_path,
                web_port=0,
                embed_threads=base.embed_threads,
                fetch_wait_ms=base.fetch_wait_ms,
            ),
            encoder,
        )
        tenant = f"bench-{uuid.uuid4().hex[:6]}"
        raws = synthetic_events(tenant, events)
        stack = EmbeddedStack(settings, write_runtime=True)
        resolved = stack.start()
        try:
            prepare(resolved)
            worker = start_worker(resolved)
            try:
                time.sleep(6)  # the consumer group join completes (Tansu: half the session timeout)
                roots = _stack_roots(resolved)
                idle = _idle_cpu_ms_per_s(roots, IDLE_SECONDS)
                out.print(f"{encoder}: publishing and ingesting {events} events end to end …")
                before = cpu_budget.snapshot(roots=roots)
                started, began = time.perf_counter(), time.time()
                publish_events(resolved, raws)
                last = _wait_counted(resolved, tenant, events, timeout=3600)
                seconds = time.perf_counter() - started  # to the count that saw them all
                if last is not None and 0 < last - began <= seconds:  # the stack's own clock
                    seconds = last - began
                cpu = cpu_budget.spent(before, cpu_budget.snapshot(roots=roots))
                status = wait_for(resolved, [(tenant, r["event_id"]) for r in raws], timeout=60)
                if status.pending or status.dead:
                    raise RuntimeError(f"{len(status.pending)} pending, {len(status.dead)} dead")
            finally:
                stop_worker(worker)
            assert resolved.postgres_dsn is not None
            samples = asyncio.run(_pg_latency(resolved.postgres_dsn, 2000))
            writes = asyncio.run(write_path.measure(resolved.postgres_dsn, 2000, roots))
        finally:
            stack.stop()
    cuts = statistics.quantiles(samples, n=100)
    return Figures(
        used,
        rate,
        events / seconds,
        events,
        seconds,
        statistics.median(samples),
        cuts[94],
        cuts[98],
        cpu,
        model_cpu,
        writes,
        idle,
        ways,
    )


IDLE_SECONDS = 5.0


def _idle_cpu_ms_per_s(roots: set[int], seconds: float) -> dict[str, float]:
    """The stack's CPU (worker, broker, PostgreSQL, Redis) per second while nothing is sent,
    by part."""
    before = cpu_budget.snapshot(roots=roots)
    time.sleep(seconds)
    spent = cpu_budget.spent(before, cpu_budget.snapshot(roots=roots))
    skip = (cpu_budget.OUTSIDE, cpu_budget.UNATTRIBUTED, "bench (publisher)")
    return {p: s * 1000 / seconds for p, s in spent.items() if p not in skip}


def _stack_roots(settings: Settings) -> set[int]:
    """The stack's processes besides this one's children (the worker, Tansu, Redis): the
    embedded PostgreSQL's postmaster, whose backends are its children."""
    pid_file = settings.data_dir.resolve() / "postgres" / "postmaster.pid"
    try:
        return {int(pid_file.read_text().split()[0])}
    except (OSError, ValueError, IndexError):
        return set()


def print_ingest(runs: list[Figures]) -> None:
    table = Table(title="memstream bench ingest", title_justify="left")
    table.add_column("figure")
    for figures in runs:
        table.add_column(figures.encoder, justify="right")
    first = runs[0]

    def row(name: str, cell: Any) -> None:
        table.add_row(name, *(cell(f) for f in runs))

    row(f"embedding model alone (texts/s, passes of {bootstrap.EMBED_BATCH_SIZE}; the mean "
        "of before and after the runs)", lambda f: f"{f.model_texts_per_s:.1f}")  # fmt: skip
    row("  before · after the end-to-end runs (texts/s)",
        lambda f: " · ".join(f"{r:.1f}" for r in f.model_before_after))  # fmt: skip
    for way in dict.fromkeys(w for f in runs for w in f.model_ways):
        row(f"  {way} (texts/s)",
            lambda f, w=way: f"{f.model_ways[w]:.1f}" if w in f.model_ways else "—")  # fmt: skip
    row(f"  × {first.encoder}", lambda f: f"{f.model_texts_per_s / first.model_texts_per_s:.2f}")
    row(f"end to end, {first.events} events (events/s)",
        lambda f: f"{f.end_to_end_events_per_s:.1f}")  # fmt: skip
    row(f"  × {first.encoder}",
        lambda f: f"{f.end_to_end_events_per_s / first.end_to_end_events_per_s:.2f}")  # fmt: skip
    row("end to end / model", lambda f: f"{f.end_to_end_events_per_s / f.model_texts_per_s:.0%}")
    row("end-to-end wall time (s)", lambda f: f"{f.seconds:.1f}")
    row("Postgres write p50 / p95 / p99 (ms)",
        lambda f: f"{f.pg_p50_ms:.2f} / {f.pg_p95_ms:.2f} / {f.pg_p99_ms:.2f}")  # fmt: skip
    # Where the cores went while the events were ingested, and the rate they allow at that cost.
    cores = os.cpu_count() or 1
    parts = sorted({p for f in runs for p in f.cpu_s}, key=lambda p: -first.cpu_s.get(p, 0.0))
    for part in parts:
        row(f"CPU per event, {part} (ms)", lambda f, p=part: f"{f.cpu_ms_per_event(p):.2f}")
    row("CPU per event, all (ms)", lambda f: f"{f.cpu_ms_per_event():.2f}")
    row("model alone, CPU per text (ms)", lambda f: f"{f.model_cpu_ms_per_text:.2f}")
    row("CPU per event outside the model (ms; the stack less the model)",
        lambda f: f"{f.cpu_ms_outside_model():.2f}")  # fmt: skip
    row(f"  the stack idle for {IDLE_SECONDS:.0f} s before publishing: CPU (ms/s; fetch "
        "polling, timers)", lambda f: f"{sum(f.idle_cpu_ms_per_s.values()):.1f}")  # fmt: skip
    for part in sorted(first.idle_cpu_ms_per_s, key=lambda p: -first.idle_cpu_ms_per_s[p]):
        row(f"    {part} (ms/s)", lambda f, p=part: f"{f.idle_cpu_ms_per_s.get(p, 0.0):.1f}")
    row("  that idle rate over the run's wall time, per event (ms; at most, polling while busy)",
        lambda f: f"{f.idle_ms_per_event():.2f}")  # fmt: skip
    row("  outside the model less that idle share (ms; the events' own cost, at least)",
        lambda f: f"{f.busy_ms_outside_model():.2f}")  # fmt: skip
    for i, way in enumerate(w.way for w in first.writes):
        row(f"write path alone, {way}: events/s; CPU per event, client / PostgreSQL (ms)",
            lambda f, i=i: f"{f.writes[i].events_per_s:.0f}; {f.writes[i].client_cpu_ms:.2f} / "
            f"{f.writes[i].postgres_cpu_ms:.2f}")  # fmt: skip
    row(f"cores busy (of {cores})",
        lambda f: f"{f.cpu_ms_per_event() * f.events / 1000 / f.seconds:.2f}")  # fmt: skip
    row(f"events/s {cores} cores allow at this cost",
        lambda f: f"{cores * 1000 / f.cpu_ms_per_event():.1f}")  # fmt: skip
    out.print(table)


def encoders(listed: str) -> list[str]:
    from memstream.services.settings import ENCODERS

    chosen = [e.strip() for e in listed.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in ENCODERS]
    if unknown or not chosen:
        raise SystemExit(f"memstream bench: --encoders {listed!r}: use {', '.join(ENCODERS)}")
    return chosen


def bench(settings: Settings, args: Any) -> int:
    if args.what == "ingest":
        print_ingest(bench_ingest(args.events, args.model_sample, encoders(args.encoders)))
        return 0
    if args.what == "query":
        from memstream.bench.query import bench_query, print_query

        print_query(
            bench_query(
                args.memories,
                args.questions,
                encoders(args.encoders),
                args.burst,
                via_http=args.via_http,
            )
        )
        return 0
    if args.what == "replay":
        from memstream.bench.replay import bench_replay, print_replay

        print_replay(bench_replay(args.versions))
        return 0
    if args.what == "soak":
        from memstream.bench.soak import bench_soak
        from memstream.bench.soak_report import print_soak

        print_soak(
            bench_soak(args.requests, args.concurrency, args.memories, args.soak_burst, args.churn)
        )
        return 0
    if args.what == "broker":
        from memstream.bench.broker import bench_broker, print_broker

        print_broker(bench_broker([int(n) for n in args.batches.split(",") if n.strip()]))
        return 0
    if args.what == "rescore":
        from memstream.bench.rescore import bench_rescore, print_rescore

        print_rescore(args.versions, *bench_rescore(args.versions))
        return 0
    if args.what == "erasure":
        from memstream.bench.erasure import bench_erasure, print_erasure

        print_erasure(bench_erasure(args.versions, args.subject_versions, args.vector_points))
        return 0
    if args.what == "scale":
        from memstream.bench.scale_cli import bench_scale_cli

        return bench_scale_cli(args)
    if args.what == "quality":
        from memstream.bench.quality.bench import bench_quality_cli

        return bench_quality_cli(args)
    raise AssertionError(args.what)
