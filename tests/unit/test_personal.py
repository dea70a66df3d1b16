"""Personal questions: the user's own memories (and their entities') before pages about no one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.lexicon import about_the_speaker
from memstream.services.domain.model import Anchor
from memstream.services.domain.personal import PERSONAL_RELEVANCE_SHARE
from memstream.services.domain.query import Candidate, RetrievalRequest
from memstream.services.domain.ranking import score_candidates
from memstream.services.domain.reading import read_question

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def memory(
    vid: str,
    vector: float,
    *,
    anchors: tuple[Anchor, ...] = (),
    fact_type: str = "browsing",
    source: str = "clickstream",
    age: timedelta = timedelta(days=5),
) -> Candidate:
    at = NOW - age
    primary = anchors[0] if anchors else Anchor("page", vid)
    return Candidate(
        version_id=vid,
        memory_key=vid,
        version=1,
        content=f"memory {vid}",
        entity_type=primary.type,
        entity_id=primary.id,
        anchors=anchors,
        fact_type=fact_type,
        source_system=source,
        status="active",
        occurred_at=at,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        is_current=True,
        vector_score=vector,
    )


USER = Anchor("customer", "C-7")
BLENDER = Anchor("product", "BL-200")


def ask(query: str, user: str | None = "C-7") -> RetrievalRequest:
    anchors = (Anchor("customer", user),) if user else ()
    return RetrievalRequest(
        request_id="r", tenant_id="t", query=query, user_id=user, anchors=anchors
    )


@pytest.mark.parametrize(
    ("query", "personal"),
    [
        ("what did I look at last week?", True),
        ("the jug I looked at", True),
        ("is my complaint still open?", True),
        ("remind me which blender I ordered", True),
        ("我上次买的耳机是哪个", True),
        ("我的订单到哪了", True),
        ("can I pay by card?", False),
        ("Can I return my headphones after a month?", False),
        ("how do I descale the kettle?", False),
        ("tell me about the BL-200 warranty", False),
        ("what is the motor power of the blender?", False),
        ("我可以退货吗", False),
        ("is it possible to change my address?", False),
    ],
)
def test_about_the_speaker(query: str, personal: bool) -> None:
    assert about_the_speaker(query) is personal


def test_no_user_id_is_never_personal() -> None:
    assert not read_question(ask("what did I buy?", user=None)).personal
    assert read_question(ask("what did I buy?")).personal


def test_the_users_view_beats_a_fresher_more_similar_catalogue_page() -> None:
    mine = memory("mine", 0.55, anchors=(USER, BLENDER), age=timedelta(days=20))
    catalogue = memory(
        "catalogue", 0.80, fact_type="product_spec", source="catalog", age=timedelta(days=1)
    )
    faq = memory("faq", 0.75, fact_type="official_doc", source="official", age=timedelta(days=2))
    results = score_candidates(ask("which blender did I look at?"), [catalogue, faq, mine], NOW)
    assert results[0].candidate.version_id == "mine"
    kinds = {r.candidate.version_id: r.binding_kind for r in results}
    assert kinds == {"mine": "exact", "catalogue": "unbound", "faq": "unbound"}


def test_a_page_about_the_users_product_is_bound_through_the_user() -> None:
    mine = memory("mine", 0.50, anchors=(USER, BLENDER))
    spec = memory("spec", 0.85, anchors=(BLENDER,), fact_type="product_spec", source="catalog")
    other = memory("other", 0.90, fact_type="official_doc", source="official")
    results = score_candidates(
        ask("what's the motor power of my blender?"), [other, mine, spec], NOW
    )
    by_id = {r.candidate.version_id: r for r in results}
    assert by_id["spec"].binding_kind == "user_entity"
    assert by_id["other"].binding_kind == "unbound"
    assert [r.candidate.version_id for r in results][-1] == "other"


def test_a_general_question_ranks_as_before() -> None:
    mine = memory("mine", 0.40, anchors=(USER, BLENDER))
    policy = memory("policy", 0.85, fact_type="official_doc", source="official")
    results = score_candidates(ask("can I return a blender after 30 days?"), [mine, policy], NOW)
    assert results[0].candidate.version_id == "policy"
    assert {r.binding_kind for r in results} == {"exact", "neutral"}
    assert all(r.factors == () for r in results)


def test_an_irrelevant_user_memory_does_not_push_a_relevant_page_down() -> None:
    mine = memory("mine", 0.20, anchors=(USER,))
    page = memory("page", 0.90, fact_type="official_doc", source="official")
    results = score_candidates(ask("what did I ask about the warranty?"), [mine, page], NOW)
    assert results[0].candidate.version_id == "page"  # 0.20 < half of 0.90


vectors = st.floats(min_value=0.05, max_value=1.0)
days = st.integers(min_value=0, max_value=2000)
sources = st.sampled_from(["clickstream", "crm", "erp", "catalog", "official", "forum"])


@settings(deadline=None)
@given(
    st.lists(st.tuples(vectors, days, sources), min_size=1, max_size=5),
    st.lists(st.tuples(vectors, days, sources), min_size=1, max_size=5),
)
def test_relevant_user_memories_outrank_every_unbound_one(
    own: list[tuple[float, int, str]], unbound: list[tuple[float, int, str]]
) -> None:
    """Property: in a personal question, every user memory at least half as relevant as the
    best candidate ranks above every memory bound to no one, whatever the other scores."""
    candidates = [
        memory(f"u{i}", v, anchors=(USER,), source=s, age=timedelta(days=d))
        for i, (v, d, s) in enumerate(own)
    ] + [memory(f"n{i}", v, source=s, age=timedelta(days=d)) for i, (v, d, s) in enumerate(unbound)]
    results = score_candidates(ask("what did I look at?"), candidates, NOW)
    best = max(r.scores.fused for r in results)
    order = [r.candidate.version_id for r in results]
    first_unbound = min(i for i, vid in enumerate(order) if vid.startswith("n"))
    for i, r in enumerate(results):
        if r.binding_kind == "exact" and r.scores.fused >= PERSONAL_RELEVANCE_SHARE * best:
            assert i < first_unbound


@settings(deadline=None)
@given(st.lists(st.tuples(vectors, days, sources), min_size=2, max_size=6))
def test_without_a_personal_question_precedence_plays_no_part(
    items: list[tuple[float, int, str]],
) -> None:
    candidates = [
        memory(f"m{i}", v, anchors=(USER,) if i % 2 else (), source=s, age=timedelta(days=d))
        for i, (v, d, s) in enumerate(items)
    ]
    results = score_candidates(ask("how long is the warranty?"), candidates, NOW)
    finals = [r.scores.final for r in results]
    assert finals == sorted(finals, reverse=True)
