"""``memstream up`` / ``memstream worker``: the stack and one Faust worker in the foreground.

``up`` starts what the settings leave unset (memstream.ops.stack), applies migrations, creates the
topics, then runs the worker until Ctrl-C / SIGTERM and stops everything it started.
``up`` also starts the HTTP gateway (``memstream gateway``) on MEMSTREAM_GATEWAY_PORT.

Stopping goes in order (``StopInOrder``): the doors close (the gateway: HTTP and MCP), the
worker drains the events topic while it still runs (when the broker is the embedded one, which
keeps its topics in memory), the worker stops, then the broker and the rest. A second Ctrl-C
cuts the drain short.
``worker`` runs one more worker against a running stack (scale-out, tests).
"""

from __future__ import annotations

import asyncio
import faulthandler
import fcntl
import json
import signal
import sys
import threading
import time
from functools import partial
from types import FrameType
from typing import IO

from rich.console import Console

from memstream.ops.drain import Backlog, DrainError, drain
from memstream.ops.health import model_path
from memstream.ops.migrate import migrate
from memstream.ops.stack import (
    RUNTIME_FILE,
    EmbeddedStack,
    StackError,
    port_is_free,
    resolve_settings,
    wait_tcp,
)
from memstream.ops.topics import ensure_topics
from memstream.services.settings import Settings

console = Console(stderr=True, highlight=False)


class Interrupted(Exception):
    pass


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


def prepare(settings: Settings) -> None:
    """Migrations and topics: idempotent, run by every process that starts a worker."""
    assert settings.postgres_dsn is not None and settings.broker is not None
    migrate(settings.postgres_dsn)
    ensure_topics(settings.broker, settings.topics.all())
    # Faust's leader-election topic: Faust reads its partition 0 only, but Tansu auto-creates
    # it with 4, and every partition the worker holds is in each of its fetches (Tansu takes
    # ~0.1 ms per partition per fetch: 1.3 ms at 16 partitions, on every request's way in).
    ensure_topics(settings.broker, {leader_topic(settings): 1}, strict=False)


def leader_topic(settings: Settings) -> str:
    return f"{settings.app_id}-__assignor-__leader"


def _check_web_port(settings: Settings) -> None:
    if settings.web_port and not port_is_free(settings.web_port):
        raise StackError(
            "worker web server",
            f"port {settings.web_port} on 127.0.0.1 is already in use",
            "stop what uses it, or set MEMSTREAM_WEB_PORT to a free port (0 disables it)",
        )


VECTOR_LOCK = ".memstream-worker.lock"


def lock_vectors(settings: Settings) -> IO[str] | None:
    """With Qdrant Edge, one worker per vector dir: its shards are opened by one process only
    (a second would join the consumer group, take partitions and answer nothing). The lock is
    held until the process exits; None with a Qdrant server (any number of workers)."""
    if settings.qdrant_url is not None:
        return None
    root = settings.vector_root
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / VECTOR_LOCK).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StackError(
            "vectors (Qdrant Edge)",
            f"another worker already serves {root.resolve()} (a Qdrant Edge shard opens in "
            "one process only)",
            "run one worker per vector dir, give this one its own MEMSTREAM_VECTOR_DIR, or set "
            "MEMSTREAM_QDRANT_URL to share a Qdrant server between workers",
        ) from None
    return handle


def start_gateway(stack: EmbeddedStack, port: int) -> str:
    """The HTTP gateway as a child of the stack (stopped with it), its address added to
    ``stack.json``; returns the ready line's part ("" when MEMSTREAM_GATEWAY_PORT=0)."""
    if not port:
        return ""
    if not port_is_free(port):
        raise StackError(
            "gateway",
            f"port {port} on 127.0.0.1 is already in use",
            "stop what uses it, or set MEMSTREAM_GATEWAY_PORT to a free port (0 disables it)",
        )
    command = [sys.executable, "-m", "memstream.cli", "gateway", "--port", str(port)]
    proc = stack.spawn("gateway", command, "gateway.log")
    if not wait_tcp("127.0.0.1", port, 30.0, proc):
        raise StackError(
            "gateway",
            f"it did not listen on 127.0.0.1:{port} within 30 s "
            f"(see {stack.data_dir / 'logs' / 'gateway.log'})",
            "read that log; set MEMSTREAM_GATEWAY_PORT=0 to run without the gateway",
        )
    url = f"http://127.0.0.1:{port}"
    runtime = stack.data_dir / RUNTIME_FILE
    if runtime.exists():
        info = json.loads(runtime.read_text())
        runtime.write_text(json.dumps({**info, "gateway": url}, indent=2))
    return f" · gateway {url}"


DRAIN_TIMEOUT = 300.0  # seconds ``up`` waits at most for the worker to drain on a stop
PROGRESS_EVERY = 5.0  # seconds between the drain's progress lines


