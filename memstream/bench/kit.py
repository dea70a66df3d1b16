"""What the benchmarks share: synthetic events, a worker process, publishing to the broker.

Must not import the benchmarks themselves (``bench``, ``bench_query``, ``bench_replay``).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.ops.identity import provision_local
from memstream.ops.publish import Signers
from memstream.services.domain.validation import validate_event
from memstream.services.settings import Settings
from memstream.streams.producer import EventProducer

_SUBJECTS = ["order", "return", "complaint", "delivery", "invoice", "subscription", "warranty"]
_ITEMS = [
    "XR-500 headphones",
    "X1 phone",
    "trail shoes",
    "coffee grinder",
    "USB-C charger",
    "standing desk",
    "rain jacket",
    "smart watch",
    "espresso machine",
    "backpack",
]
_VERBS = [
    "asked about",
    "reported a problem with",
    "requested a refund for",
    "praised",
    "ordered",
    "returned",
    "was charged twice for",
    "changed the address for",
]


def synthetic_text(rng: random.Random, n: int) -> str:
    return (
        f"Customer C-{rng.randint(1, 5000)} {rng.choice(_VERBS)} the {rng.choice(_ITEMS)} "
        f"({rng.choice(_SUBJECTS)} #{n}); agent noted follow-up in {rng.randint(1, 14)} days "
        f"and tagged it {rng.choice(['urgent', 'routine', 'vip', 'billing'])}."
    )


def synthetic_events(tenant: str, count: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)  # noqa: S311 - synthetic data, not crypto
    base = datetime(2026, 1, 1, tzinfo=UTC)
    memories = max(1, count // 4)  # ~4 versions per memory: supersession on the hot path
    return [
        {
            "event_id": f"bench-{i}",
            "tenant_id": tenant,
            "memory_key": f"m:{i % memories}",
            "entity_type": "customer",
            "entity_id": f"C-{i % memories}",
            "fact_type": "note",
            "content": synthetic_text(rng, i),
            "source_system": "crm",
            "occurred_at": (base + timedelta(seconds=i)).isoformat(),
        }
        for i in range(count)
    ]


def start_worker(settings: Settings) -> subprocess.Popen[str]:
    """A ``memstream worker`` process on resolved settings, returned once it is ready.

    Its output is drained for its whole life by a thread that keeps the last lines
    (``worker_tail``): a pipe nobody reads fills after 64 KiB, and a worker blocked writing a log
    line neither answers requests nor stops on SIGTERM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(settings.to_env())
    worker = subprocess.Popen(
        [sys.executable, "-m", "memstream.cli", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert worker.stdout is not None
    tail: deque[str] = deque(maxlen=400)
    _TAILS[worker.pid] = tail
    for line in worker.stdout:
        tail.append(line)
        if "memstream ready" in line:
            threading.Thread(target=_drain, args=(worker, tail), daemon=True).start()
            return worker
    raise RuntimeError("the worker exited before it was ready: " + "".join(tail)[-2000:])


_TAILS: dict[int, deque[str]] = {}


def _drain(worker: subprocess.Popen[str], tail: deque[str]) -> None:
    assert worker.stdout is not None
    for line in worker.stdout:
        tail.append(line)


def worker_tail(worker: subprocess.Popen[Any]) -> str:
    """The last lines the worker printed (what a failed run should show)."""
    return "".join(_TAILS.get(worker.pid, ()))


def dump_worker(worker: subprocess.Popen[Any]) -> None:
    """Ask a running worker where it is (ops.up.worker): every asyncio task (if its loop still
    runs), then every thread's stack, even with the loop blocked. The lines land in its output
    (``worker_tail``)."""
    if worker.poll() is not None:
        return
    for sig in (signal.SIGUSR1, signal.SIGQUIT):
        with contextlib.suppress(OSError):
            worker.send_signal(sig)
        time.sleep(1.5)


def stop_worker(
    worker: subprocess.Popen[Any], timeout: float = 60.0, *, failed: BaseException | None = None
) -> int:
    """SIGTERM, wait up to ``timeout``, then SIGKILL: a bench never leaves a worker behind and
    never hides the error that stopped it behind a second one. Returns the exit code.

    ``failed``: the error that ends the bench while the worker still runs; the worker's state
    (``dump_worker``) and its last lines are printed first, as they were when it failed."""
    if failed is not None and worker.poll() is None:
        dump_worker(worker)
        sys.stderr.write(
            f"the bench failed ({type(failed).__name__}) while the worker ran; its state and "
            f"last lines:\n{worker_tail(worker)[-12000:]}\n"
        )
    if worker.poll() is None:
        worker.terminate()
        try:
            return worker.wait(timeout)
        except subprocess.TimeoutExpired:
            dump_worker(worker)  # where it is stuck
            sys.stderr.write(
                f"the worker did not stop within {timeout:.0f} s of SIGTERM; killed it. "
                f"Its last lines:\n{worker_tail(worker)[-12000:]}\n"
            )
            worker.kill()
    return worker.wait(30)


def publish_events(settings: Settings, raws: list[dict[str, Any]]) -> None:
    """Validate, encode and publish ``raws`` with the idempotent producer; waits for acks."""
    sources: dict[str, set[str]] = {}
    for raw in raws:
        sources.setdefault(str(raw["tenant_id"]), set()).add(str(raw["source_system"]))
    provision_local(settings, {t: sorted(s) for t, s in sources.items()})
    signers = Signers(settings)  # the worker verifies every event: signed like `publish`
    producer = EventProducer(settings.broker or "", signers.headers)
    now = datetime.now(UTC)
    for raw in raws:
        producer.send(settings.topics.events, validate_event(raw, now))
    if producer.finish(60):
        raise RuntimeError("the broker did not acknowledge every event")


def with_encoder(settings: Settings, encoder: str) -> Settings:
    """``settings`` with ``encoder``, the model cache of this user's environment."""
    base = Settings.from_env()
    return replace(settings, encoder=encoder, model_cache=base.model_cache_dir)
