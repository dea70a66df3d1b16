"""``memstream bench soak``: many requests with ingest bursts and worker churn; the tail.

One run, this machine: a fresh embedded stack, one worker process, M memories for one tenant,
then N requests (``concurrency`` in flight) while, in the background, bursts of events are
published and, if asked, a second worker joins and leaves the group, spread over the run
(each a consumer-group rebalance). Reports end-to-end p50 / p99 / p99.9 / max, the count over
1 s, the server's queue time (broker → worker, ``latency_ms["queue"]``) at the same cuts, errors
and timeouts, the rebalances the worker logged, each minute the broker's and the (first)
worker's RSS and CPU seconds, and every 10,000 requests their tail and the worker's stages.
Nothing is asserted.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil
from rich.console import Console

from memstream.bench.kit import publish_events, stop_worker, synthetic_events
from memstream.bench.query import questions
from memstream.services.settings import Settings

out = Console(highlight=False)


def _spawn_worker(settings: Settings, log: Path, **env: str) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    full.update(settings.to_env())
    full.update(env)
    full["MEMSTREAM_LOG_LEVEL"] = "warn"
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "memstream.cli", "worker"],
            env=full,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _wait_ready(log: Path, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "memstream ready" in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the worker exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    raise RuntimeError("the worker was not ready in time")


def cut(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Sampler:
    """Each minute: the broker's and the worker's RSS (MiB) and CPU seconds."""

    def __init__(
        self,
        broker: psutil.Process | None,
        worker: psutil.Process | None,
        answered: list[float] | None = None,
    ) -> None:
        self.rows: list[dict[str, float]] = []
        self._answered = answered  # printed each minute, so a long run shows its progress
        self._broker = broker
        self._worker = worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak sampler", daemon=True)

    def _cpu(self, proc: psutil.Process | None) -> float:
        try:
            return float(sum(proc.cpu_times()[:2])) if proc is not None else float("nan")
        except psutil.Error:
            return float("nan")

    def _rss(self, proc: psutil.Process | None) -> float:
        try:
            return proc.memory_info().rss / 2**20 if proc is not None else float("nan")
        except psutil.Error:
            return float("nan")

    def sample(self) -> dict[str, float]:
        return {"broker_rss_mib": self._rss(self._broker), "broker_cpu": self._cpu(self._broker),
                "worker_rss_mib": self._rss(self._worker),
                "worker_cpu": self._cpu(self._worker)}  # fmt: skip

    def _run(self) -> None:
        seen = 0
        while not self._stop.wait(60.0):
            self.rows.append(self.sample())
            if self._answered is not None:
                total = len(self._answered)
                out.print(
                    f"  minute {len(self.rows) - 1}: {total - seen} answered ({total} in all), "
                    f"RSS broker {self.rows[-1]['broker_rss_mib']:.0f} MiB, "
                    f"worker {self.rows[-1]['worker_rss_mib']:.0f} MiB"
                )
                seen = total

    def start(self) -> Sampler:
        self.rows.append(self.sample())
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.rows.append(self.sample())


def _broker_process() -> psutil.Process | None:
    """The embedded broker this process started (Tansu), if any."""
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name().startswith("tansu"):
                return child
        except psutil.Error:
            continue
    return None


def per_minute(done_at: list[float]) -> list[int]:
    """Answers completed in each whole minute from the first (the last, partial, minute is
    left out unless it is the only one)."""
    if not done_at:
        return []
    minutes = [0] * (int(max(done_at) // 60) + 1)
    for moment in done_at:
        minutes[int(moment // 60)] += 1
    return minutes[:-1] or minutes


WINDOW = 10_000  # requests per row of the soak's table: the tail and the broker at 10k, 20k, …


def window(
    count: int,
    ends: list[float],
    queues: list[float],
    stages: Sequence[Mapping[str, float]] = (),
) -> dict[str, float]:
    """The last ``WINDOW`` requests' tail (end to end, and the broker → worker queue time,
    which is where a broker whose fetches walk more each time would show), and the mean of
    each stage the worker timed (``latency_ms``: embed, vector, keyword, …) as
    ``stage_<name>_ms``,
    which says where a slower window spent its time."""
    row = {"requests": float(count), "p50_ms": cut(ends, 0.5), "p99_ms": cut(ends, 0.99),
           "queue_p50_ms": cut(queues, 0.5), "queue_p99_ms": cut(queues, 0.99)}  # fmt: skip
    names = sorted({name for timed in stages for name in timed if name != "queue"})
    for name in names:
        row[f"stage_{name}_ms"] = statistics.fmean(float(timed.get(name, 0.0)) for timed in stages)
    return row


def near_turns(spans: list[tuple[float, float]], period_s: float) -> tuple[int, int, int]:
    """(generation turns during the run, requests over 1 s in flight at a turn or started
    within 2 s after one, requests over 1 s in all) for ``spans`` of (start, end) epoch s."""
    if not spans or period_s <= 0:
        return 0, 0, sum(1 for a, b in spans if b - a > 1)
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    turns = [n * period_s for n in range(int(first // period_s) + 1, int(last // period_s) + 1)]
    slow = [(a, b) for a, b in spans if b - a > 1]
    near = sum(1 for a, b in slow if any(a - 2 <= t <= b for t in turns))
    return len(turns), near, len(slow)


async def _soak(
    settings: Settings,
    tenant: str,
    total: int,
    concurrency: int,
    done_at: list[float],
    spans: list[tuple[float, float]],
    windows: list[dict[str, float]],
    at_window: Callable[[], dict[str, float]],
) -> tuple[list[float], list[float], dict[str, int]]:
    from memstream.ops.identity import credential_for
    from memstream.streams.client import MemoryClient, MemoryClientError, RetrievalTimeout

    assert settings.broker is not None
    key = credential_for(settings, "agent", tenant=tenant)  # provisioned by publish_events
    texts = questions(500)
    rng = random.Random(16)  # noqa: S311 - a benchmark's mix, not crypto
    ends: list[float] = []
    queues: list[float] = []
    outcomes: dict[str, int] = {}
    stages: list[Mapping[str, float]] = []
    issued = 0
    origin = time.perf_counter()
    async with MemoryClient(settings.broker, settings.topics, timeout=60, credential=key) as client:

        async def lane() -> None:
            nonlocal issued
            while issued < total:
                issued += 1
                started = time.perf_counter()
                wall = time.time()
                try:
                    reply = await client.retrieve(
                        rng.choice(texts), tenant, force=rng.random() < 0.7, limit=5
                    )
                    key = reply["status"]
                    queues.append(float(reply["latency_ms"].get("queue", 0.0)))
                    stages.append(reply["latency_ms"])
                except RetrievalTimeout:
                    key = "timeout"
                except MemoryClientError:
                    key = "client_error"
                finished = time.perf_counter()
                ends.append((finished - started) * 1000)
                spans.append((wall, wall + finished - started))
                if key in ("ok", "skipped"):
                    done_at.append(finished - origin)
                outcomes[key] = outcomes.get(key, 0) + 1
                if len(ends) % WINDOW == 0:
                    row = window(len(ends), ends[-WINDOW:], queues[-WINDOW:], stages[-WINDOW:])
                    row.update(at_window())
                    windows.append(row)
                    out.print(
                        f"  {len(ends)} requests answered · last {WINDOW}: p50 "
                        f"{row['p50_ms']:.0f} ms, p99 {row['p99_ms']:.0f} ms, queue p50 "
                        f"{row['queue_p50_ms']:.0f} ms, broker RSS "
                        f"{row.get('broker_rss_mib', float('nan')):.0f} MiB"
                    )

        await asyncio.gather(*(lane() for _ in range(concurrency)))
    return ends, queues, outcomes


def bench_soak(
    requests: int, concurrency: int, memories: int, burst: int, churn: int
) -> dict[str, Any]:
    from memstream.ops.ingest_status import wait_for
    from memstream.ops.stack import EmbeddedStack, free_port
    from memstream.ops.up import prepare

    data_dir = Path(tempfile.mkdtemp(prefix="memstream-soak-"))
    data_dir.chmod(0o755)
    base = Settings.from_env()
    settings = Settings(data_dir=data_dir, model_path=base.model_path, web_port=0)
    tenant = f"soak-{uuid.uuid4().hex[:6]}"
    stack = EmbeddedStack(settings)
    resolved = stack.start()
    logs = data_dir / "logs"
    figures: dict[str, Any] = {"requests": requests, "concurrency": concurrency}
    stop = threading.Event()
    worker: subprocess.Popen[bytes] | None = None
    try:
        prepare(resolved)
        worker = _spawn_worker(resolved, logs / "worker.log")
        _wait_ready(logs / "worker.log", worker)
        raws = synthetic_events(tenant, memories)
        publish_events(resolved, raws)
        wait_for(resolved, [(tenant, r["event_id"]) for r in raws], timeout=3600, poll=0.5)
        out.print(f"{memories} events ingested; {requests} requests, {concurrency} in flight …")
        published = [0]

        def ingest_bursts() -> None:
            n = 0
            while not stop.wait(5.0):
                n += 1
                batch = synthetic_events(tenant, burst, seed=1000 + n)
                for raw in batch:
                    raw["event_id"] = f"{raw['event_id']}-burst{n}"
                publish_events(resolved, batch)
                published[0] += len(batch)

        def churn_workers() -> None:
            # Spread over the run: the n-th worker joins once n/(churn+1) of the requests are
            # answered (a restart late in a long run meets the most data; all at the start
            # would also weigh on the first minute alone, which the rate is compared with).
            for n in range(churn):
                due = (n + 1) * requests // (churn + 1)
                while len(done_at) < due:
                    if stop.wait(1.0):
                        return
                log = logs / f"churn-{n}.log"
                extra = _spawn_worker(
                    resolved,
                    log,
                    MEMSTREAM_VECTOR_DIR=str(data_dir / f"churn-vectors-{n}"),
                    MEMSTREAM_WEB_PORT=str(free_port()),
                )
                try:
                    _wait_ready(log, extra)
                    stop.wait(15.0)
                finally:
                    stop_worker(extra)

        done_at: list[float] = []
        sampler = Sampler(_broker_process(), psutil.Process(worker.pid), done_at).start()
        helpers = [threading.Thread(target=ingest_bursts, daemon=True)]
        if churn:
            helpers.append(threading.Thread(target=churn_workers, daemon=True))
        for helper in helpers:
            helper.start()
        started = time.monotonic()
        spans: list[tuple[float, float]] = []
        windows: list[dict[str, float]] = []
        ends, queues, outcomes = asyncio.run(
            _soak(resolved, tenant, requests, concurrency, done_at, spans, windows,
                  lambda: {k: v for k, v in sampler.sample().items() if k.endswith("rss_mib")})
        )  # fmt: skip
        figures["windows"] = windows
        figures["rotate_s"] = resolved.rotate_seconds or 0
        figures["turns"] = near_turns(spans, figures["rotate_s"])
        figures["seconds"] = time.monotonic() - started
        sampler.stop()
        figures["per_minute"] = per_minute(done_at)
        figures["samples"] = sampler.rows
        stop.set()
        for helper in helpers:
            helper.join(120)
        figures["ingested_meanwhile"] = published[0]
        figures["outcomes"] = outcomes
        figures["end_to_end"] = {q: cut(ends, q) for q in (0.5, 0.99, 0.999, 1.0)}
        figures["queue"] = {q: cut(queues, q) for q in (0.5, 0.99, 0.999, 1.0)}
        figures["over_1s"] = sum(1 for e in ends if e > 1000)
        figures["queue_over_1s"] = sum(1 for e in queues if e > 1000)
        figures["mean_ms"] = statistics.fmean(ends) if ends else float("nan")
        figures["rebalances"] = (
            (logs / "worker.log").read_text(errors="replace").count("partitions assigned")
        )
    finally:
        stop.set()
        if worker is not None:  # also when the run failed: never leave a worker behind
            stop_worker(worker)
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return figures
