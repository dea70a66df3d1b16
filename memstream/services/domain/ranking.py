"""Ranking: the whole pure read pipeline from retrieved candidates to rendered results.

``score_candidates`` does, in order:

1. merge candidates repeated by version_id (found by both retrievers: the best of each score);
   drop retracted ones (never returned), those recorded after ``known_at`` and those not yet
   valid at ``as_of`` (defence in depth: the retrievers already select by time);
2. relevance: vector (cosine clamped to [0, 1]; for a question in Chinese only, brought halfway
   to the candidates' mean: ``fusion.narrowed``) and keyword scores (divided by their maximum
   when it exceeds 1, see ``fusion.scale_to_unit``) fused with weights adapted to the request
   (``fusion.fusion_weights``); with a time window, the metadata score is 1 for a memory that
   occurred inside it, else 0;
3. trust: authority, recency (half-life per fact type), entity binding (to the request's
   anchors and its focus, ``context.active_entities``, which bind as anchors do — with or
   without an anaphor — except for an entity the question names itself), state consistency
   and cross-validation, combined by the tenant's ``TrustProfile``;
4. final = relevance^(1−α) · trust^α (``fusion.final_score``);
5. in a personal request (a user_id and a question about the speaker), memories bound to no
   one score binding 0.01 and those about the user's entities 0.5 (``personal``);
6. the rules that put one memory below another, each a documented factor inside ``final``
   and named in the result's ``factors`` (``yielding``), in this order: arbitration of
   conflicts (the loser's final × 0.5, ``arbitration``); the more authoritative source about
   the same entity first (``sources``); problem records and open matters first (``matters``);
   the memories about an id the question names first (``yielding.named_first``); a look-alike
   of another entity below the memory that holds more of the question's words, in a question
   about no user and no focus (``yielding.lookalike_first``);
   the memory matching all the attributes a question names first
   (``yielding.attributes_first``); the records of the fact a question names (stock, price)
   first, and the records of the kind it names (an order, a refund) before notes and other
   kinds (``kinds``); what happened in the period a question names first
   (``timely.period_first``); latest / earliest by time (``timely.by_time``); the focus first
   (``yielding.focus_first``); the person first (``personal.person_first``);
7. sort by final descending (ties: the more recent first, then version_id), keep
   ``request.limit``, render within the budget. **The served order is the order of final.**

The question is read once (``reading.read_question``), by the caller or here, and that reading
is what fusion and the rules consult.

Decay decides (``trust.decay_margin``): all else equal an older memory never scores higher, and
one n half-lives older than another of the same entity and fact type needs 2^(0.2·n) times its
relevance to outscore it under the default profile (4x at ten half-lives) — in the served order
too, since that is the order of final. (An "earliest" question asks for the opposite, and says so.)

Scores are evaluated at ``request.as_of`` when given (recency and state "as of then"), else at
``now``. Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.arbitration import DEFAULT_ARBITRATION, ArbitrationRules, arbitrate
from memstream.services.domain.authority import DEFAULT_AUTHORITY, AuthorityTable
from memstream.services.domain.decay import DEFAULT_DECAY, DecayRules, recency
from memstream.services.domain.fusion import (
    final_score,
    fuse,
    fusion_weights,
    narrowed,
    scale_to_unit,
)
from memstream.services.domain.kinds import named_fact_first, named_kind_first
from memstream.services.domain.matters import matters_first
from memstream.services.domain.model import Anchor
from memstream.services.domain.personal import person_first, personal_binding, user_entities
from memstream.services.domain.query import (
    PERSON_ANCHOR_TYPES,
    Candidate,
    RetrievalRequest,
    ScoredResult,
    Scores,
)
from memstream.services.domain.reading import QuestionReading, read_question
from memstream.services.domain.render import render_all
from memstream.services.domain.sources import sources_first
from memstream.services.domain.timely import by_time, in_focus, period_first, subject_of
from memstream.services.domain.trust import (
    DEFAULT_PROFILE,
    DEFAULT_STATE_RULES,
    Binding,
    StateRules,
    TrustComponents,
    TrustProfile,
    cross_validation,
    entity_binding,
    is_open_matter,
    state_consistency,
    trust_score,
)
from memstream.services.domain.yielding import (
    attributes_first,
    focus_first,
    lookalike_first,
    named_first,
)

DEFAULT_RENDER_BUDGET = 8000  # characters for all blocks together (~2k tokens)


@dataclass(frozen=True, slots=True)
class RankingRules:
    """A tenant's tables: decay, authority, state, arbitration, and the render budget."""

    decay: DecayRules = DEFAULT_DECAY
    authority: AuthorityTable = DEFAULT_AUTHORITY
    state: StateRules = DEFAULT_STATE_RULES
    arbitration: ArbitrationRules = DEFAULT_ARBITRATION
    render_budget: int = DEFAULT_RENDER_BUDGET


