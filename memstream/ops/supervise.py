"""Keeping the embedded stack's parts where clients expect them, across crashes and restarts.

- Ports: the embedded broker's and redis-server's ports are recorded in ``DATA_DIR/ports.json``
  and reused by the next ``up`` while they are free, so clients made before a restart (which
  know ``host:port``, not the data dir) reconnect to the same address.
- Orphans: ``up`` killed with SIGKILL cannot stop the embedded PostgreSQL (it is not its child
  in the kernel's sense of PDEATHSIG); the next ``up``, holding the data dir's lock, finds the
  postmaster of its data directory and stops it before starting its own.
- Watchdog: a part that dies while ``up`` runs (redis-server) is started again on its port.

Must not import handlers or streams.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

PORTS_FILE = "ports.json"
WATCH_SECONDS = 1.0


def remembered_port(
    data_dir: Path, part: str, is_free: Callable[[int], bool], fresh: Callable[[], int]
) -> int:
    """The port ``part`` had last time on ``data_dir`` if it is free now, else a fresh one
    (recorded either way)."""
    path = data_dir / PORTS_FILE
    try:
        ports: dict[str, int] = json.loads(path.read_text())
    except (OSError, ValueError):
        ports = {}
    port = ports.get(part)
    if not isinstance(port, int) or not is_free(port):
        if isinstance(port, int):
            log.warning("%s: port %d of the last run is taken; using another", part, port)
        port = fresh()
    ports[part] = port
    path.write_text(json.dumps(ports, indent=2))
    return port


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_orphaned_postgres(pgdata: Path, timeout: float = 15.0) -> int | None:
    """Stop a postmaster left running on ``pgdata`` by a stack that died; return its pid.

    Only call it holding the data dir's lock: then no live stack owns that server."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None
    if pid <= 1 or not _alive(pid) or not _is_postgres(pid):
        return None
    os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    return pid


def _is_postgres(pid: int) -> bool:
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return True  # no /proc: trust the pid file the server wrote
    return name.startswith("postgres")


class Watchdog:
    """Restarts a child process (by calling ``spawn`` again) whenever it exits."""

    def __init__(
        self,
        part: str,
        proc: subprocess.Popen[bytes],
        spawn: Callable[[], subprocess.Popen[bytes]],
    ) -> None:
        self.part = part
        self.proc = proc
        self.restarts = 0
        self._spawn = spawn
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watch {part}", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(WATCH_SECONDS):
            code = self.proc.poll()
            if code is None or self._stopped.is_set():
                continue
            log.warning("%s exited with status %s; starting it again", self.part, code)
            try:
                self.proc = self._spawn()
                self.restarts += 1
            except Exception as exc:  # the next tick tries again
                log.error("%s could not be restarted: %s", self.part, exc)
