"""Ranking: the whole pure read pipeline from retrieved candidates to rendered results.

``score_candidates`` does, in order:

1. merge candidates repeated by version_id (found by both retrievers: the best of each score);
   drop retracted ones (never returned), those recorded after ``known_at`` and those not yet
   valid at ``as_of`` (defence in depth: the retrievers already select by time);
2. relevance: vector (cosine clamped to [0, 1]) and keyword scores (divided by their maximum
   when it exceeds 1, see ``fusion.scale_to_unit``) fused with weights adapted to the request
   (``fusion.fusion_weights``); with a time window, the metadata score is 1 for a memory that
   occurred inside it, else 0;
3. trust: authority, recency (half-life per fact type), entity binding (to the request's
   anchors, plus its active entities when the query is anaphoric), state consistency and
   cross-validation, combined by the tenant's ``TrustProfile``;
4. final = relevance^(1−α) · trust^α (``fusion.final_score``);
5. in a personal request (a user_id and a question about the speaker), memories bound to no
   one score binding 0.01, those about the user's entities 0.5, and the user's relevant
   memories take precedence over unbound ones (``personal``);
6. arbitration of conflicts (losers demoted);
7. in a question about a problem ("what was wrong with my grinder?"), an entity's other
   records are capped below its comparably relevant complaints, tickets and cases; in a
   question about the current state ("is my case still open?"), a settled matter is capped
   below the comparably relevant open matters of its entity and fact type (``matters``);
8. sort by precedence then final descending, ties by version_id, keep ``request.limit``,
   render within the budget.

Decay decides (``trust.decay_margin``): all else equal an older memory never scores higher, and
one n half-lives older than another of the same entity and fact type needs 2^(0.2·n) times its
relevance to outscore it under the default profile (4x at ten half-lives).

Scores are evaluated at ``request.as_of`` when given (recency and state "as of then"), else at
``now``. Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.arbitration import DEFAULT_ARBITRATION, ArbitrationRules, arbitrate
from memstream.services.domain.decay import DEFAULT_DECAY, DecayRules, recency
from memstream.services.domain.fusion import (
    final_score,
    fuse,
    fusion_weights,
    query_features,
    scale_to_unit,
)
from memstream.services.domain.matters import matters_first
from memstream.services.domain.personal import (
    is_personal,
    personal_binding,
    precedence,
    user_entities,
)
from memstream.services.domain.query import Candidate, RetrievalRequest, ScoredResult, Scores
from memstream.services.domain.render import render_all
from memstream.services.domain.trust import (
    DEFAULT_AUTHORITY,
    DEFAULT_PROFILE,
    DEFAULT_STATE_RULES,
    AuthorityTable,
    StateRules,
    TrustComponents,
    TrustProfile,
    cross_validation,
    entity_binding,
    is_open_matter,
    state_consistency,
    trust_score,
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


def score_candidates(
    request: RetrievalRequest,
    candidates: Sequence[Candidate],
    now: datetime,
    profile: TrustProfile = DEFAULT_PROFILE,
    rules: RankingRules = DEFAULT_RULES,
) -> list[ScoredResult]:
    """Score, arbitrate, sort, limit and render ``candidates`` for ``request`` (see above)."""
    at = request.as_of if request.as_of is not None else now
    live = [c for c in merge_candidates(candidates) if _eligible(c, request)]
    if not live:
        return []
    weights = fusion_weights(request, query_features(request.query))
    anchors = request.anchors
    if weights.use_active_entities:
        anchors = (*anchors, *(a for a in request.active_entities if a not in anchors))
    keyword_divisor = scale_to_unit(c.keyword_score for c in live if c.keyword_score is not None)
    # Cross-validation compares a candidate with those about the same entity and fact only.
    peers: dict[tuple[str, str, str], list[Candidate]] = {}
    for c in live:
        peers.setdefault((c.entity_type, c.entity_id, c.fact_type), []).append(c)

    personal = is_personal(request) and request.user_id is not None
    entities = user_entities(live, request.user_id or "") if personal else frozenset()
    bound: list[tuple[Candidate, str, float, float]] = []  # candidate, kind, binding, fused
    for candidate in live:
        binding = entity_binding(candidate.anchors, anchors)
        if binding.kind == "none":
            continue  # about another entity of a kind the request names: never an answer
        if personal:
            binding = personal_binding(candidate.anchors, binding, entities)
        vector = min(1.0, max(0.0, candidate.vector_score or 0.0))
        keyword = min(1.0, max(0.0, (candidate.keyword_score or 0.0) / keyword_divisor))
        fused = fuse(vector, keyword, weights, _time_fit(candidate, request))
        bound.append((candidate, binding.kind, binding.score, fused))
    best = max((fused for *_, fused in bound), default=0.0)

    scored: list[ScoredResult] = []
    for candidate, kind, binding_score, fused in bound:
        vector = min(1.0, max(0.0, candidate.vector_score or 0.0))
        keyword = min(1.0, max(0.0, (candidate.keyword_score or 0.0) / keyword_divisor))
        verdict = state_consistency(candidate, at, rules.state)
        components = TrustComponents(
            authority=rules.authority.authority(candidate.source_system),
            recency=matter_recency(candidate, at, rules),
            binding=binding_score,
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
                binding_kind=kind,
                precedence=precedence(kind, fused, best) if personal else 0,
            )
        )

    arbitrated = arbitrate(scored, rules.authority, rules.arbitration)
    arbitrated = matters_first(arbitrated, request.query, rules.state)
    ranked = sorted(
        arbitrated, key=lambda r: (-r.precedence, -r.scores.final, r.candidate.version_id)
    )
    top = ranked[: request.limit]
    blocks = render_all(top, rules.render_budget)
    return [dataclasses.replace(r, rendered=block) for r, block in zip(top, blocks, strict=True)]