DEFAULT_RULES = RankingRules()


def _best(left: float | None, right: float | None) -> float | None:
    if left is None:
        return right
    if right is None:
        return left
    return max(left, right)


def matter_recency(candidate: Candidate, at: datetime, rules: RankingRules) -> float:
    """Recency by the fact type's half-life — except for an open matter (an unresolved
    complaint, ticket or return), which does not go stale: it is current until resolved."""
    if is_open_matter(candidate, rules.state):
        return 1.0
    return recency(candidate.occurred_at, at, rules.decay.half_life(candidate.fact_type))


def merge_candidates(candidates: Iterable[Candidate]) -> list[Candidate]:
    """One candidate per version_id (first seen order), keeping the best of each score."""
    merged: dict[str, Candidate] = {}
    for candidate in candidates:
        seen = merged.get(candidate.version_id)
        if seen is None:
            merged[candidate.version_id] = candidate
            continue
        merged[candidate.version_id] = dataclasses.replace(
            seen,
            vector_score=_best(seen.vector_score, candidate.vector_score),
            keyword_score=_best(seen.keyword_score, candidate.keyword_score),
        )
    return list(merged.values())


def _eligible(candidate: Candidate, request: RetrievalRequest) -> bool:
    if candidate.status.strip().casefold() == "retracted":
        return False
    if request.known_at is not None and candidate.recorded_at > request.known_at:
        return False
    return request.as_of is None or candidate.valid_from <= request.as_of


def _time_fit(candidate: Candidate, request: RetrievalRequest) -> float | None:
    # The retrievers keep memories whose validity overlaps the window (the schema's filter);
    # among those, one that *happened* inside the window is what "last week" asks about.
    if request.time_window is None:
        return None
    start, end = request.time_window
    return 1.0 if start <= candidate.occurred_at <= end else 0.0


def _squash(identifier: str) -> str:
    return "".join(ch for ch in identifier.casefold() if ch.isalnum())


def _binding(
    candidate: Candidate,
    anchors: tuple[Anchor, ...],
    request: RetrievalRequest,
    reading: QuestionReading,
) -> Binding:
    """Binding to the request's anchors and focus together: the focus binds as anchors do, so
    a memory about another entity of a focused kind binds ``none``, unless the question names
    that entity itself ("and the XR-600?"): then it binds as to the anchors alone."""
    binding = entity_binding(candidate.anchors, anchors)
    if binding.kind == "none" and len(anchors) > len(request.anchors):
        named = {_squash(term) for term in reading.named_ids}
        if any(_squash(a.id) in named for a in candidate.anchors):
            return entity_binding(candidate.anchors, request.anchors)
    return binding


