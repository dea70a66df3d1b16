"""One order: a reply is served in the order of its own final scores, and every rule that moves a
memory is a named factor inside final — proven over ``score_candidates`` end to end."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.fusion import final_score
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, RetrievalRequest, ScoredResult
from memstream.services.domain.ranking import score_candidates
from memstream.services.domain.trust import decay_margin

NOW = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
USER = Anchor("customer", "cu-44")
OTHER_USER = Anchor("customer", "cu-45")
LAMP = Anchor("product", "LM-12")
DESK = Anchor("product", "DK-3")
RENTAL_A = Anchor("rental", "RN-100")
RENTAL_B = Anchor("rental", "RN-200")

ANCHOR_SETS = (
    (USER,),
    (USER, LAMP),
    (USER, RENTAL_A),
    (USER, RENTAL_B),
    (LAMP,),
    (DESK,),
    (RENTAL_A,),
    (OTHER_USER, DESK),
    (),
)
FACTS = (
    ("browsing", "clickstream", "active"),
    ("order", "erp", "active"),
    ("complaint", "ticketing", "open"),
    ("complaint", "ticketing", "resolved"),
    ("support_case", "crm", "closed"),
    ("product_spec", "catalog", "active"),
    ("product_spec", "forum", "active"),
    ("review", "user_review", "active"),
    ("shipment", "erp", "active"),
)
TEXTS = (
    "Viewed the LM-12 desk lamp in white, 9W, USB-C.",
    "Ordered the DK-3 standing desk, oak, 140 cm.",
    "The lamp flickers after a week; customer asked for a replacement.",
    "Rental RN-100 shipped by courier, arriving Tuesday.",
    "Rental RN-200 delivered to the front desk.",
    "LM-12 spec: 9W, warm white, USB-C, black or white.",
    "Forum: my LM-12 draws 15W, not 9W.",
    "台灯 LM-12 白色 USB-C 已发货",
)
QUESTIONS = (
    "which lamp did I look at?",
    "is my lamp complaint still open?",
    "what was wrong with my desk?",
    "the white 9W lamp with USB-C",
    "and the delivery?",
    "what did I order most recently?",
    "我上次看的台灯",
    "what is the LM-12's power draw?",
    "where is my rental?",
)

candidate_specs = st.tuples(
    st.sampled_from(ANCHOR_SETS),
    st.sampled_from(FACTS),
    st.sampled_from(TEXTS),
    st.floats(min_value=0.0, max_value=1.0),  # vector
    st.one_of(st.none(), st.floats(min_value=0.0, max_value=3.0)),  # keyword
    st.integers(min_value=0, max_value=2000),  # age in days
)


def build(vid: str, spec: tuple[object, ...], age_days: float | None = None) -> Candidate:
    anchors, (fact_type, source, status), content, vector, keyword, days = spec  # type: ignore[misc]
    at = NOW - timedelta(days=float(age_days if age_days is not None else days))  # type: ignore[arg-type]
    primary = anchors[0] if anchors else Anchor("page", vid)  # type: ignore[index]
    return Candidate(
        version_id=vid,
        memory_key=vid,
        version=1,
        content=content,  # type: ignore[arg-type]
        entity_type=primary.type,
        entity_id=primary.id,
        anchors=anchors,  # type: ignore[arg-type]
        fact_type=fact_type,  # type: ignore[has-type]
        source_system=source,  # type: ignore[has-type]
        status=status,  # type: ignore[has-type]
        occurred_at=at,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        is_current=True,
        vector_score=vector,  # type: ignore[arg-type]
        keyword_score=keyword,  # type: ignore[arg-type]
    )


def ask(query: str, focus: bool, user: bool) -> RetrievalRequest:
    return RetrievalRequest(
        request_id="r",
        tenant_id="t",
        query=query,
        user_id=USER.id if user else None,
        anchors=(USER,) if user else (),
        active_entities=(RENTAL_A,) if focus else (),
        limit=50,
    )


def explained(result: ScoredResult) -> float:
    """final as the reply's own scores state it: relevance^(1−α)·trust^α × its factors."""
    product = math.prod(factor for _, factor in result.factors)
    return final_score(result.scores.fused, result.scores.trust) * product


