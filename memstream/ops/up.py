"""``memstream up`` / ``memstream worker``: the stack and one Faust worker in the foreground.

``up`` starts what the settings leave unset (memstream.ops.stack), applies migrations, creates the
topics, then runs the worker until Ctrl-C / SIGTERM and stops everything it started.
``up`` also starts the HTTP gateway (``memstream gateway``) on MEMSTREAM_GATEWAY_PORT.
``worker`` runs one more worker against a running stack (scale-out, tests).
"""

from __future__ import annotations

import fcntl
import json
import signal
import sys
import time
from types import FrameType
from typing import IO

from rich.console import Console

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


def run_worker(settings: Settings, started: float, describe: str) -> int:
    from memstream.streams.app import create_worker

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    held = lock_vectors(settings)  # before joining the group: refuse rather than take partitions
    worker, runtime = create_worker(settings)
    app = worker.app
    web = f" · health http://127.0.0.1:{settings.web_port}/health" if settings.web_port else ""

    @app.task  # type: ignore[untyped-decorator]
    async def announce() -> None:
        await runtime.container()
        elapsed = time.monotonic() - started
        print(f"memstream ready in {elapsed:.1f}s — {describe}{web}", flush=True)

    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        if held is not None:
            held.close()
    return 0


def up(settings: Settings) -> int:
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
        return run_worker(resolved, started, describe)
    except Interrupted:
        return 0
    finally:
        stack.stop()


def worker(settings: Settings) -> int:
    started = time.monotonic()
    resolved = resolve_settings(settings)
    _check_web_port(resolved)
    model_path(resolved)
    prepare(resolved)
    return run_worker(resolved, started, f"worker joined broker {resolved.broker}")
