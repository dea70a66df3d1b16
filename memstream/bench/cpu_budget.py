"""CPU time by part of the stack over an interval: where a benchmark's cores went.

``snapshot()`` reads the CPU seconds (user + system) of every process on the machine, each
labelled with the part it is (``part_of``), and the machine's busy seconds; ``spent(before,
after)`` is the difference by part. A process that started and ended between the two snapshots
is not seen by name: the machine's busy time still counts it, and ``spent`` reports what the
named processes do not explain as ``unattributed``. Used by ``bench ingest`` to say how many CPU
milliseconds one event costs in each part, and so what rate the machine's cores allow.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass

import psutil

UNATTRIBUTED = "unattributed"
# With ``roots``: what runs on the machine outside the trees of those processes (on a shared
# machine, other people's work and their own PostgreSQL or broker).
OUTSIDE = "outside the stack"


def part_of(name: str, cmdline: list[str]) -> str:
    """The stack part a process is, from its name and command line."""
    line = " ".join(cmdline)
    if "postgres" in name:
        return "postgres"
    if "tansu" in name or "tansu" in line:
        return "broker (tansu)"
    if "redis" in name:
        return "redis"
    if "memstream" in line and line.rstrip().endswith(" worker"):
        return "worker"
    return "other"


@dataclass(frozen=True, slots=True)
class Snapshot:
    by_pid: dict[int, tuple[str, float]]  # pid → (part, CPU seconds so far)
    busy: float  # the machine's busy CPU seconds so far (all cores)


def snapshot(bench_pid: int | None = None, roots: Collection[int] = ()) -> Snapshot:
    """Every process's CPU seconds, by part. With ``roots``, only the processes in the trees of
    the bench and of ``roots`` count as their part; the others are ``OUTSIDE``."""
    own = os.getpid() if bench_pid is None else bench_pid
    by_pid: dict[int, tuple[str, float]] = {}
    procs = list(psutil.process_iter(["name", "cmdline", "cpu_times", "ppid"]))
    ours = _trees(procs, {own, *roots}) if roots else None
    for proc in procs:
        try:
            times = proc.info["cpu_times"]
            if times is None:
                continue
            if proc.pid == own:
                part = "bench (publisher)"
            elif ours is not None and proc.pid not in ours:
                part = OUTSIDE
            else:
                part = part_of(proc.info["name"] or "", proc.info["cmdline"] or [])
            by_pid[proc.pid] = (part, times.user + times.system)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    machine = psutil.cpu_times()
    idle = machine.idle + getattr(machine, "iowait", 0.0)
    busy = (
        sum(machine) - idle - getattr(machine, "guest", 0.0) - getattr(machine, "guest_nice", 0.0)
    )
    return Snapshot(by_pid, busy)


def _trees(procs: list[psutil.Process], roots: set[int]) -> set[int]:
    """The pids of ``roots`` and of all their descendants."""
    children: dict[int, list[int]] = {}
    for proc in procs:
        children.setdefault(proc.info.get("ppid") or 0, []).append(proc.pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def spent(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU seconds by part between the snapshots (processes alive at ``after``; one that
    started in between counts from 0), plus ``unattributed``: the machine's busy time that
    the named processes do not explain (processes that came and went, the kernel)."""
    parts: dict[str, float] = {}
    for pid, (part, seconds) in after.by_pid.items():
        start = before.by_pid.get(pid, (part, 0.0))[1]
        parts[part] = parts.get(part, 0.0) + max(0.0, seconds - start)
    parts[UNATTRIBUTED] = max(0.0, (after.busy - before.busy) - sum(parts.values()))
    return parts
