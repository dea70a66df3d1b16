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


def _valid_order(versions: Sequence[MemoryVersion]) -> list[MemoryVersion]:
    return sorted(versions, key=lambda v: (v.valid_from, v.version))


def current_of(versions: Sequence[MemoryVersion]) -> MemoryVersion | None:
    """The version valid now: the latest in valid time, unless it is a tombstone."""
    if not versions:
        return None
    last = _valid_order(versions)[-1]
    return None if last.is_tombstone else last


def derive_chain(versions: Sequence[MemoryVersion]) -> dict[str, Derived]:
    """valid_to / is_current / superseded_at for every version of one memory."""
    if not versions:
        return {}  # e.g. known_at before the first arrival
    ordered = _valid_order(versions)
    valid_to: dict[str, datetime | None] = {}
    for here, after in zip(ordered, [*ordered[1:], None], strict=True):
        valid_to[here.version_id] = after.valid_from if after is not None else None
    current = current_of(versions)
    # Transaction time: replay arrivals; a version stops being believed current when a later
    # arrival takes its place (a late arrival is never current: superseded when recorded).
    superseded: dict[str, datetime | None] = {}
    seen: list[MemoryVersion] = []
    believed: MemoryVersion | None = None
    for arrival in sorted(versions, key=lambda v: v.version):
        seen.append(arrival)
        now_current = current_of(seen)
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

    ``chain`` holds every existing version of ``event.memory_key`` (any order).
    """
    if event.op is Op.RETRACT and not chain:
        raise InvalidEvent(
            RETRACT_UNKNOWN_MEMORY,
            f"RETRACT {event.event_id!r} names memory {event.memory_key!r} of tenant "
            f"{event.tenant_id!r}, which does not exist",
        )
    by_number = sorted(chain, key=lambda v: v.version)
    parent = by_number[-1] if by_number else None
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
    derived = derive_chain([*chain, new])
    changed = tuple(
        _apply(old, derived[old.version_id])
        for old in chain
        if (old.valid_to, old.is_current, old.superseded_at)
        != dataclasses.astuple(derived[old.version_id])
    )
    return Placement(version=_apply(new, derived[new.version_id]), changed=changed)


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
