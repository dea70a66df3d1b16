"""The soak's answers per minute: whole minutes from the first answer's clock, the last
(partial) minute left out unless it is the only one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memstream.bench.soak import per_minute


def test_whole_minutes_and_the_partial_last_left_out() -> None:
    assert per_minute([]) == []
    assert per_minute([1.0, 59.9, 60.0, 61.0, 130.0]) == [2, 2]
    assert per_minute([5.0, 6.0]) == [2]  # a run shorter than a minute: its one minute


@given(st.lists(st.floats(min_value=0, max_value=3_600), min_size=1))
def test_every_answer_of_a_whole_minute_is_counted_once(done_at: list[float]) -> None:
    minutes = per_minute(done_at)
    last = int(max(done_at) // 60)
    whole = sum(1 for moment in done_at if int(moment // 60) < last)
    assert sum(minutes) == (whole if last else len(done_at))


def test_slow_requests_are_counted_against_the_generation_turns() -> None:
    from memstream.bench.soak import near_turns

    spans = [
        (100.0, 100.1),  # fast
        (118.5, 120.5),  # slow, in flight at the turn at 120
        (121.0, 122.5),  # slow, started 1 s after it
        (150.0, 151.5),  # slow, far from any turn
    ]
    assert near_turns(spans, 60.0) == (1, 2, 3)
    assert near_turns(spans, 0) == (0, 0, 3)  # rotation off
    assert near_turns([], 60.0) == (0, 0, 0)


def test_a_window_row_is_the_tail_of_its_own_requests() -> None:
    from memstream.bench.soak import window

    ends = [float(n) for n in range(1, 101)]  # 1 … 100 ms
    row = window(20_000, ends, [5.0] * 99 + [900.0])
    assert row["requests"] == 20_000
    assert row["p50_ms"] == 51.0 and row["p99_ms"] == 100.0
    assert row["queue_p50_ms"] == 5.0 and row["queue_p99_ms"] == 900.0
    timed = window(2, [1.0, 2.0], [0.0, 0.0], [{"queue": 3.0, "embed": 4.0}, {"embed": 6.0}])
    assert timed["stage_embed_ms"] == 5.0 and "stage_queue_ms" not in timed
