"""Trust: how much a memory deserves to be believed, computed here and never left to the LLM.

Five components, each in [0, 1]:

- ``authority``: the source system's standing (``authority.AuthorityTable``, per tenant);
- ``recency``: from ``decay`` (half-life per fact type);
- ``binding``: whether the memory is about the entities the request names (``entity_binding``);
- ``state``: whether the memory's status makes it usable for the current state of affairs
  (``state_consistency``, e.g. a complaint pending over 48 h is reported as escalated);
- ``cross_validation``: whether independent sources agree (``cross_validation``).

``trust_score`` is their weighted mean under a per-tenant ``TrustProfile``.
Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import NamedTuple

from memstream.services.domain.authority import unit_value
from memstream.services.domain.errors import DomainError
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate
from memstream.services.domain.text import agreement, attribute_clash

# --- entity binding --------------------------------------------------------------------------


class Binding(NamedTuple):
    kind: str  # "exact" | "fuzzy" | "neutral" | "none"
    score: float


EXACT = Binding("exact", 1.0)
FUZZY = Binding("fuzzy", 0.5)
NEUTRAL = Binding("neutral", 0.5)
NONE = Binding("none", 0.0)

# Anchor types that name the same kind of entity ("user" is how agents say "customer").
_TYPE_ALIASES = {"user": "customer"}


def _type(anchor: Anchor) -> str:
    kind = anchor.type.strip().casefold()
    return _TYPE_ALIASES.get(kind, kind)


def _squash(identifier: str) -> str:
    return re.sub(r"[\W_]+", "", identifier.casefold())


def _within_one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = j = edits = 0
    while i < len(a) and j < len(b):
        if a[i] != b[j]:
            edits += 1
            if edits > 1:
                return False
            if len(a) == len(b):
                i += 1
            j += 1
        else:
            i += 1
            j += 1
    return edits + (len(b) - j) <= 1


def _fuzzy(a: Anchor, b: Anchor) -> bool:
    left, right = _squash(a.id), _squash(b.id)
    if left and left == right:
        return True
    # A one-character typo ("alice.smyth") is the same entity; a different digit ("C-17" vs
    # "C-18", order numbers) is a different one, and short ids are too close to tell apart.
    return (
        _type(a) == _type(b)
        and min(len(left), len(right)) >= 4
        and re.findall(r"\d", left) == re.findall(r"\d", right)
        and _within_one_edit(left, right)
    )


def entity_binding(candidate: Sequence[Anchor], requested: Sequence[Anchor]) -> Binding:
    """How well a memory's anchors bind to the request's anchors (user anchor included).

    - ``exact`` (1.0): a shared (type, id); types compare case-insensitively, "user" = "customer".
    - ``fuzzy`` (0.5): the same id ignoring case and punctuation ("ORD-17" ~ "ord17"), or, within
      one type, ids one edit apart that share their digits.
    - ``neutral`` (0.5): nothing to bind to: the request names no anchors, or the memory is
      anchored to no entity of a type the request names (a product manual, for a customer's
      question) — it is about something else, not about someone else.
    - ``none`` (0.0): the memory is about another entity of a type the request names (another
      customer's order): the answer must not use it.
    """
    if not requested or not candidate:
        return NEUTRAL
    wanted = {(_type(a), a.id) for a in requested}
    if any((_type(c), c.id) in wanted for c in candidate):
        return EXACT
    if any(_fuzzy(c, r) for c in candidate for r in requested):
        return FUZZY
    wanted_types = {kind for kind, _ in wanted}
    if any(_type(c) in wanted_types for c in candidate):
        return NONE
    return NEUTRAL


# --- state consistency -----------------------------------------------------------------------


class StateVerdict(NamedTuple):
    effective_status: str
    score: float


# status → score: how usable a memory in that state is for answering about the current state.
#   open matter (pending/open/new/in_progress, within the escalation delay)  1.0  live, current
#   active (and any status of a fact type that does not escalate)            1.0
#   escalated (open matter older than escalate_after)                        0.9  current, overdue
#   high_risk                                                                0.9  current, flagged
#   resolved / closed / done / completed / refunded: the matter is settled   0.8  true, but over
#   unknown statuses                                                         0.6
#   archived                                                                 0.4
#   superseded (valid_to ≤ now: a later version replaced it)                 0.2
#   retracted                                                                0.0  never returned
DEFAULT_STATUS_SCORES: Mapping[str, float] = MappingProxyType(
    {
        "active": 1.0,
        "current": 1.0,
        "pending": 1.0,
        "open": 1.0,
        "new": 1.0,
        "in_progress": 1.0,
        "escalated": 0.9,
        "high_risk": 0.9,
        "resolved": 0.8,
        "closed": 0.8,
        "done": 0.8,
        "completed": 0.8,
        "refunded": 0.8,
        "archived": 0.4,
        "superseded": 0.2,
        "retracted": 0.0,
    }
)


# Other spellings of the statuses above, as source systems write them (English and Chinese).
STATUS_SPELLINGS: Mapping[str, str] = MappingProxyType(
    {
        "in progress": "in_progress", "in-progress": "in_progress", "inprogress": "in_progress",
        "processing": "in_progress", "working": "in_progress", "处理中": "in_progress",
        "进行中": "in_progress", "跟进中": "in_progress",
        "opened": "open", "reopened": "open", "未解决": "open", "待处理": "pending",
        "未处理": "pending", "等待中": "pending", "待回复": "pending",
        "solved": "resolved", "fixed": "resolved", "已解决": "resolved", "已处理": "resolved",
        "closed out": "closed", "已关闭": "closed", "complete": "completed",
        "已完成": "completed", "已退款": "refunded", "已升级": "escalated",
        "已撤回": "retracted", "已归档": "archived",
    }
)  # fmt: skip


def status_of(status: str) -> str:
    """A status as the tables spell it: case-folded, "In Progress" and "处理中" as in_progress;
    an empty status is ``active``."""
    folded = " ".join(status.strip().casefold().split()) or "active"
    return STATUS_SPELLINGS.get(folded, folded.replace(" ", "_"))


def kind_in(fact_type: str, kinds: frozenset[str]) -> bool:
    """Whether a fact type is one of ``kinds``, or a compound name with one of them as a part
    ("customer_complaint", "support_ticket")."""
    folded = fact_type.strip().casefold()
    return folded in kinds or any(p in kinds for p in re.split(r"[\W_]+", folded) if p)


@dataclass(frozen=True, slots=True)
class StateRules:
    """Escalation of open matters and the status → score table (see ``DEFAULT_STATUS_SCORES``)."""

    escalate_after: timedelta = timedelta(hours=48)
    escalating_fact_types: frozenset[str] = frozenset(
        {"complaint", "ticket", "return", "refund", "support_case", "issue"}
    )
    open_statuses: frozenset[str] = frozenset({"pending", "open", "new", "in_progress"})
    status_scores: Mapping[str, float] = field(default_factory=lambda: DEFAULT_STATUS_SCORES)
    unknown_status_score: float = 0.6

    def score_of(self, status: str) -> float:
        return self.status_scores.get(status, self.unknown_status_score)


DEFAULT_STATE_RULES = StateRules()


def state_consistency(candidate: Candidate, now: datetime, rules: StateRules) -> StateVerdict:
    """The status to report for ``candidate`` at ``now`` and how usable that state is."""
    status = status_of(candidate.status)
    if status == "retracted":
        return StateVerdict("retracted", rules.score_of("retracted"))
    if candidate.valid_to is not None and candidate.valid_to <= now:
        return StateVerdict("superseded", rules.score_of("superseded"))
    if (
        status in rules.open_statuses
        and kind_in(candidate.fact_type, rules.escalating_fact_types)
        and now - candidate.occurred_at > rules.escalate_after
    ):
        return StateVerdict("escalated", rules.score_of("escalated"))
    return StateVerdict(status, rules.score_of(status))


# Fact types whose plain "active" status means the matter is still open (a live complaint).
LIVE_WHEN_ACTIVE = frozenset({"complaint", "ticket", "support_case", "issue"})
# Statuses that flag a matter still running: overdue, or a risk being handled (a recalled batch).
# The status table scores them "current" (0.9): they are not settled, so they do not go stale.
FLAGGED_STATUSES = frozenset({"escalated", "high_risk"})


def is_open_matter(candidate: Candidate, rules: StateRules) -> bool:
    """An unresolved complaint, ticket or return: it stays live until it is resolved. Open,
    pending, new, in progress, escalated or flagged high-risk (or plain ``active`` for the fact
    types that stay live until resolved) — never a settled or unknown status."""
    status = status_of(candidate.status)
    if not kind_in(candidate.fact_type, rules.escalating_fact_types):
        return False
    if status in rules.open_statuses or status in FLAGGED_STATUSES:
        return True
    return status == "active" and kind_in(candidate.fact_type, LIVE_WHEN_ACTIVE)


# --- cross-validation ------------------------------------------------------------------------

AGREEMENT_THRESHOLD = 0.5
# sources that agree (the candidate's own included) → score; 1 is neutral: uncorroborated.
CORROBORATION_SCORES = (0.5, 0.85, 1.0)


def agrees(left: Candidate, right: Candidate) -> bool:
    """Same attributes where both set them, and either one shared value or similar wording."""
    same, differ = attribute_clash(left.attributes, right.attributes)
    if differ:
        return False
    return same > 0 or agreement(left.content, right.content) >= AGREEMENT_THRESHOLD


def cross_validation(candidate: Candidate, others: Iterable[Candidate]) -> float:
    """0.5 alone; 0.85 when a second independent source agrees; 1.0 for three or more.

    Independent: another source_system, about the same entity (entity_type, entity_id) and
    fact_type, and another memory (versions of one memory do not corroborate each other).
    """
    sources = {candidate.source_system.casefold()}
    for other in others:
        if (
            other.memory_key != candidate.memory_key
            and other.source_system.casefold() not in sources
            and (other.entity_type, other.entity_id, other.fact_type)
            == (candidate.entity_type, candidate.entity_id, candidate.fact_type)
            and agrees(candidate, other)
        ):
            sources.add(other.source_system.casefold())
    return CORROBORATION_SCORES[min(len(sources), len(CORROBORATION_SCORES)) - 1]


# --- the trust score -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrustComponents:
    authority: float
    recency: float
    binding: float
    state: float
    cross_validation: float


@dataclass(frozen=True, slots=True)
class TrustProfile:
    """Per-tenant weights of the trust components, and α of the final formula (see fusion).

    Defaults: authority 0.30 (a wrong source is the costliest mistake), binding 0.25 (another
    customer's record must lose), recency 0.20, state 0.15, cross-validation 0.10 (a bonus:
    most facts have one source). α = 0.5 weighs relevance and trust equally.
    """

    authority: float = 0.30
    recency: float = 0.20
    binding: float = 0.25
    state: float = 0.15
    cross_validation: float = 0.10
    alpha: float = 0.5

    def __post_init__(self) -> None:
        weights = (self.authority, self.recency, self.binding, self.state, self.cross_validation)
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise DomainError(f"trust weights must be ≥ 0 with a positive sum, got {weights}")
        unit_value("alpha", self.alpha)


DEFAULT_PROFILE = TrustProfile()


# A component is never taken below this, so that one zero (another customer, an expired fact)
# weighs heavily without erasing the evidence of the others.
TRUST_FLOOR = 0.01
# Recency has its own, lower floor: 2^-RECENCY_HORIZON, i.e. a memory keeps losing trust with
# every half-life up to RECENCY_HORIZON half-lives of age. With the common floor (0.01, reached
# after 6.6 half-lives) a three-year-old browsing event (36 half-lives of 30 days, recency
# 9e-12) kept 0.01^0.2 = 0.40 of its trust against ~0.97 for last week's: the floor bought decay
# back, and a 2.4x relevance edge was enough to win. Ten half-lives is where decay has said all
# it can: from there a fresh memory of the same kind needs to be 4x less relevant to lose (see
# ``decay_margin``), and memories older than that are ordered by everything but their age (a
# conversation from three years ago is not ranked by which of its weeks came last).
RECENCY_HORIZON = 10
RECENCY_FLOOR = 2.0**-RECENCY_HORIZON


def _floored(score: float, floor: float) -> float:
    return min(1.0, max(floor, score))


def trust_score(components: TrustComponents, profile: TrustProfile = DEFAULT_PROFILE) -> float:
    """The weighted GEOMETRIC mean of the components, in [0, 1].

    Each component is clamped to [TRUST_FLOOR, 1], recency to [RECENCY_FLOOR, 1].

    Why geometric, not arithmetic: trust is a conjunction — a memory must be from a credible
    source AND about this entity AND still fresh AND in a usable state. With a weighted mean a
    complaint resolved 60 days ago (recency 0.003 at a 7-day half-life) kept 0.68 of trust and
    outranked the open complaint of last week on a keyword coincidence; with the geometric mean
    a component near zero pulls the whole score down (0.003^0.2 ≈ 0.31) while a perfect
    component cannot buy back a failed one.
    """
    pairs = (
        (_floored(components.authority, TRUST_FLOOR), profile.authority),
        (_floored(components.recency, RECENCY_FLOOR), profile.recency),
        (_floored(components.binding, TRUST_FLOOR), profile.binding),
        (_floored(components.state, TRUST_FLOOR), profile.state),
        (_floored(components.cross_validation, TRUST_FLOOR), profile.cross_validation),
    )
    total = sum(weight for _, weight in pairs)
    log_sum = sum(weight * math.log(score) for score, weight in pairs)
    return min(1.0, max(0.0, math.exp(log_sum / total)))


def decay_margin(half_lives: float, profile: TrustProfile = DEFAULT_PROFILE) -> float:
    """How many times more relevant a memory ``half_lives`` older than another must be to
    outscore it, everything else equal (same entity, fact type, source and state).

    Rule: every half-life of age divides trust by ``2^(w_r/W)`` (w_r the recency weight, W the
    sum of the weights) and, through final = relevance^(1−α)·trust^α, the final score by
    ``2^(α·w_r/W)``; relevance must make that up: margin = ``2^(n·α·w_r / (W·(1−α)))``, n
    capped at RECENCY_HORIZON (10). With the default profile (w_r/W = 0.2, α = 0.5): 2^(0.2·n)
    — 1.15x for one half-life, 2x for five, 4x from ten on. Relevance lies in [0, 1], so a
    memory ten half-lives older wins only if the fresh one is at most a quarter as relevant —
    nearly unrelated to the question: that is "far higher", and deliberate. An old memory
    that is much more on topic than a fresh one may well be what is asked about, but a small
    edge in wording (the 2.4x the common floor allowed) must never revive it. ``inf`` when
    α = 1 (relevance counts for nothing) and 1 for a profile that gives recency no weight.
    """
    weights = (
        profile.authority,
        profile.recency,
        profile.binding,
        profile.state,
        profile.cross_validation,
    )
    n = min(max(0.0, half_lives), float(RECENCY_HORIZON))
    share = profile.recency / sum(weights)
    if profile.alpha >= 1.0:
        return math.inf if share > 0 and n > 0 else 1.0
    return float(2.0 ** (n * profile.alpha * share / (1.0 - profile.alpha)))
