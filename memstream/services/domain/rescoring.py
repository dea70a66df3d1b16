"""Rescoring: the parts of trust that change with time, for one version.

Recency is a function of time that every query computes (``ranking.matter_recency``: the
version's ``occurred_at``, its fact type's half-life, the tenant's overrides), so it is never
stored to be read back. What must be materialised is what changes state: an open matter that
becomes ``escalated`` (``escalate_after``) and a version whose ``valid_to`` passes
(``superseded``). ``transitions`` says when those happen; the rescorer visits a version only
once one of them has passed since it was last scored, and a change is worth publishing only
when the state moved. Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.decay import DecayRules, recency
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.query import Candidate
from memstream.services.domain.trust import (
    StateRules,
    is_open_matter,
    kind_in,
    state_consistency,
    status_of,
)

# Below this change in recency a rescore is not worth a write (and the status did not change).
MATERIAL_RECENCY_CHANGE = 0.01


@dataclass(frozen=True, slots=True)
class TimeScores:
    recency: float
    state: float
    effective_status: str

    def differs(self, other: TimeScores | None) -> bool:
        """Whether these scores are a material change from ``other`` (None: never scored)."""
        return (
            other is None
            or other.effective_status != self.effective_status
            or abs(other.recency - self.recency) >= MATERIAL_RECENCY_CHANGE
            or abs(other.state - self.state) >= MATERIAL_RECENCY_CHANGE
        )


def as_ingested(version: MemoryVersion) -> TimeScores:
    """What a version implicitly carries when it is recorded: fresh, in its published status
    (the state score is unknown until first scored, so it never makes a change material)."""
    return TimeScores(recency=1.0, state=-1.0, effective_status=version.status)


def is_material(scores: TimeScores, previous: TimeScores | None, version: MemoryVersion) -> bool:
    """Whether ``scores`` must be propagated: the state moved since the last stored scores, or
    — for a version never scored — from the status it was recorded with. Recency alone never
    is: any reader computes it from the version's time (see the module docstring)."""
    baseline = previous if previous is not None else as_ingested(version)
    return scores.effective_status != baseline.effective_status or (
        previous is not None and abs(scores.state - previous.state) >= MATERIAL_RECENCY_CHANGE
    )


def transitions(version: MemoryVersion, state: StateRules) -> tuple[datetime, ...]:
    """The moments at which ``version``'s effective state changes by the clock alone: its
    escalation (an open matter ``escalate_after`` its ``occurred_at``) and its expiry
    (``valid_to``). Empty for most versions: nothing about them changes until a new event."""
    moments = []
    candidate = Candidate.from_version(version)
    status = status_of(candidate.status)
    if status in state.open_statuses and kind_in(version.fact_type, state.escalating_fact_types):
        moments.append(version.occurred_at + state.escalate_after)
    if version.valid_to is not None:
        moments.append(version.valid_to)
    return tuple(sorted(moments))


def is_due(
    version: MemoryVersion, scored_at: datetime | None, now: datetime, state: StateRules
) -> bool:
    """Whether a transition of ``version`` has passed since it was last scored (never: since
    it was recorded, with its published status)."""
    return any(
        moment <= now and (scored_at is None or scored_at <= moment)
        for moment in transitions(version, state)
    )


def time_scores(
    version: MemoryVersion, now: datetime, decay: DecayRules, state: StateRules
) -> TimeScores:
    candidate = Candidate.from_version(version)
    verdict = state_consistency(candidate, now, state)
    live = is_open_matter(candidate, state)  # an unresolved matter does not go stale
    return TimeScores(
        recency=1.0
        if live
        else recency(version.occurred_at, now, decay.half_life(version.fact_type)),
        state=verdict.score,
        effective_status=verdict.effective_status,
    )