@settings(max_examples=250, deadline=None)
@given(
    st.lists(candidate_specs, min_size=1, max_size=12),
    st.sampled_from(QUESTIONS),
    st.booleans(),
    st.booleans(),
)
def test_the_served_order_is_the_order_of_final_and_final_explains_itself(
    specs: list[tuple[object, ...]], query: str, focus: bool, user: bool
) -> None:
    candidates = [build(f"m{i:02d}", spec) for i, spec in enumerate(specs)]
    results = score_candidates(ask(query, focus, user), candidates, NOW)
    finals = [r.scores.final for r in results]
    assert finals == sorted(finals, reverse=True)
    for r in results:
        assert math.isclose(r.scores.final, explained(r), rel_tol=1e-9, abs_tol=1e-12)
        assert all(0.0 <= factor <= 1.0 for _, factor in r.factors)
        assert 0.0 <= r.scores.final <= 1.0


@settings(max_examples=250, deadline=None)
@given(
    st.lists(candidate_specs, min_size=0, max_size=8),
    candidate_specs,
    st.integers(min_value=0, max_value=1500),
    st.integers(min_value=1, max_value=1500),
    st.sampled_from([q for q in QUESTIONS]),
    st.booleans(),
    st.booleans(),
)
def test_all_else_equal_older_never_ranks_above_younger(
    noise: list[tuple[object, ...]],
    twin: tuple[object, ...],
    young_days: int,
    extra_days: int,
    query: str,
    focus: bool,
    user: bool,
) -> None:
    """Two memories that differ only in age, among any others, under any question that does not
    ask for the earliest: the younger is served first (or both are left out)."""
    pool = [build(f"n{i:02d}", spec) for i, spec in enumerate(noise)]
    young = build("twin-young", twin, young_days)
    old = build("twin-old", twin, young_days + extra_days)
    results = score_candidates(ask(query, focus, user), [*pool, old, young], NOW)
    order = [r.candidate.version_id for r in results]
    if "twin-old" in order:
        assert order.index("twin-young") < order.index("twin-old")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(candidate_specs, min_size=0, max_size=8),
    st.floats(min_value=1, max_value=30),  # half-lives between the two views
    st.floats(min_value=0.2, max_value=0.9),  # the fresh view's relevance
    st.floats(min_value=0.5, max_value=0.97),  # the old one's edge, as a share of the margin
)
def test_the_decay_margin_holds_on_the_served_order(
    noise: list[tuple[object, ...]], half_lives: float, fresh: float, share: float
) -> None:
    """An older view of the user's needs 2^(0.2·n) times the relevance of a fresh one (n
    half-lives apart, capped at ten) to be served above it — whatever else is in the reply."""
    old_relevance = fresh * decay_margin(half_lives) * share
    if old_relevance > 1.0:
        return
    views = []
    for vid, relevance, days in (
        ("view-old", old_relevance, 30 * half_lives + 1),
        ("view-new", fresh, 1),
    ):
        spec = ((USER,), FACTS[0], "Viewed a reading lamp.", relevance, None, 0)
        views.append(build(vid, spec, days))
    pool = [build(f"n{i:02d}", spec) for i, spec in enumerate(noise)]
    results = score_candidates(ask("which lamp did I view?", False, True), [*pool, *views], NOW)
    order = [r.candidate.version_id for r in results]
    assert order.index("view-new") < order.index("view-old")


def test_the_fresh_view_is_served_first_when_its_final_is_higher() -> None:
    """A four-year-old view of a kettle the question's words fit well (relevance 0.66) against
    the user's view of a kettle ten days ago (relevance 0.32, less than half of it): the fresh
    view's final is higher, so it is served first."""
    old = build(
        "old-view",
        ((USER,), FACTS[0], "Viewed the Brava kettle: no keep-warm.", 0.66, 0.66, 0),
        4 * 365,
    )
    new = build(
        "new-view", ((USER,), FACTS[0], "Viewed the Oslo gooseneck kettle.", 0.32, 0.32, 0), 10
    )
    for query in (
        "does the kettle I looked at keep water warm?",
        "does the kettle I looked at last time keep water warm?",
    ):
        results = score_candidates(ask(query, False, True), [old, new], NOW)
        by_id = {r.candidate.version_id: r for r in results}
        assert by_id["new-view"].scores.fused < 0.5 * by_id["old-view"].scores.fused
        assert by_id["new-view"].scores.final > by_id["old-view"].scores.final
        assert [r.candidate.version_id for r in results] == ["new-view", "old-view"]
