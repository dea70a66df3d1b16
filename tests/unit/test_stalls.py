"""The fetch-wait rule of memstream.streams.stalls: raised after a run of stalled fetches,
lowered again after a run of calm ones."""

from __future__ import annotations

from memstream.streams.stalls import (
    CALM_STREAK,
    KEEP,
    LOWER,
    RAISE,
    STALL_CAP_MS,
    STALL_STREAK,
    StallWatch,
    lowered,
    raised,
)


def test_a_run_of_empty_fetches_while_behind_raises_the_wait() -> None:
    watch = StallWatch()
    verdicts = [watch.observe(delivered=False, behind=True) for _ in range(STALL_STREAK)]
    assert verdicts == [KEEP] * (STALL_STREAK - 1) + [RAISE]


def test_an_empty_fetch_with_nothing_to_read_is_no_stall() -> None:
    watch = StallWatch()
    for _ in range(STALL_STREAK - 1):
        assert watch.observe(delivered=False, behind=True) == KEEP
    assert watch.observe(delivered=False, behind=False) == KEEP  # the streak is broken
    assert watch.observe(delivered=False, behind=True) == KEEP


def test_a_run_of_calm_fetches_lowers_the_wait_and_a_stall_restarts_the_count() -> None:
    watch = StallWatch()
    for _ in range(CALM_STREAK - 1):
        assert watch.observe(delivered=True, behind=False) == KEEP
    assert watch.observe(delivered=False, behind=True) == KEEP  # one stalled fetch
    # the calm run starts again from zero
    verdicts = [watch.observe(delivered=True, behind=True) for _ in range(CALM_STREAK)]
    assert verdicts == [KEEP] * (CALM_STREAK - 1) + [LOWER]
    # and keeps lowering, one verdict per calm run
    verdicts = [watch.observe(delivered=False, behind=False) for _ in range(CALM_STREAK)]
    assert verdicts[-1] == LOWER and verdicts.count(LOWER) == 1


def test_the_wait_climbs_to_the_cap_and_comes_back_down_to_none() -> None:
    wait = 2
    climbed = [wait]
    while wait < STALL_CAP_MS:
        wait = raised(wait)
        climbed.append(wait)
    assert climbed[-1] == STALL_CAP_MS and len(climbed) == 10  # 2 → 1,000 ms
    floor = STALL_CAP_MS
    runs = 0
    while floor:
        floor = lowered(floor, base_ms=2)
        runs += 1
    assert runs == 9  # 1,000 → 500 → … → 3 → none: nine calm runs
    assert lowered(4, base_ms=2) == 0  # half of 4 is the base wait itself: no floor
    assert lowered(10, base_ms=2) == 5
