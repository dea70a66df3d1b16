"""Decay decides: older never scores higher, and many half-lives cost far more than a small
relevance edge (``trust.decay_margin``), proven on the whole ranking pipeline."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.decay import recency
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, RetrievalRequest
from memstream.services.domain.ranking import score_candidates
from memstream.services.domain.trust import (
    RECENCY_HORIZON,
    TrustComponents,
    TrustProfile,
    decay_margin,
    trust_score,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HALF_LIFE = timedelta(days=30)  # browsing


def browsing(vid: str, age: timedelta, vector: float, user: str = "C-1") -> Candidate:
    at = NOW - age
    return Candidate(
        version_id=vid,
        memory_key=vid,
        version=1,
        content=f"Viewed a product page ({vid}).",
        entity_type="customer",
        entity_id=user,
        anchors=(Anchor("customer", user),),
        fact_type="browsing",
        source_system="clickstream",
        status="active",
        occurred_at=at,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        is_current=True,
        vector_score=vector,
    )


def ask(query: str = "which headphones did I look at?") -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, user_id="C-1")


ages = st.floats(min_value=0, max_value=4000).map(lambda d: timedelta(days=d))
relevances = st.floats(min_value=0.05, max_value=1.0)


@settings(deadline=None)
@given(ages, ages, relevances)
def test_all_else_equal_older_never_scores_higher(a: timedelta, b: timedelta, rel: float) -> None:
    older, newer = max(a, b), min(a, b)
    results = score_candidates(
        ask(), [browsing("old", older, rel), browsing("new", newer, rel)], NOW
    )
    final = {r.candidate.version_id: r.scores.final for r in results}
    assert final["old"] <= final["new"] + 1e-12


@settings(deadline=None)
@given(st.floats(min_value=0, max_value=1e6), st.floats(min_value=0, max_value=1e6))
def test_recency_component_is_monotone_in_age(a: float, b: float) -> None:
    parts = (1.0, 1.0, 0.8, 0.5)
    young, old = sorted((a, b))
    fresh = recency(NOW - timedelta(hours=young), NOW, HALF_LIFE)
    stale = recency(NOW - timedelta(hours=old), NOW, HALF_LIFE)
    assert trust_score(TrustComponents(parts[0], stale, *parts[1:])) <= trust_score(
        TrustComponents(parts[0], fresh, *parts[1:])
    )


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=10, max_value=60),  # half-lives between the two
    st.floats(min_value=0.2, max_value=1.0),  # the fresh memory's relevance
    st.floats(min_value=1.0, max_value=3.9),  # how much more relevant the old one is
)
def test_ten_half_lives_need_four_times_the_relevance(
    half_lives: float, fresh_relevance: float, edge: float
) -> None:
    old_relevance = min(1.0, fresh_relevance * edge)
    old = browsing("old", HALF_LIFE * half_lives + timedelta(days=2), old_relevance)
    new = browsing("new", timedelta(days=2), fresh_relevance)
    results = score_candidates(ask(), [old, new], NOW)
    assert [r.candidate.version_id for r in results] == ["new", "old"]


def test_the_margin_is_the_stated_formula() -> None:
    assert decay_margin(0) == 1.0
    assert decay_margin(1) == pytest.approx(2**0.2)
    assert decay_margin(5) == pytest.approx(2.0)
    assert decay_margin(10) == pytest.approx(4.0)
    assert decay_margin(1000) == decay_margin(RECENCY_HORIZON) == pytest.approx(4.0)
    assert decay_margin(3, TrustProfile(recency=0)) == 1.0
    assert math.isinf(decay_margin(3, TrustProfile(alpha=1.0)))


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1, max_value=9.9), st.floats(min_value=0.3, max_value=0.9))
def test_the_margin_is_what_the_ranking_does(half_lives: float, fresh_relevance: float) -> None:
    """Just under the margin the fresh memory wins; just over it the old one does."""
    margin = decay_margin(half_lives)
    old_age = HALF_LIFE * half_lives + timedelta(days=1)
    for factor, winner in ((0.98, "new"), (1.02, "old")):
        old_relevance = fresh_relevance * margin * factor
        if old_relevance > 1.0:
            continue
        results = score_candidates(
            ask(),
            [
                browsing("old", old_age, old_relevance),
                browsing("new", timedelta(days=1), fresh_relevance),
            ],
            NOW,
        )
        assert results[0].candidate.version_id == winner


def test_three_year_old_view_loses_even_when_far_more_similar() -> None:
    """The seed's own example: a three-year-old earbuds view against last week's headphones."""
    old = browsing("earbuds", timedelta(days=3 * 365), 0.95)
    new = browsing("headphones", timedelta(days=7), 0.30)
    results = score_candidates(ask(), [old, new], NOW)
    assert [r.candidate.version_id for r in results] == ["headphones", "earbuds"]
