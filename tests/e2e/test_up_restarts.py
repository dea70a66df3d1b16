"""``memstream up`` across crashes: the broker keeps its port and topics, a killed redis-server
comes back, the PostgreSQL a SIGKILLed ``up`` left behind is stopped by the next one, and the
log is plain text (no terminal escape codes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import redis

from memstream.ops.stack import free_port
from memstream.ops.topics import partition_counts
from tests.e2e.processes import Process


def _up(data_dir: Path) -> Process:
    up = Process(
        ["up"],
        {
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_WEB_PORT": str(free_port()),
            "MEMSTREAM_LOG_LEVEL": "warn",  # the level at which a spinner once ran
        },
    )
    up.wait_for("memstream ready in", timeout=120)
    return up


def _postmaster(data_dir: Path) -> int:
    return int((data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[0])


def _redis_server(up: Process) -> psutil.Process:
    (found,) = [p for p in up.descendants() if "redis-server" in p.name()]
    return found


def test_up_survives_a_kill_of_redis_and_of_itself(data_dir: Path) -> None:
    data_dir = data_dir.resolve()
    first = _up(data_dir)
    try:
        stack = json.loads((data_dir / "stack.json").read_text())
        orphan = _postmaster(data_dir)
        # A killed redis-server is started again on its port.
        _redis_server(first).kill()
        client = redis.Redis.from_url(stack["redis_url"], socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                assert client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, first.output[-3000:]
                time.sleep(0.3)
        first.wait_for("redis-server exited", timeout=5)
    finally:
        first.kill()  # SIGKILL: nothing of `up` runs any more
    assert "\x1b[" not in first.output, "up's log holds terminal escape codes"
    assert psutil.pid_exists(orphan), "the scenario: PostgreSQL outlives a SIGKILLed up"

    second = _up(data_dir)
    try:
        assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == "zombie"
        again = json.loads((data_dir / "stack.json").read_text())
        assert again["broker"] == stack["broker"], "the broker must keep its port"
        counts = partition_counts(again["broker"])
        assert counts.get("memory.requests") == 4, counts  # the topics are back
        assert _postmaster(data_dir) != orphan
    finally:
        assert second.terminate() == 0, second.output[-3000:]
    assert "\x1b[" not in second.output
