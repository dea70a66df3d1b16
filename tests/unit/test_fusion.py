"""Fusion: rrf, normalisation, adaptive weights, fuse and the final formula."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.errors import DomainError
from memstream.services.domain.fusion import (
    DEFAULT_WEIGHTS,
    FusionWeights,
    exact_terms,
    final_score,
    fuse,
    fusion_weights,
    rrf,
    scale_to_unit,
)
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import RetrievalRequest
from memstream.services.domain.reading import read_question

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
unit = st.floats(min_value=0.0, max_value=1.0)


def request(query: str, **fields: object) -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, **fields)  # type: ignore[arg-type]


def weights_for(query: str, **fields: object) -> FusionWeights:
    asked = request(query, **fields)
    return fusion_weights(asked, read_question(asked))


# --- rrf -------------------------------------------------------------------------------------


def test_rrf_hand_computed() -> None:
    fused = rrf([["a", "b", "c"], ["c", "b"]], k=60)
    # a: 1/61; b: 1/62 + 1/62; c: 1/63 + 1/61
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(2 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert list(fused) == ["c", "b", "a"]


def test_rrf_ties_break_by_id_and_duplicates_count_once() -> None:
    assert list(rrf([["b", "a"], ["a", "b"]])) == ["a", "b"]
    assert rrf([["a", "a", "b"]], k=0) == {"a": 1.0, "b": pytest.approx(1 / 3)}  # positions


def test_rrf_weights() -> None:
    fused = rrf([["a"], ["b"]], k=0, weights=[1.0, 3.0])
    assert fused == {"b": 3.0, "a": 1.0}
    with pytest.raises(DomainError):
        rrf([["a"]], weights=[1.0, 2.0])


# --- normalisation ---------------------------------------------------------------------------


def test_scale_to_unit_only_shrinks_scores_above_one() -> None:
    assert scale_to_unit([0.2, 0.8]) == 1.0
    assert scale_to_unit([2.0, 4.0]) == 4.0
    assert scale_to_unit([]) == 1.0


# --- exact terms and adaptive weights ---------------------------------------------------------


def test_exact_terms() -> None:
    assert exact_terms('Is the XR-500 "travel case" black, with USB-C and 2 ports?') == (
        "XR-500",
        "travel case",
        "black",
        "USB-C",
        "2",
    )
    assert exact_terms("订单ORD12345是红色的吗") == ("ORD12345", "红色")
    assert exact_terms("what's the weather like") == ()  # an apostrophe is not a quote


def test_default_weights() -> None:
    weights = weights_for("tell me about returns policy")
    assert weights == DEFAULT_WEIGHTS
    assert (weights.vector, weights.keyword, weights.metadata) == pytest.approx((0.6, 0.4, 0.0))


def test_time_window_makes_the_metadata_weight_grow() -> None:
    window = (datetime(2025, 5, 1, tzinfo=UTC), NOW)
    weights = weights_for("what did I order", time_window=window)
    assert weights.metadata == pytest.approx(0.3)
    assert weights.metadata > DEFAULT_WEIGHTS.metadata
    assert weights.vector + weights.keyword + weights.metadata == pytest.approx(1.0)


def test_exact_attributes_make_the_keyword_weight_grow_with_their_count() -> None:
    one = weights_for("does the XR-500 charge fast")
    three = weights_for("does the XR-500 have USB-C in black")
    assert DEFAULT_WEIGHTS.keyword < one.keyword < three.keyword
    assert three.keyword == pytest.approx(0.8)  # capped
    assert three.vector == pytest.approx(0.2)


def test_vague_anaphora_makes_the_vector_weight_grow() -> None:
    active = (Anchor("product", "XR-500"),)
    weights = weights_for("is that one waterproof?", active_entities=active)
    assert weights.vector > DEFAULT_WEIGHTS.vector
    chinese = weights_for("它防水吗", active_entities=active)
    assert chinese.vector == pytest.approx(weights.vector)
    assert weights_for("is that one waterproof?").vector == pytest.approx(weights.vector)


def test_fusion_weights_refuse_nonsense() -> None:
    with pytest.raises(DomainError):
        FusionWeights(vector=-1)
    with pytest.raises(DomainError):
        FusionWeights(0, 0, 0)
    assert FusionWeights(3, 1, 0).vector == pytest.approx(0.75)  # normalised to sum 1


# --- fuse and final ---------------------------------------------------------------------------


@given(v=st.floats(-2, 2), k=st.floats(-2, 2), m=st.none() | unit)
def test_fuse_is_within_bounds(v: float, k: float, m: float | None) -> None:
    assert 0.0 <= fuse(v, k, DEFAULT_WEIGHTS, m) <= 1.0


def test_fuse_is_the_weighted_mean() -> None:
    weights = FusionWeights(0.6, 0.4, 0.0)
    assert fuse(0.5, 1.0, weights) == pytest.approx(0.7)
    assert fuse(0.5, None, weights) == pytest.approx(0.3)  # not found by keyword → 0
    timed = FusionWeights(0.42, 0.28, 0.3)
    assert fuse(0.5, 0.5, timed, 1.0) == pytest.approx(0.65)
    assert fuse(0.5, 0.5, timed, 0.0) == pytest.approx(0.35)
    assert fuse(0.5, 0.5, timed) == pytest.approx(0.5)  # metadata left out


@given(r1=unit, r2=unit, trust=unit, alpha=unit)
def test_final_is_monotone_in_relevance(r1: float, r2: float, trust: float, alpha: float) -> None:
    low, high = sorted((r1, r2))
    assert final_score(low, trust, alpha) <= final_score(high, trust, alpha) + 1e-12


@given(t1=unit, t2=unit, relevance=unit, alpha=unit)
def test_final_is_monotone_in_trust(t1: float, t2: float, relevance: float, alpha: float) -> None:
    low, high = sorted((t1, t2))
    assert final_score(relevance, low, alpha) <= final_score(relevance, high, alpha) + 1e-12


@given(relevance=unit, trust=unit, alpha=unit)
def test_final_is_within_bounds(relevance: float, trust: float, alpha: float) -> None:
    assert 0.0 <= final_score(relevance, trust, alpha) <= 1.0


def test_final_formula() -> None:
    assert final_score(0.64, 0.25) == pytest.approx(0.4)  # sqrt(0.64 * 0.25)
    assert final_score(0.8, 0.3, alpha=0.0) == pytest.approx(0.8)
    assert final_score(0.8, 0.3, alpha=1.0) == pytest.approx(0.3)
    # A product, not a sum: no amount of relevance makes up for zero trust.
    assert final_score(1.0, 0.0) == 0.0
    with pytest.raises(DomainError):
        final_score(0.5, 0.5, alpha=2.0)
