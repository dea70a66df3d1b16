"""Versioning: placing events in a memory's bi-temporal chain (valid time and transaction time)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent, MemoryVersion, Op, version_id_for
from memstream.services.domain.validation import RETRACT_UNKNOWN_MEMORY
from memstream.services.domain.versioning import (
    Derived,
    Placement,
    derive_chain,
    known_at,
    neighbours,
    place_event,
    valid_at,
)

DAY = timedelta(days=1)
T0 = datetime(2025, 1, 1, tzinfo=UTC)  # valid time origin (occurred_at)
R0 = datetime(2025, 3, 1, tzinfo=UTC)  # transaction time origin (recorded_at)


def event(
    event_id: str,
    occurred_at: datetime,
    op: Op = Op.UPSERT,
    content: str | None = None,
    tenant_id: str = "acme",
    memory_key: str = "complaint-42",
) -> MemoryEvent:
    if content is None:
        content = "" if op is Op.RETRACT else f"content of {event_id}"
    return MemoryEvent(
        event_id=event_id,
        tenant_id=tenant_id,
        memory_key=memory_key,
        entity_type="customer",
        entity_id="C-17",
        fact_type="complaint",
        content=content,
        source_system="zendesk",
        status="pending",
        occurred_at=occurred_at,
        op=op,
    )


class Memory:
    """A chain kept the way the repository keeps it: insert the new version, update the changed."""

    def __init__(self) -> None:
        self.rows: dict[str, MemoryVersion] = {}
        self.placements: list[Placement] = []

    def place(self, ev: MemoryEvent, recorded_at: datetime) -> Placement:
        placement = place_event(list(self.rows.values()), ev, recorded_at)
        assert placement.version.version_id not in self.rows
        for old in placement.changed:
            assert old.version_id in self.rows
            self.rows[old.version_id] = old
        self.rows[placement.version.version_id] = placement.version
        self.placements.append(placement)
        return placement

    @property
    def chain(self) -> list[MemoryVersion]:
        return sorted(self.rows.values(), key=lambda v: v.version)

    def by_event(self, event_id: str) -> MemoryVersion:
        (found,) = (v for v in self.rows.values() if v.event_id == event_id)
        return found


def currents(chain: Sequence[MemoryVersion]) -> list[MemoryVersion]:
    return [v for v in chain if v.is_current]


# --- in order -----------------------------------------------------------------------------------


def test_in_order_events_form_a_numbered_chain_with_one_current() -> None:
    memory = Memory()
    for i in range(4):
        placement = memory.place(event(f"e{i}", T0 + i * DAY), R0 + i * DAY)
        assert placement.outcome == "current"
        assert placement.version.is_current
    chain = memory.chain
    assert [v.version for v in chain] == [1, 2, 3, 4]
    assert [v.event_id for v in chain] == ["e0", "e1", "e2", "e3"]
    assert [v.parent_id for v in chain] == [None, *(v.version_id for v in chain[:-1])]
    assert currents(chain) == [chain[-1]]
    assert [v.valid_from for v in chain] == [T0 + i * DAY for i in range(4)]
    assert [v.valid_to for v in chain] == [T0 + DAY, T0 + 2 * DAY, T0 + 3 * DAY, None]
    # Each version stopped being believed when the next one arrived.
    assert [v.superseded_at for v in chain] == [R0 + DAY, R0 + 2 * DAY, R0 + 3 * DAY, None]


def test_placing_reports_exactly_the_versions_whose_derived_columns_changed() -> None:
    memory = Memory()
    first = memory.place(event("e0", T0), R0)
    assert first.changed == ()
    assert first.version.valid_to is None
    assert first.version.superseded_at is None
    second = memory.place(event("e1", T0 + DAY), R0 + DAY)
    (old,) = second.changed
    assert old.version_id == first.version.version_id
    assert (old.valid_to, old.is_current, old.superseded_at) == (T0 + DAY, False, R0 + DAY)
    # Everything recorded about the old version other than the derived columns is unchanged.
    assert old.content == first.version.content
    assert old.recorded_at == first.version.recorded_at == R0


def test_new_version_carries_the_event_fields() -> None:
    ev = event("e0", T0 + DAY)
    version = place_event([], ev, R0).version
    assert version.version_id == ev.version_id()
    assert (version.tenant_id, version.memory_key, version.event_id) == (
        "acme",
        "complaint-42",
        "e0",
    )
    assert (version.content, version.status, version.op) == ("content of e0", "pending", Op.UPSERT)
    assert version.occurred_at == version.valid_from == T0 + DAY
    assert version.recorded_at == R0
    assert (version.version, version.parent_id) == (1, None)


# --- late events --------------------------------------------------------------------------------


def test_a_late_event_lands_in_history_and_splits_its_predecessor() -> None:
    memory = Memory()
    memory.place(event("e0", T0), R0)
    memory.place(event("e1", T0 + 10 * DAY), R0 + DAY)
    late = memory.place(event("late", T0 + 4 * DAY), R0 + 2 * DAY)

    assert late.outcome == "late"
    assert not late.version.is_current
    assert late.version.version == 3
    assert late.version.parent_id == memory.by_event("e1").version_id
    # Valid time: e0 [T0, T0+4d), late [T0+4d, T0+10d), e1 [T0+10d, ...).
    assert late.version.valid_from == T0 + 4 * DAY
    assert late.version.valid_to == T0 + 10 * DAY
    e0, e1 = memory.by_event("e0"), memory.by_event("e1")
    assert e0.valid_to == T0 + 4 * DAY
    assert currents(memory.chain) == [e1]
    assert e1.valid_to is None
    # Only the predecessor in valid time changed; the current one did not.
    assert [v.event_id for v in late.changed] == ["e0"]
    # Transaction time: never believed current, so superseded the moment it was recorded.
    assert late.version.superseded_at == late.version.recorded_at == R0 + 2 * DAY
    assert e1.superseded_at is None
    assert e0.superseded_at == R0 + DAY


def test_a_late_event_older_than_everything_becomes_the_first_in_valid_time() -> None:
    memory = Memory()
    memory.place(event("e0", T0 + 5 * DAY), R0)
    late = memory.place(event("early", T0), R0 + DAY)
    assert late.outcome == "late"
    assert late.version.valid_to == T0 + 5 * DAY
    assert late.changed == ()
    assert valid_at(memory.chain, T0 + DAY) == late.version
    assert valid_at(memory.chain, T0 - DAY) is None


# --- retraction ---------------------------------------------------------------------------------


def test_retracting_an_unknown_memory_is_invalid() -> None:
    with pytest.raises(InvalidEvent) as caught:
        place_event([], event("r0", T0, Op.RETRACT), R0)
    assert caught.value.reason == RETRACT_UNKNOWN_MEMORY
    assert "r0" in caught.value.detail
    assert "complaint-42" in caught.value.detail


def test_a_retract_closes_the_memory_and_keeps_its_history() -> None:
    memory = Memory()
    memory.place(event("e0", T0), R0)
    memory.place(event("e1", T0 + 2 * DAY), R0 + DAY)
    retract = memory.place(event("r", T0 + 4 * DAY, Op.RETRACT), R0 + 2 * DAY)

    assert retract.outcome == "retracted"
    tomb = retract.version
    assert tomb.is_tombstone
    assert tomb.status == "retracted"
    assert not tomb.is_current
    assert (tomb.version, tomb.parent_id) == (3, memory.by_event("e1").version_id)
    # A retract without content keeps the last content, for the history.
    assert tomb.content == "content of e1"
    chain = memory.chain
    assert len(chain) == 3
    assert currents(chain) == []
    e1 = memory.by_event("e1")
    assert e1.valid_to == T0 + 4 * DAY
    assert e1.superseded_at == R0 + 2 * DAY
    assert [v.event_id for v in retract.changed] == ["e1"]
    # Valid time: after the retraction nothing; before it, the version valid then.
    assert valid_at(chain, T0 + 5 * DAY) is None
    assert valid_at(chain, T0 + 4 * DAY) is None
    assert valid_at(chain, T0 + 3 * DAY) == e1
    assert valid_at(chain, T0 + DAY) == memory.by_event("e0")
    assert valid_at(chain, T0 - DAY) is None


def test_a_retract_with_content_keeps_its_own_content() -> None:
    memory = Memory()
    memory.place(event("e0", T0), R0)
    tomb = memory.place(event("r", T0 + DAY, Op.RETRACT, content="duplicate ticket"), R0 + DAY)
    assert tomb.version.content == "duplicate ticket"


# --- transaction time ---------------------------------------------------------------------------


def test_superseded_at_is_the_arrival_that_replaced_the_current_version() -> None:
    memory = Memory()
    memory.place(event("e0", T0), R0)
    memory.place(event("late", T0 - DAY), R0 + DAY)  # late: e0 stays current
    memory.place(event("e1", T0 + DAY), R0 + 2 * DAY)  # replaces e0
    assert memory.by_event("e0").superseded_at == R0 + 2 * DAY
    assert memory.by_event("late").superseded_at == R0 + DAY
    assert memory.by_event("e1").superseded_at is None


def test_known_at_reproduces_what_was_believed_then() -> None:
    memory = Memory()
    memory.place(event("e0", T0), R0)
    memory.place(event("e1", T0 + 3 * DAY), R0 + DAY)
    memory.place(event("late", T0 + DAY), R0 + 2 * DAY)
    chain = memory.chain

    assert known_at(chain, R0 - timedelta(seconds=1)) == []

    (first,) = known_at(chain, R0 + DAY / 2)
    assert first.event_id == "e0"
    assert first.is_current
    assert first.valid_to is None
    assert first.superseded_at is None

    second = known_at(chain, R0 + DAY)
    assert [(v.event_id, v.is_current) for v in second] == [("e0", False), ("e1", True)]
    assert second[0].valid_to == T0 + 3 * DAY
    assert second[0].superseded_at == R0 + DAY

    # Now, everything is known: the same as the stored chain.
    assert known_at(chain, R0 + 10 * DAY) == chain
    assert memory.by_event("e0").valid_to == T0 + DAY


def test_version_id_is_deterministic_per_tenant_and_event() -> None:
    ev = event("e0", T0)
    first = place_event([], ev, R0).version
    again = place_event([], event("e0", T0 + DAY), R0 + DAY).version
    assert first.version_id == again.version_id == version_id_for("acme", "e0")
    other_tenant = place_event([], event("e0", T0, tenant_id="globex"), R0).version
    other_event = place_event([], event("e1", T0), R0).version
    assert len({first.version_id, other_tenant.version_id, other_event.version_id}) == 3


def test_derive_chain_of_nothing_is_empty() -> None:
    assert derive_chain([]) == {}
    assert valid_at([], T0) is None


# --- properties ---------------------------------------------------------------------------------


@st.composite
def arrivals(draw: st.DrawFn) -> list[tuple[MemoryEvent, datetime]]:
    """Events of one memory in arrival order: random valid times (ties likely), the first an
    UPSERT, the rest a mix, recorded at strictly increasing transaction times."""
    count = draw(st.integers(min_value=1, max_value=12))
    offsets = draw(st.lists(st.integers(0, 20), min_size=count, max_size=count))
    later_ops = st.sampled_from([Op.UPSERT, Op.UPSERT, Op.RETRACT])
    ops = [Op.UPSERT, *draw(st.lists(later_ops, min_size=count - 1, max_size=count - 1))]
    gaps = draw(st.lists(st.integers(1, 3600), min_size=count, max_size=count))
    recorded, result = R0, []
    for i, (offset, op, gap) in enumerate(zip(offsets, ops, gaps, strict=True)):
        recorded += timedelta(seconds=gap)
        result.append((event(f"e{i}", T0 + offset * DAY, op), recorded))
    return result


def play(events: list[tuple[MemoryEvent, datetime]]) -> Memory:
    memory = Memory()
    for ev, recorded_at in events:
        memory.place(ev, recorded_at)
    return memory


def valid_order(chain: Sequence[MemoryVersion]) -> list[MemoryVersion]:
    return sorted(chain, key=lambda v: (v.valid_from, v.version))


@given(events=arrivals())
def test_at_most_one_current_and_it_is_the_latest_in_valid_time(
    events: list[tuple[MemoryEvent, datetime]],
) -> None:
    chain = play(events).chain
    assert len(currents(chain)) <= 1
    latest = valid_order(chain)[-1]
    if latest.is_tombstone:
        assert currents(chain) == []
    else:
        assert currents(chain) == [latest]
    assert all(not v.is_current for v in chain if v.is_tombstone)


@given(events=arrivals())
def test_valid_intervals_tile_the_timeline(events: list[tuple[MemoryEvent, datetime]]) -> None:
    ordered = valid_order(play(events).chain)
    for here, after in itertools.pairwise(ordered):
        assert here.valid_to == after.valid_from
        assert here.valid_from <= here.valid_to
    assert ordered[-1].valid_to is None
    assert all(v.valid_from == v.occurred_at for v in ordered)


@given(events=arrivals())
def test_versions_are_numbered_in_arrival_order_with_parent_links(
    events: list[tuple[MemoryEvent, datetime]],
) -> None:
    chain = play(events).chain
    assert [v.event_id for v in chain] == [ev.event_id for ev, _ in events]
    assert [v.version for v in chain] == list(range(1, len(events) + 1))
    assert chain[0].parent_id is None
    for parent, child in itertools.pairwise(chain):
        assert child.parent_id == parent.version_id


@given(events=arrivals(), data=st.data())
def test_derive_chain_does_not_depend_on_input_order(
    events: list[tuple[MemoryEvent, datetime]], data: st.DataObject
) -> None:
    chain = play(events).chain
    shuffled = data.draw(st.permutations(chain))
    assert derive_chain(shuffled) == derive_chain(chain)


@given(events=arrivals())
def test_incremental_placement_matches_deriving_the_whole_chain(
    events: list[tuple[MemoryEvent, datetime]],
) -> None:
    chain = play(events).chain
    derived = derive_chain(chain)
    assert {v.version_id: Derived(v.valid_to, v.is_current, v.superseded_at) for v in chain} == (
        derived
    )


@given(events=arrivals(), extra=st.lists(st.integers(-2 * 24, 24 * 24), max_size=10))
def test_valid_at_returns_the_version_whose_interval_contains_the_moment(
    events: list[tuple[MemoryEvent, datetime]], extra: list[int]
) -> None:
    chain = play(events).chain
    moments = {v.valid_from for v in chain} | {T0 + hours * timedelta(hours=1) for hours in extra}
    moments |= {T0 - DAY, T0 + 30 * DAY}
    first_start = min(v.valid_from for v in chain)
    for moment in moments:
        holding = [
            v
            for v in chain
            if v.valid_from <= moment and (v.valid_to is None or moment < v.valid_to)
        ]
        found = valid_at(chain, moment)
        if moment < first_start:
            assert holding == []
            assert found is None
            continue
        assert len(holding) == 1, "intervals must not overlap or leave gaps"
        (expected,) = holding
        assert found == (None if expected.is_tombstone else expected)


@given(events=arrivals())
def test_known_at_each_arrival_matches_the_chain_as_it_was_then(
    events: list[tuple[MemoryEvent, datetime]],
) -> None:
    memory = Memory()
    snapshots = []
    for ev, recorded_at in events:
        placement = memory.place(ev, recorded_at)
        snapshots.append((recorded_at, memory.chain))
        expected = "retracted" if ev.op is Op.RETRACT else "current"
        if ev.op is Op.UPSERT and not placement.version.is_current:
            expected = "late"
        assert placement.outcome == expected
    final = memory.chain
    for recorded_at, then in snapshots:
        # Every column then, derived ones included, is what known_at re-derives afterwards.
        assert known_at(final, recorded_at) == then


@given(events=arrivals())
def test_superseded_at_bounds_the_transaction_time_a_version_was_current(
    events: list[tuple[MemoryEvent, datetime]],
) -> None:
    chain = play(events).chain
    for version in chain:
        if version.is_current:
            assert version.superseded_at is None
        else:
            assert version.superseded_at is not None
            assert version.superseded_at >= version.recorded_at
        for _, moment in events:
            believed = {v.version_id for v in known_at(chain, moment) if v.is_current}
            was_current = version.recorded_at <= moment and (
                version.superseded_at is None or moment < version.superseded_at
            )
            assert (version.version_id in believed) == was_current


def derived_by_definition(chain: Sequence[MemoryVersion]) -> dict[str, Derived]:
    """The derived columns as their definitions state them, arrival by arrival (quadratic):
    valid_to is the next start in valid time; the current version is the latest in valid time
    unless a tombstone; a version is superseded by the first arrival after which it was not,
    or no longer, the current one of the arrivals so far."""

    def current(known: Sequence[MemoryVersion]) -> MemoryVersion | None:
        last = valid_order(known)[-1]
        return None if last.is_tombstone else last

    ordered = valid_order(chain)
    starts = {here.version_id: after.valid_from for here, after in itertools.pairwise(ordered)}
    superseded: dict[str, datetime] = {}
    by_number = sorted(chain, key=lambda v: v.version)
    for n, version in enumerate(by_number):
        for later in by_number[n:]:
            if current(by_number[: later.version]) != version:
                superseded[version.version_id] = later.recorded_at
                break
    now = current(chain)
    return {
        v.version_id: Derived(starts.get(v.version_id), v == now, superseded.get(v.version_id))
        for v in chain
    }


@given(events=arrivals())
def test_derive_chain_is_its_definition(events: list[tuple[MemoryEvent, datetime]]) -> None:
    chain = play(events).chain
    assert derive_chain(chain) == derived_by_definition(chain)


def test_a_long_chain_keeps_one_current_and_tiles_valid_time() -> None:
    """A memory updated every minute for two days: 3,000 versions, every tenth late. (Each
    placement re-derives the whole chain; it used to re-sort the arrivals so far for every
    arrival, quadratic in the chain: placing these took minutes, now about a second.)"""
    memory = Memory()
    for i in range(3_000):
        late = i % 10 == 9
        at = T0 + timedelta(minutes=i - 5 if late else i)
        placement = memory.place(event(f"e{i}", at), R0 + timedelta(seconds=i))
        assert placement.outcome == ("late" if late else "current")
    chain = memory.chain
    assert [v.event_id for v in currents(chain)] == ["e2998"]
    ordered = valid_order(chain)
    assert all(a.valid_to == b.valid_from for a, b in itertools.pairwise(ordered))
    late = [v for v in chain if int(v.event_id[1:]) % 10 == 9]
    assert all(v.superseded_at == v.recorded_at for v in late)


@given(events=arrivals())
def test_placing_against_the_neighbours_alone_is_placing_against_the_whole_chain(
    events: list[tuple[MemoryEvent, datetime]],
) -> None:
    """What a repository reads instead of a long chain (``neighbours``) places every event
    exactly as the whole chain does."""
    memory = Memory()
    for ev, recorded_at in events:
        whole = list(memory.rows.values())
        wanted = neighbours(whole, [ev.occurred_at])
        assert len(wanted) <= 4
        partial = [v for v in whole if v.version_id in wanted]
        if ev.op is Op.RETRACT and not whole:
            continue
        assert place_event(partial, ev, recorded_at) == memory.place(ev, recorded_at)