def _ordered(
    scored: list[ScoredResult],
    request: RetrievalRequest,
    reading: QuestionReading,
    rules: RankingRules,
    profile: TrustProfile,
) -> list[ScoredResult]:
    """Every rule that puts one memory below another, as factors inside final (step 6)."""
    ruled = arbitrate(scored, rules.authority, rules.arbitration)
    if profile.alpha > 0 and profile.authority > 0:  # a tenant that weighs sources at all
        ruled = sources_first(ruled, reading)
    ruled = matters_first(ruled, reading, rules.state)
    ruled = named_first(ruled, reading)
    user = request.user_id is not None or any(
        a.type.strip().casefold() in PERSON_ANCHOR_TYPES for a in request.anchors
    )
    ruled = lookalike_first(
        ruled, reading, subject=user or bool(request.anchors) or bool(reading.focus)
    )
    ruled = attributes_first(ruled, reading)
    ruled = named_fact_first(ruled, reading.text)
    ruled = named_kind_first(
        ruled,
        reading.text,
        subject_of(ruled, reading, user),
        in_focus(ruled, reading),
        request.user_id if reading.personal else None,
    )
    ruled = period_first(ruled, reading, user=user)
    ruled = by_time(ruled, reading, user=user)
    ruled = focus_first(ruled, reading)
    if reading.personal:
        ruled = person_first(ruled)
    return sorted(
        ruled,
        key=lambda r: (
            -r.scores.final,
            -r.candidate.occurred_at.timestamp(),
            r.candidate.version_id,
        ),
    )


def score_candidates(
    request: RetrievalRequest,
    candidates: Sequence[Candidate],
    now: datetime,
    profile: TrustProfile = DEFAULT_PROFILE,
    rules: RankingRules = DEFAULT_RULES,
    reading: QuestionReading | None = None,
) -> list[ScoredResult]:
    """Score, order, limit and render ``candidates`` for ``request`` (see above)."""
    at = request.as_of if request.as_of is not None else now
    live = [c for c in merge_candidates(candidates) if _eligible(c, request)]
    if not live:
        return []
    if reading is None:
        reading = read_question(request, now)
    weights = fusion_weights(request, reading)
    anchors = (*request.anchors, *(a for a in reading.focus if a not in request.anchors))
    keyword_divisor = scale_to_unit(c.keyword_score for c in live if c.keyword_score is not None)
    # Cross-validation compares a candidate with those about the same entity and fact only.
    peers: dict[tuple[str, str, str], list[Candidate]] = {}
    for c in live:
        peers.setdefault((c.entity_type, c.entity_id, c.fact_type), []).append(c)

    personal = reading.personal and request.user_id is not None
    entities = user_entities(live, request.user_id or "") if personal else frozenset()
    vectors = dict(
        zip(
            (c.version_id for c in live),
            narrowed([min(1.0, max(0.0, c.vector_score or 0.0)) for c in live], reading),
            strict=True,
        )
    )
    scored: list[ScoredResult] = []
    for candidate in live:
        binding = _binding(candidate, anchors, request, reading)
        if binding.kind == "none":
            continue  # about another entity of a kind the request names: never an answer
        if personal:
            binding = personal_binding(candidate.anchors, binding, entities)
        vector = vectors[candidate.version_id]
        keyword = min(1.0, max(0.0, (candidate.keyword_score or 0.0) / keyword_divisor))
        fused = fuse(vector, keyword, weights, _time_fit(candidate, request))
        verdict = state_consistency(candidate, at, rules.state)
        components = TrustComponents(
            authority=rules.authority.authority(candidate.source_system),
            recency=matter_recency(candidate, at, rules),
            binding=binding.score,
            state=verdict.score,
            cross_validation=cross_validation(
                candidate,
                peers[(candidate.entity_type, candidate.entity_id, candidate.fact_type)],
            ),
        )
        trust = trust_score(components, profile)
        scores = Scores(
            vector=vector,
            keyword=keyword,
            fused=fused,
            authority=components.authority,
            recency=components.recency,
            binding=components.binding,
            state=components.state,
            cross_validation=components.cross_validation,
            trust=trust,
            final=final_score(fused, trust, profile.alpha),
        )
        scored.append(
            ScoredResult(
                candidate=candidate,
                scores=scores,
                effective_status=verdict.effective_status,
                binding_kind=binding.kind,
            )
        )

    top = _ordered(scored, request, reading, rules, profile)[: request.limit]
    blocks = render_all(top, rules.render_budget)
    return [dataclasses.replace(r, rendered=block) for r, block in zip(top, blocks, strict=True)]