class StopInOrder:
    """``up``'s steps between a stop signal and the worker's stop: close the doors, then let
    the worker drain the events topic of the in-memory broker (``drain_timeout`` s at most,
    a progress line every few seconds, and what was left, and where, on a timeout)."""

    def __init__(self, stack: EmbeddedStack, settings: Settings, drain_timeout: float) -> None:
        self._stack = stack
        self._settings = settings
        self._timeout = drain_timeout
        self._hurried = threading.Event()

    def hurry(self) -> None:
        if not self._hurried.is_set():
            console.print("stopping now: the drain is cut short")
        self._hurried.set()

    async def before_stop(self) -> None:
        loop = asyncio.get_running_loop()
        if await loop.run_in_executor(None, self._stack.stop_part, "gateway"):
            console.print("stopping: the gateway (HTTP, MCP) is closed")
        if not self._stack.broker_in_memory:
            return  # a Kafka broker keeps what it acknowledged; the next worker takes it
        assert self._settings.broker is not None
        topic = self._settings.topics.events
        console.print(f"stopping: the worker drains {topic} (Ctrl-C again to stop now) …")
        try:
            backlog = await loop.run_in_executor(
                None,
                partial(
                    drain,
                    self._settings.broker,
                    self._settings.app_id,
                    topic,
                    timeout=self._timeout,
                    report=self._progress,
                    every=PROGRESS_EVERY,
                    stopped=self._hurried.is_set,
                ),
            )
        except DrainError as exc:
            console.print(f"memstream: stop: the drain could not be watched: {exc}", markup=False)
            return
        if not backlog.left:
            console.print(f"stopping: {topic} drained, every acknowledged event is in the ledger")
            return
        when = (
            "before the second signal" if self._hurried.is_set() else f"within {self._timeout:.0f}s"
        )
        console.print(
            f"memstream: stop: {backlog.left} acknowledged events were not ingested {when}"
            f"; they are on the embedded broker at {backlog.where()}, which keeps them in memory "
            "only: they are lost when it stops now. Publish them again after the next `memstream "
            "up` (events are idempotent on event_id), or give the drain longer (`memstream up "
            "--drain-timeout SECONDS`)",
            markup=False,
        )

    def _progress(self, backlog: Backlog, elapsed: float) -> None:
        console.print(
            f"stopping: {backlog.left} events left to ingest ({elapsed:.0f}s of "
            f"{self._timeout:.0f}s)",
            markup=False,
        )


def run_worker(
    settings: Settings, started: float, describe: str, steps: StopInOrder | None = None
) -> int:
    from memstream.streams.app import create_worker

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    held = lock_vectors(settings)  # before joining the group: refuse rather than take partitions
    worker, runtime = create_worker(settings, steps=steps)
    app = worker.app
    web = f" · health http://127.0.0.1:{settings.web_port}/health" if settings.web_port else ""

    @app.task  # type: ignore[untyped-decorator]
    async def announce() -> None:
        container = await runtime.container()
        elapsed = time.monotonic() - started
        print(f"memstream ready in {elapsed:.1f}s — {describe}{web}", flush=True)
        if container.shard_budget:
            print(f"memstream: {container.shard_budget}", flush=True)

    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        if held is not None:
            held.close()
    return 0


def up(settings: Settings, drain_timeout: float = DRAIN_TIMEOUT) -> int:
    started = time.monotonic()
    previous = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGTERM, signal.SIGINT)}
    stack = EmbeddedStack(settings)
    try:
        _check_web_port(settings)
        model_path(settings)
        console.print(f"starting memstream on data dir {settings.data_dir} …")
        resolved = stack.start()
        prepare(resolved)
        from memstream.ops.identity import ensure_dev_credentials

        written = ensure_dev_credentials(resolved)
        console.print(f"development tenant's credentials: {written} (0600)")
        assert stack.endpoints is not None
        describe = stack.endpoints.describe() + start_gateway(stack, settings.gateway_port)
        for sig, handler in previous.items():
            signal.signal(sig, handler)  # the Faust worker installs its own
        steps = StopInOrder(stack, resolved, drain_timeout)
        return run_worker(resolved, started, describe, steps)
    except Interrupted:
        return 0
    finally:
        stack.stop()


def worker(settings: Settings) -> int:
    # A worker that neither answers nor stops says where it is stuck: SIGQUIT prints every
    # thread's stack (even with the event loop blocked), SIGUSR1 every asyncio task's
    # (``streams.app.Worker``). Faust's worker takes SIGUSR1 (and SIGUSR2: a debugger), not QUIT.
    faulthandler.register(signal.SIGQUIT, all_threads=True)
    started = time.monotonic()
    resolved = resolve_settings(settings)
    _check_web_port(resolved)
    model_path(resolved)
    prepare(resolved)
    return run_worker(resolved, started, f"worker joined broker {resolved.broker}")
