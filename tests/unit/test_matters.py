"""Current-state questions: an open matter before the settled ones of its entity and fact type."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.matters import RELEVANCE_SHARE, YIELD_SHARE
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, RetrievalRequest
from memstream.services.domain.ranking import score_candidates
from memstream.services.domain.reading import asks_about_a_problem, asks_current_state

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
USER = Anchor("customer", "C-7")


def matter(
    vid: str,
    vector: float,
    status: str,
    *,
    age: timedelta,
    fact_type: str = "support_case",
    anchor: Anchor = USER,
    source: str = "ticketing",
) -> Candidate:
    at = NOW - age
    return Candidate(
        version_id=vid,
        memory_key=vid,
        version=1,
        content=f"case {vid}",
        entity_type=anchor.type,
        entity_id=anchor.id,
        anchors=(anchor,),
        fact_type=fact_type,
        source_system=source,
        status=status,
        occurred_at=at,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        is_current=True,
        vector_score=vector,
    )


def ask(query: str) -> RetrievalRequest:
    return RetrievalRequest(
        request_id="r", tenant_id="t", query=query, user_id=USER.id, anchors=(USER,)
    )


@pytest.mark.parametrize(
    ("query", "current"),
    [
        ("is my repair case still open?", True),
        ("what's happening with my case?", True),
        ("what is the status of my return?", True),
        ("any news on my complaint?", True),
        ("has my refund gone through yet?", True),
        ("我的投诉进展如何", True),
        ("工单现在怎么样了", True),
        ("what did I complain about in March?", False),
        ("which kettle did I buy?", False),
        ("how do I descale the kettle?", False),
    ],
)
def test_asks_current_state(query: str, current: bool) -> None:
    assert asks_current_state(query) is current


def test_open_case_beats_an_older_closed_case_that_shares_more_words() -> None:
    closed = matter("closed", 0.62, "closed", age=timedelta(days=60))
    open_ = matter("open", 0.45, "open", age=timedelta(days=5))
    ranked = score_candidates(ask("is my case still open?"), [closed, open_], NOW)
    assert [r.candidate.version_id for r in ranked] == ["open", "closed"]
    closed_final = ranked[1].scores.final
    assert closed_final == pytest.approx(
        YIELD_SHARE
        * ranked[0].scores.final
        * (1 + ranked[1].scores.final / ranked[1].factors[0][1])
        / 2
    )
    assert [name for name, _ in ranked[1].factors] == ["settled"]


def test_without_a_state_phrase_relevance_and_decay_decide() -> None:
    closed = matter("closed", 0.62, "closed", age=timedelta(days=60))
    open_ = matter("open", 0.45, "open", age=timedelta(days=5))
    ranked = score_candidates(ask("what did I report about the kettle?"), [closed, open_], NOW)
    assert ranked[0].candidate.version_id == "closed"


def test_another_customers_open_case_does_not_cap_mine() -> None:
    mine = matter("mine", 0.62, "closed", age=timedelta(days=60))
    theirs = matter("theirs", 0.6, "open", age=timedelta(days=5), anchor=Anchor("customer", "C-9"))
    request = RetrievalRequest(request_id="r", tenant_id="t", query="is my case still open?")
    ranked = score_candidates(request, [mine, theirs], NOW)
    by_id = {r.candidate.version_id: r for r in ranked}
    assert by_id["mine"].scores.final > YIELD_SHARE * by_id["theirs"].scores.final


def test_an_irrelevant_open_case_does_not_bury_the_one_asked_about() -> None:
    closed = matter("closed", 0.8, "resolved", age=timedelta(days=20))
    open_ = matter("open", 0.3, "open", age=timedelta(days=2))
    ranked = score_candidates(ask("is my case still open?"), [closed, open_], NOW)
    assert ranked[0].candidate.version_id == "closed"


def test_a_settled_fact_that_is_no_matter_is_left_alone() -> None:
    # An order "completed" is not a matter that runs a course of complaint handling.
    order = matter("order", 0.7, "completed", age=timedelta(days=30), fact_type="order")
    case = matter("case", 0.5, "open", age=timedelta(days=3), fact_type="order")
    ranked = score_candidates(ask("what is the status of my order?"), [order, case], NOW)
    assert ranked[0].candidate.version_id == "order"


@settings(max_examples=300, deadline=None)
@given(
    settled_vector=st.floats(0.05, 1.0),
    open_vector=st.floats(0.05, 1.0),
    settled_age=st.integers(0, 400),
    open_age=st.integers(0, 400),
    settled_status=st.sampled_from(["resolved", "closed", "done", "completed", "refunded"]),
    open_status=st.sampled_from(["open", "pending", "new", "in_progress"]),
    fact_type=st.sampled_from(["complaint", "ticket", "support_case", "return", "refund"]),
    query=st.sampled_from(
        ["is my case still open?", "status of my complaint", "any update on my return?"]
    ),
)
def test_settled_never_above_a_comparably_relevant_open_matter(
    settled_vector: float,
    open_vector: float,
    settled_age: int,
    open_age: int,
    settled_status: str,
    open_status: str,
    fact_type: str,
    query: str,
) -> None:
    settled = matter(
        "s", settled_vector, settled_status, age=timedelta(days=settled_age), fact_type=fact_type
    )
    open_ = matter("o", open_vector, open_status, age=timedelta(days=open_age), fact_type=fact_type)
    ranked = score_candidates(ask(query), [settled, open_], NOW)
    by_id = {r.candidate.version_id: r for r in ranked}
    if by_id["o"].scores.fused >= RELEVANCE_SHARE * by_id["s"].scores.fused:
        assert ranked[0].candidate.version_id == "o"
        assert by_id["s"].scores.final <= YIELD_SHARE * by_id["o"].scores.final + 1e-12


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("what was wrong with my coffee grinder?", True),
        ("the issue with my last order", True),
        ("why did my kettle stop working? it stopped working twice", True),
        ("my jug arrived damaged", True),
        ("我的耳机出了什么问题", True),
        ("which grinder did I order?", False),
        ("what did I return last month?", False),
        ("is my case still open?", False),
    ],
)
def test_asks_about_a_problem(query: str, problem: bool) -> None:
    assert asks_about_a_problem(query) is problem


def test_the_complaint_answers_what_was_wrong_before_the_order_and_the_return() -> None:
    # The customer's three records of one grinder: equally relevant by text, and the order and
    # the return come from the ERP (authority 1.0, against ticketing's 0.85).
    order = matter("order", 0.58, "active", age=timedelta(days=9), fact_type="order", source="erp")
    ret = matter("return", 0.61, "active", age=timedelta(days=8), fact_type="return", source="erp")
    complaint = matter("complaint", 0.62, "active", age=timedelta(days=10), fact_type="complaint")
    request = ask("what was wrong with my coffee grinder?")
    ranked = score_candidates(request, [order, ret, complaint], NOW)
    assert ranked[0].candidate.version_id == "complaint"
    plain = score_candidates(ask("tell me about my coffee grinder"), [order, ret, complaint], NOW)
    assert plain[0].candidate.version_id != "complaint"  # the rule, not the scores, decided


def test_another_customers_complaint_does_not_cap_my_order() -> None:
    mine = matter("mine", 0.7, "active", age=timedelta(days=3), fact_type="order", source="erp")
    theirs = matter(
        "theirs", 0.6, "open", age=timedelta(days=3), anchor=Anchor("customer", "C-9"),
        fact_type="complaint",
    )  # fmt: skip
    request = RetrievalRequest(request_id="r", tenant_id="t", query="what went wrong? a problem")
    ranked = score_candidates(request, [mine, theirs], NOW)
    assert ranked[0].candidate.version_id == "mine"


@settings(max_examples=300, deadline=None)
@given(
    other_vector=st.floats(0.05, 1.0),
    problem_vector=st.floats(0.05, 1.0),
    other_age=st.integers(0, 400),
    problem_age=st.integers(0, 400),
    other_type=st.sampled_from(["order", "return", "page_view", "product_spec"]),
    problem_type=st.sampled_from(["complaint", "ticket", "support_case", "issue"]),
    source=st.sampled_from(["erp", "crm", "clickstream", "official"]),
)
def test_no_other_record_above_a_comparably_relevant_problem_record(
    other_vector: float,
    problem_vector: float,
    other_age: int,
    problem_age: int,
    other_type: str,
    problem_type: str,
    source: str,
) -> None:
    other = matter(
        "x", other_vector, "active", age=timedelta(days=other_age), fact_type=other_type,
        source=source,
    )  # fmt: skip
    problem = matter(
        "p", problem_vector, "resolved", age=timedelta(days=problem_age), fact_type=problem_type
    )
    ranked = score_candidates(ask("what was wrong with my blender?"), [other, problem], NOW)
    by_id = {r.candidate.version_id: r for r in ranked}
    if by_id["p"].scores.fused >= RELEVANCE_SHARE * by_id["x"].scores.fused:
        assert ranked[0].candidate.version_id == "p"
