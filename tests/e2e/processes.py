"""Running memstream commands as real processes, the way a user runs them, and the hang guards
of the tests that wait on them.

A timeout in a test is a hang guard, not a performance bound: it must hold on the slowest host
the suite runs on. Every guard here is given in seconds on a host where the bundled model
encodes ~``REFERENCE_TEXTS_PER_SECOND`` texts a second, and is multiplied by ``slowness()``:
that rate over this host's, measured once per run by encoding a small batch in a child
process (a host 15-20x slower at the model gets guards 15-20x longer), never below 1.
``MEMSTREAM_TEST_SLOWNESS`` sets the factor instead (e.g. 1 to skip the measurement).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_TEXTS_PER_SECOND = 385.0  # the bundled MiniLM, torch CPU, on the host guards were sized
SLOWNESS_VARIABLE = "MEMSTREAM_TEST_SLOWNESS"
_MEASURE = """
import sys, time
from pathlib import Path
from memstream.services.adapters.torch_encoder import load_torch
from memstream.services.bootstrap import resolve_model_path
from memstream.services.settings import Settings
encoder = load_torch(resolve_model_path(Settings()), trace=False)
texts = [f"Customer C-{n} returned order O-{n}, a blue kettle, for a refund." for n in range(96)]
encoder.encode(texts[:16], 16, None)
started = time.perf_counter()
encoder.encode(texts, 32, None)
print(len(texts) / (time.perf_counter() - started))
"""
_slowness: list[float] = []


def slowness() -> float:
    """How many times slower at the model this host is than the reference (>= 1), measured
    once per run (``MEMSTREAM_TEST_SLOWNESS`` overrides)."""
    if _slowness:
        return _slowness[0]
    given = os.environ.get(SLOWNESS_VARIABLE)
    if given:
        factor = float(given)
    else:
        measured = subprocess.run(
            [sys.executable, "-c", _MEASURE],
            env=memstream_env({}),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,  # the measurement's own guard: a model load on the slowest host
            check=True,
        )
        rate = float(measured.stdout.strip().splitlines()[-1])
        factor = REFERENCE_TEXTS_PER_SECOND / rate
        print(f"hang guards: the model encodes {rate:.0f} texts/s here, x{max(1.0, factor):.1f}")
    _slowness.append(max(1.0, factor))
    return _slowness[0]


def guard(seconds: float) -> float:
    """A hang guard of ``seconds`` on the reference host, for this one."""
    return seconds * slowness()


def memstream_env(overrides: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(overrides)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_cli(
    args: list[str], env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run one command; ``timeout`` is a hang guard in reference seconds (see ``guard``)."""
    return subprocess.run(
        [sys.executable, "-m", "memstream.cli", *args],
        env=memstream_env(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=guard(timeout),
        check=False,
    )


class Process:
    """A long-running memstream command whose output is collected in the background."""

    def __init__(self, args: list[str], env: Mapping[str, str]) -> None:
        self.args = args
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memstream.cli", *args],
            env=memstream_env(env),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, fragment: str, timeout: float = 90) -> str:
        timeout = guard(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                if fragment in line:
                    return line
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the reader catch the last lines
                raise AssertionError(
                    f"memstream {' '.join(self.args)} exited with {self.proc.returncode} before "
                    f"printing {fragment!r}:\n{self.output[-4000:]}"
                )
            time.sleep(0.1)
        raise AssertionError(f"no {fragment!r} within {timeout}s:\n{self.output[-4000:]}")

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def terminate(self, timeout: float = 60) -> int:
        timeout = guard(timeout)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"did not stop within {timeout}s:\n{self.output[-4000:]}"
            ) from None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def wait_gone(processes: list[psutil.Process], timeout: float = 15) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    return alive
