"""The timeline chart: late events found, every version drawn, retractions as crosses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memstream.gateway.chart import late_versions, timeline_svg
from memstream.services.domain.model import MemoryVersion, Op

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def version(n: int, valid_day: int, known_day: int, op: Op = Op.UPSERT) -> MemoryVersion:
    return MemoryVersion(
        version_id=f"v{n}", tenant_id="t", memory_key="k", version=n, parent_id=None,
        event_id=f"e{n}", entity_type="product", entity_id="X1", fact_type="spec",
        content=f"<content {n}>", source_system="catalog", status="active", op=op,
        occurred_at=T0 + timedelta(days=valid_day), valid_from=T0 + timedelta(days=valid_day),
        valid_to=None, recorded_at=T0 + timedelta(days=known_day), superseded_at=None,
        is_current=False,
    )  # fmt: skip


def test_a_version_recorded_after_a_later_valid_one_is_late() -> None:
    chain = [
        version(1, 0, 1),
        version(2, 10, 11),
        version(3, 5, 12),
        version(4, 20, 21, Op.RETRACT),
    ]
    assert late_versions(chain) == {"v3"}
    svg = timeline_svg(chain, T0 + timedelta(days=30))
    assert svg.count("class='version'") == 3 and svg.count("class='version retract'") == 1
    assert "v3 (late)" in svg and "&lt;content" not in svg  # content is not in the chart


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=8))
def test_in_order_chains_have_no_late_versions_and_every_version_is_drawn(
    days: list[tuple[int, int]],
) -> None:
    ordered = sorted(days)
    chain = [version(i + 1, valid, i) for i, (valid, _) in enumerate(ordered)]
    assert late_versions(chain) == set()
    svg = timeline_svg(chain, T0 + timedelta(days=200))
    assert svg.count("data-version=") == len(chain)


@given(st.sets(st.integers(1, 6)), st.booleans())
def test_erased_versions_are_tombstones_that_say_when_and_by_which_erasure(
    erased: set[int], retracted_last: bool
) -> None:
    chain = [version(n, n * 3, n * 3 + 1) for n in range(1, 6)]
    if retracted_last:
        chain.append(version(6, 20, 21, Op.RETRACT))
    marks = {f"v{n}": f"erased 2026-02-01 · erasure E{n}" for n in erased if n <= len(chain)}
    svg = timeline_svg(chain, T0 + timedelta(days=40), marks)
    tombstones = {n for n in erased if n <= 5}
    assert svg.count("class='version erased'") == len(tombstones)
    assert svg.count("data-version=") == len(chain)  # every version still drawn
    for n in range(1, len(chain) + 1):
        assert (f"erasure E{n}" in svg) is (f"v{n}" in marks)
    assert "&lt;content" not in svg
