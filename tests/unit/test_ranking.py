"""score_candidates: the whole read pipeline, and the traps that catch plain vector stores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, RetrievalRequest, ScoredResult
from memstream.services.domain.ranking import RankingRules, merge_candidates, score_candidates
from memstream.services.domain.trust import TrustProfile

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def candidate(
    version_id: str,
    *,
    content: str = "Order O-9: XR-500 headphones returned, refund pending.",
    entity: tuple[str, str] = ("customer", "C-17"),
    fact_type: str = "return",
    source_system: str = "erp",
    status: str = "active",
    age: timedelta = timedelta(days=2),
    vector: float | None = 0.8,
    keyword: float | None = None,
    attributes: Mapping[str, str] | None = None,
    memory_key: str | None = None,
    recorded_age: timedelta | None = None,
    valid_to: datetime | None = None,
) -> Candidate:
    occurred = NOW - age
    return Candidate(
        version_id=version_id,
        memory_key=memory_key or f"key-{version_id}",
        version=1,
        content=content,
        entity_type=entity[0],
        entity_id=entity[1],
        anchors=(Anchor(*entity),),
        fact_type=fact_type,
        source_system=source_system,
        status=status,
        occurred_at=occurred,
        valid_from=occurred,
        valid_to=valid_to,
        recorded_at=NOW - (recorded_age if recorded_age is not None else age),
        is_current=valid_to is None,
        attributes=dict(attributes or {}),
        vector_score=vector,
        keyword_score=keyword,
    )


def request(query: str = "what happened to my return?", **fields: object) -> RetrievalRequest:
    base: dict[str, object] = {"user_id": "C-17", "anchors": (Anchor("customer", "C-17"),)}
    base.update(fields)
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, **base)  # type: ignore[arg-type]


def ids(results: Sequence[ScoredResult]) -> list[str]:
    return [r.candidate.version_id for r in results]


# --- the traps -------------------------------------------------------------------------------


def test_same_content_for_two_customers_the_requests_customer_wins() -> None:
    mine = candidate("mine", vector=0.80)
    theirs = candidate("theirs", entity=("customer", "C-18"), vector=0.86)
    assert theirs.vector_score and mine.vector_score
    assert theirs.vector_score > mine.vector_score  # similarity alone would pick theirs
    results = score_candidates(request(), [theirs, mine], NOW)
    # Another customer's record is never an answer for this customer: it is not returned.
    assert ids(results) == ["mine"]
    assert results[0].scores.binding == 1.0


def test_newer_open_complaint_beats_old_resolved_one() -> None:
    old = candidate(
        "old",
        content="Complaint: the XR-500 arrived scratched. Replacement sent, case closed.",
        fact_type="complaint",
        source_system="ticketing",
        status="resolved",
        age=timedelta(days=60),
        vector=0.85,
    )
    new = candidate(
        "new",
        content="Complaint: the replacement XR-500 does not charge.",
        fact_type="complaint",
        source_system="ticketing",
        status="pending",
        age=timedelta(days=3),
        vector=0.78,
    )
    results = score_candidates(request("what about my complaint?"), [old, new], NOW)
    assert ids(results) == ["new", "old"]
    assert results[0].effective_status == "escalated"  # pending for more than 48 h
    assert results[1].effective_status == "resolved"
    assert results[0].scores.recency > results[1].scores.recency
    assert 'status="escalated"' in results[0].rendered


def test_official_doc_beats_forum_post_of_similar_relevance() -> None:
    doc = candidate(
        "doc",
        content="The XR-500 is rated IPX4: splash resistant, not waterproof.",
        entity=("product", "XR-500"),
        fact_type="official_doc",
        source_system="official",
        age=timedelta(days=365),
        vector=0.80,
    )
    post = candidate(
        "post",
        content="Took my XR-500 swimming, totally waterproof!",
        entity=("product", "XR-500"),
        fact_type="forum_post",
        source_system="forum",
        age=timedelta(days=7),
        vector=0.84,
    )
    results = score_candidates(request("is the XR-500 waterproof?"), [post, doc], NOW)
    assert ids(results) == ["doc", "post"]
    assert results[0].scores.authority > results[1].scores.authority


def test_three_year_old_browsing_event_loses_to_last_weeks() -> None:
    ancient = candidate(
        "ancient",
        content="Viewed the XR-300 headphones page.",
        fact_type="browsing",
        source_system="clickstream",
        age=timedelta(days=3 * 365),
        vector=0.88,
    )
    recent = candidate(
        "recent",
        content="Viewed the XR-500 headphones page.",
        fact_type="browsing",
        source_system="clickstream",
        age=timedelta(days=7),
        vector=0.82,
    )
    results = score_candidates(
        request("which headphones was I looking at recently?"), [ancient, recent], NOW
    )
    assert ids(results) == ["recent", "ancient"]
    assert results[1].scores.recency < 1e-9


# --- the pipeline ----------------------------------------------------------------------------


def test_retracted_candidates_are_never_returned() -> None:
    gone = candidate("gone", status="retracted", vector=1.0)
    kept = candidate("kept", vector=0.1)
    assert ids(score_candidates(request(), [gone, kept], NOW)) == ["kept"]
    assert score_candidates(request(), [gone], NOW) == []
    assert score_candidates(request(), [], NOW) == []


def test_limit_and_deterministic_ties() -> None:
    same = [candidate(f"v{i}", memory_key=f"k{i}") for i in (3, 1, 2, 5, 4)]
    results = score_candidates(request(limit=3), same, NOW)
    assert ids(results) == ["v1", "v2", "v3"]
    assert ids(score_candidates(request(limit=3), list(reversed(same)), NOW)) == ids(results)


def test_scores_are_filled_and_bounded_and_sorted() -> None:
    pool = [
        candidate("a", vector=0.9, keyword=3.0),
        candidate("b", vector=None, keyword=1.5, source_system="forum"),
        candidate("c", vector=-0.2, keyword=None, age=timedelta(days=400)),
    ]
    results = score_candidates(request(), pool, NOW)
    finals = [r.scores.final for r in results]
    assert finals == sorted(finals, reverse=True)
    for r in results:
        s = r.scores
        for value in (s.vector, s.keyword, s.fused, s.authority, s.recency, s.binding, s.state):
            assert 0.0 <= value <= 1.0
        assert 0.0 <= s.cross_validation <= 1.0 and 0.0 <= s.trust <= 1.0 <= 1.0 + s.final
        assert r.rendered.startswith(f'<memory id="{r.candidate.version_id}"')
    by_id = {r.candidate.version_id: r for r in results}
    assert by_id["a"].scores.keyword == 1.0  # keyword scores above 1 are scaled by the max
    assert by_id["b"].scores.keyword == pytest.approx(0.5)
    assert by_id["c"].scores.vector == 0.0


def test_duplicates_from_both_retrievers_are_merged() -> None:
    vec = candidate("a", vector=0.7, keyword=None)
    kw = candidate("a", vector=None, keyword=0.9)
    (merged,) = merge_candidates([vec, kw])
    assert (merged.vector_score, merged.keyword_score) == (0.7, 0.9)
    results = score_candidates(request(), [vec, kw], NOW)
    assert ids(results) == ["a"]
    assert results[0].scores.fused == pytest.approx(0.6 * 0.7 + 0.4 * 0.9)


def test_conflicts_are_arbitrated_and_reported() -> None:
    erp = candidate(
        "erp",
        entity=("product", "XR-500"),
        fact_type="product_spec",
        attributes={"port": "USB-C"},
        age=timedelta(days=200),
        vector=0.7,
    )
    forum = candidate(
        "forum",
        entity=("product", "XR-500"),
        fact_type="product_spec",
        source_system="forum",
        attributes={"port": "micro-USB"},
        vector=0.9,
    )
    results = score_candidates(request("which port does the XR-500 use?"), [forum, erp], NOW)
    assert ids(results) == ["erp", "forum"]
    assert results[0].conflicts_with == ("forum",)
    assert results[1].conflicts_with == ("erp",)
    assert 'conflicts_with="erp"' in results[1].rendered


def test_cross_validated_memory_gains_trust() -> None:
    spec = {"port": "USB-C"}
    alone = score_candidates(
        request(), [candidate("a", entity=("product", "X"), attributes=spec)], NOW
    )[0]
    backed = score_candidates(
        request(),
        [
            candidate("a", entity=("product", "X"), attributes=spec),
            candidate("b", entity=("product", "X"), attributes=spec, source_system="catalog"),
        ],
        NOW,
    )
    a = next(r for r in backed if r.candidate.version_id == "a")
    assert a.scores.cross_validation > alone.scores.cross_validation
    assert a.scores.trust > alone.scores.trust


def test_time_window_favours_memories_inside_it() -> None:
    inside = candidate("inside", age=timedelta(days=10), vector=0.7)
    outside = candidate("outside", age=timedelta(days=3), vector=0.8)
    window = (NOW - timedelta(days=14), NOW - timedelta(days=7))
    plain = score_candidates(request("what did I return?"), [inside, outside], NOW)
    timed = score_candidates(
        request("what did I return?", time_window=window), [inside, outside], NOW
    )
    assert ids(plain)[0] == "outside"
    assert ids(timed)[0] == "inside"


def test_anaphora_binds_to_the_active_entity() -> None:
    active = (Anchor("product", "XR-500"),)
    xr500 = candidate("xr500", entity=("product", "XR-500"), fact_type="product_spec", vector=0.6)
    xr600 = candidate("xr600", entity=("product", "XR-600"), fact_type="product_spec", vector=0.7)
    results = score_candidates(
        request("is that one waterproof?", active_entities=active), [xr600, xr500], NOW
    )
    assert ids(results) == ["xr500"]  # "that one" is the XR-500: the XR-600 is not an answer
    assert results[0].scores.binding == 1.0


def test_as_of_and_known_at_select_what_was_true_and_known() -> None:
    before = NOW - timedelta(days=30)
    early = candidate("early", age=timedelta(days=60))
    later = candidate("later", age=timedelta(days=10))
    late_arrival = candidate("late", age=timedelta(days=60), recorded_age=timedelta(days=5))
    pool = [early, later, late_arrival]
    assert ids(score_candidates(request(as_of=before), pool, NOW)) == ["early", "late"]
    known = ids(score_candidates(request(as_of=before, known_at=before), pool, NOW))
    assert known == ["early"]


def test_tenant_profile_and_rules_change_the_outcome() -> None:
    doc = candidate("doc", entity=("product", "P"), source_system="official", vector=0.7)
    post = candidate("post", entity=("product", "P"), source_system="forum", vector=0.8)
    assert ids(score_candidates(request(), [doc, post], NOW))[0] == "doc"
    relevance_only = TrustProfile(alpha=0.0)
    assert ids(score_candidates(request(), [doc, post], NOW, relevance_only))[0] == "post"
    forum_loving = RankingRules(authority=RankingRules().authority.merged({"forum": 1.0}))
    assert ids(score_candidates(request(), [doc, post], NOW, rules=forum_loving))[0] == "post"
