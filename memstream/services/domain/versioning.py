"""Versioning: where a new event goes in a memory's bi-temporal chain.

Versions are numbered in arrival order (``version`` n, ``parent_id`` = version n-1); valid time
comes from ``occurred_at``. ``valid_to``, ``is_current`` and ``superseded_at`` are derived from
the whole chain, so a late event lands in its place in history without becoming current, and a
RETRACT (a tombstone version) closes the memory while keeping its history.

Pure; must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent, MemoryVersion, Op
from memstream.services.domain.validation import RETRACT_UNKNOWN_MEMORY


@dataclass(frozen=True, slots=True)
class Derived:
    """The derived columns of one version."""

    valid_to: datetime | None
    is_current: bool
    superseded_at: datetime | None


@dataclass(frozen=True, slots=True)
class Placement:
    """Placing an event: the new version and the versions whose derived state changed."""

    version: MemoryVersion
    changed: tuple[MemoryVersion, ...]

    @property
    def outcome(self) -> str:
        if self.version.op is Op.RETRACT:
            return "retracted"
        return "current" if self.version.is_current else "late"


def _valid_key(version: MemoryVersion) -> tuple[datetime, int]:
    return (version.valid_from, version.version)


def _valid_order(versions: Sequence[MemoryVersion]) -> list[MemoryVersion]:
    return sorted(versions, key=_valid_key)


def current_of(versions: Sequence[MemoryVersion]) -> MemoryVersion | None:
    """The version valid now: the latest in valid time, unless it is a tombstone."""
    if not versions:
        return None
    last = max(versions, key=_valid_key)
    return None if last.is_tombstone else last


def derive_chain(versions: Sequence[MemoryVersion]) -> dict[str, Derived]:
    """valid_to / is_current / superseded_at for every version of one memory.

    O(n log n) in the chain's length: two sorts and one pass each (a memory updated every
    minute holds thousands of versions, and every event placed re-derives its chain).
    """
    if not versions:
        return {}  # e.g. known_at before the first arrival
    ordered = _valid_order(versions)
    valid_to: dict[str, datetime | None] = {}
    for here, after in zip(ordered, [*ordered[1:], None], strict=True):
        valid_to[here.version_id] = after.valid_from if after is not None else None
    current = None if ordered[-1].is_tombstone else ordered[-1]
    # Transaction time: replay arrivals; a version stops being believed current when a later
    # arrival takes its place (a late arrival is never current: superseded when recorded).
    # What was believed current after each arrival is the latest in valid time of the
    # arrivals so far (unless a tombstone): a running maximum.
    superseded: dict[str, datetime | None] = {}
    latest: MemoryVersion | None = None
    believed: MemoryVersion | None = None
    for arrival in sorted(versions, key=lambda v: v.version):
        if latest is None or _valid_key(arrival) > _valid_key(latest):
            latest = arrival
        now_current = None if latest.is_tombstone else latest
        if believed is not None and now_current is not believed:
            superseded[believed.version_id] = arrival.recorded_at
        if now_current is not arrival and arrival.version_id not in superseded:
            superseded[arrival.version_id] = arrival.recorded_at
        believed = now_current
    return {
        v.version_id: Derived(
            valid_to=valid_to[v.version_id],
            is_current=current is not None and v.version_id == current.version_id,
            superseded_at=superseded.get(v.version_id),
        )
        for v in versions
    }


def _apply(version: MemoryVersion, derived: Derived) -> MemoryVersion:
    return dataclasses.replace(
        version,
        valid_to=derived.valid_to,
        is_current=derived.is_current,
        superseded_at=derived.superseded_at,
    )


def place_event(
    chain: Sequence[MemoryVersion], event: MemoryEvent, recorded_at: datetime
) -> Placement:
    """The new immutable version for ``event`` and the changes it makes to ``chain``.

    ``chain`` holds the existing versions of ``event.memory_key`` (any order), or at least
    those placing the event reads (``neighbours``): the one with the highest number (its
    parent), the latest in valid time, and the two between which the event falls in valid
    time. A placement changes at most one stored version, so it never re-derives the chain:
    the event is either the latest in valid time (the version it follows ends where it starts
    and is no longer current) or late (it ends where its successor starts, is never current,
    and its predecessor now ends where it starts). ``derive_chain`` of the whole chain gives
    the same columns (property tests).
    """
    if event.op is Op.RETRACT and not chain:
        raise InvalidEvent(
            RETRACT_UNKNOWN_MEMORY,
            f"RETRACT {event.event_id!r} names memory {event.memory_key!r} of tenant "
            f"{event.tenant_id!r}, which does not exist",
        )
    parent = max(chain, key=lambda v: v.version) if chain else None
    content = event.content
    if event.op is Op.RETRACT and not content and parent is not None:
        content = parent.content
    new = MemoryVersion(
        version_id=event.version_id(),
        tenant_id=event.tenant_id,
        memory_key=event.memory_key,
        version=(parent.version + 1) if parent else 1,
        parent_id=parent.version_id if parent else None,
        event_id=event.event_id,
        entity_type=event.entity_type,
        entity_id=event.entity_id,
        fact_type=event.fact_type,
        content=content,
        source_system=event.source_system,
        status="retracted" if event.op is Op.RETRACT else event.status,
        op=event.op,
        occurred_at=event.occurred_at,
        valid_from=event.occurred_at,
        valid_to=None,
        recorded_at=recorded_at,
        superseded_at=None,
        is_current=False,
        entities=event.entities,
        attributes=dict(event.attributes),
    )
    if not chain:
        return Placement(version=_apply(new, Derived(None, True, None)), changed=())
    latest = max(chain, key=_valid_key)
    if _valid_key(new) > _valid_key(latest):
        return _appended(latest, new)
    return _inserted(chain, new)


def neighbours(chain: Sequence[MemoryVersion], moments: Sequence[datetime]) -> set[str]:
    """The version ids of ``chain`` that placing events occurred at ``moments`` reads: the
    highest number, the latest in valid time, and for each moment the last version starting
    at or before it and the first starting after it (what a repository may read instead of
    the whole chain)."""
    if not chain:
        return set()
    wanted = {max(chain, key=lambda v: v.version).version_id}
    wanted.add(max(chain, key=_valid_key).version_id)
    for moment in moments:
        before = [v for v in chain if v.valid_from <= moment]
        after = [v for v in chain if v.valid_from > moment]
        if before:
            wanted.add(max(before, key=_valid_key).version_id)
        if after:
            wanted.add(min(after, key=_valid_key).version_id)
    return wanted


def _appended(latest: MemoryVersion, new: MemoryVersion) -> Placement:
    """``new`` is the latest in valid time: ``latest`` ends where it starts and, if it was
    current, is superseded now; ``new`` is current unless it is a tombstone (which is
    superseded when recorded: nothing is current after it)."""
    superseded = latest.superseded_at if latest.is_tombstone else new.recorded_at
    follows = _apply(latest, Derived(new.valid_from, False, superseded))
    placed = Derived(None, not new.is_tombstone, new.recorded_at if new.is_tombstone else None)
    return Placement(version=_apply(new, placed), changed=(follows,))


def _inserted(chain: Sequence[MemoryVersion], new: MemoryVersion) -> Placement:
    """``new`` is late: it holds from its start to its successor's, is never current
    (superseded when recorded), and its predecessor, if any, now ends where it starts."""
    key = _valid_key(new)
    successor = min((v for v in chain if _valid_key(v) > key), key=_valid_key)
    earlier = [v for v in chain if _valid_key(v) < key]
    placed = _apply(new, Derived(successor.valid_from, False, new.recorded_at))
    if not earlier:
        return Placement(version=placed, changed=())
    predecessor = max(earlier, key=_valid_key)
    ends = Derived(new.valid_from, predecessor.is_current, predecessor.superseded_at)
    return Placement(version=placed, changed=(_apply(predecessor, ends),))


def advance(chain: Sequence[MemoryVersion], placement: Placement) -> list[MemoryVersion]:
    """``chain`` after ``placement``: its changed versions replaced, the new one appended.

    Recording a batch places each event against the chain as the earlier events of the batch
    left it, exactly as recording them one at a time would.
    """
    changed = {v.version_id: v for v in placement.changed}
    return [*(changed.get(v.version_id, v) for v in chain), placement.version]


def known_at(versions: Sequence[MemoryVersion], moment: datetime) -> list[MemoryVersion]:
    """The chain as memstream knew it at ``moment`` (transaction time), re-derived."""
    known = [v for v in versions if v.recorded_at <= moment]
    derived = derive_chain(known)
    return [_apply(v, derived[v.version_id]) for v in sorted(known, key=lambda v: v.version)]


def valid_at(versions: Sequence[MemoryVersion], moment: datetime) -> MemoryVersion | None:
    """The version that was true at ``moment`` (valid time), or None (none yet, or retracted)."""
    candidates = [v for v in _valid_order(versions) if v.valid_from <= moment]
    if not candidates or candidates[-1].is_tombstone:
        return None
    return candidates[-1]
