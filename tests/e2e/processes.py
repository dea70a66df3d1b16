"""Running memstream commands as real processes, the way a user runs them."""

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


def memstream_env(overrides: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(overrides)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_cli(
    args: list[str], env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstream.cli", *args],
        env=memstream_env(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
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
