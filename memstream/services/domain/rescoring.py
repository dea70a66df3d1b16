"""Rescoring: the parts of trust that change with time or rules, for one version.

Recency (half-life per fact type) and state consistency (e.g. a complaint pending over 48 h is
escalated) are recomputed as the clock moves; a change is worth publishing only when it is
material. Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.decay import DecayRules, recency
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.query import Candidate
from memstream.services.domain.trust import StateRules, is_open_matter, state_consistency

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
    """Whether ``scores`` must be propagated: against the last stored scores, or — for a version
    never scored — against what it carried when recorded (most fresh versions: nothing to do)."""
    if previous is not None:
        return scores.differs(previous)
    baseline = as_ingested(version)
    return (
        scores.effective_status != baseline.effective_status
        or abs(scores.recency - baseline.recency) >= MATERIAL_RECENCY_CHANGE
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
