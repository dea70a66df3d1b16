"""Kinds of record and fact a question names, statuses as sources spell them, compound fact
types and sources, anonymous records of the user's own kind, one memory's history: checked on
the whole pure read pipeline (``score_candidates``) — what a reply serves first, and that the
reply is still in the order of its own finals."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.authority import DEFAULT_AUTHORITY
from memstream.services.domain.decay import DEFAULT_DECAY
from memstream.services.domain.matters import named_states
from memstream.services.domain.model import Anchor
from memstream.services.domain.periods import read_period
from memstream.services.domain.query import Candidate, RetrievalRequest, ScoredResult
from memstream.services.domain.ranking import score_candidates
from memstream.services.domain.trust import DEFAULT_STATE_RULES, is_open_matter, status_of

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
USER = Anchor("customer", "C-7")


def memory(
    vid: str,
    content: str,
    at: datetime,
    *,
    fact_type: str = "order",
    source: str = "erp",
    vector: float = 0.5,
    status: str = "active",
    entity: Anchor = USER,
    anchors: tuple[Anchor, ...] | None = None,
    key: str | None = None,
    version: int = 1,
    valid_to: datetime | None = None,
) -> Candidate:
    return Candidate(
        version_id=vid,
        memory_key=key or vid,
        version=version,
        content=content,
        entity_type=entity.type,
        entity_id=entity.id,
        anchors=(entity,) if anchors is None else anchors,
        fact_type=fact_type,
        source_system=source,
        status=status,
        occurred_at=at,
        valid_from=at,
        valid_to=valid_to,
        recorded_at=at,
        is_current=valid_to is None,
        vector_score=vector,
        keyword_score=None,
    )


def ask(query: str, user: bool = True, focus: tuple[Anchor, ...] = ()) -> RetrievalRequest:
    return RetrievalRequest(
        request_id="r",
        tenant_id="t",
        query=query,
        user_id=USER.id if user else None,
        anchors=(USER,) if user else (),
        active_entities=focus,
        limit=10,
    )


def ids(results: list[ScoredResult]) -> list[str]:
    return [r.candidate.version_id for r in results]


def in_final_order(results: list[ScoredResult]) -> bool:
    finals = [r.scores.final for r in results]
    return finals == sorted(finals, reverse=True)


# --- compound names, spellings ---------------------------------------------------------------


def test_compound_fact_types_and_sources_take_their_parts_standing() -> None:
    assert DEFAULT_DECAY.half_life("product_price") == timedelta(days=14)
    assert DEFAULT_DECAY.half_life("stock_level") == timedelta(hours=6)
    assert DEFAULT_DECAY.half_life("spec_update") == timedelta(days=365)
    assert DEFAULT_DECAY.half_life("mystery") == DEFAULT_DECAY.default
    assert DEFAULT_AUTHORITY.authority("community_forum") == DEFAULT_AUTHORITY.authority("forum")
    assert DEFAULT_AUTHORITY.authority("erp_export") == DEFAULT_AUTHORITY.authority("erp")
    assert DEFAULT_AUTHORITY.authority("mystery") == DEFAULT_AUTHORITY.unknown


def test_statuses_as_sources_spell_them() -> None:
    for spelled in ("In Progress", "processing", "处理中", "in-progress"):
        assert status_of(spelled) == "in_progress", spelled
    assert status_of("已解决") == "resolved" and status_of("") == "active"
    old = NOW - timedelta(days=3)
    open_ticket = memory("t", "Ticket: refund not received.", old, fact_type="support_ticket",
                         status="Processing")  # fmt: skip
    assert is_open_matter(open_ticket, DEFAULT_STATE_RULES)
    [result] = score_candidates(ask("is my ticket still open?"), [open_ticket], NOW)
    assert result.effective_status == "escalated"  # an open matter past the delay


def test_a_delay_or_escalation_named_asks_for_the_escalated_matters() -> None:
    for query in ("which complaint has been open for more than 48 hours?", "哪个投诉超过48小时了",
                  "which ticket should be escalated?", "哪个工单该升级"):  # fmt: skip
        assert named_states(query) == frozenset({"escalated"}), query
    assert named_states("can I upgrade my plan?") == frozenset()
    pool = [
        memory("fresh", "Complaint: the lid cracked. Processing.", NOW - timedelta(hours=5),
               fact_type="complaint", source="ticketing", status="processing", vector=0.7),
        memory("late", "Complaint: the kettle leaks. Processing.", NOW - timedelta(days=4),
               fact_type="complaint", source="ticketing", status="processing", vector=0.5),
    ]  # fmt: skip
    ranked = score_candidates(ask("which complaint is open for more than 48 hours?"), pool, NOW)
    assert ids(ranked)[0] == "late" and in_final_order(ranked)


# --- kinds of record and fact ----------------------------------------------------------------


def test_the_users_note_yields_to_the_named_kind_whatever_its_relevance() -> None:
    pool = [
        memory("note", "Prefers delivery on weekday evenings.", NOW - timedelta(30),
               fact_type="preference", source="crm", vector=0.8),
        memory("order", "Order O-1: kettle, paid, ships 7 Dec.", NOW - timedelta(2), vector=0.3),
    ]  # fmt: skip
    ranked = score_candidates(ask("when does my order ship?"), pool, NOW)
    assert ids(ranked)[0] == "order" and in_final_order(ranked)
    # asked about the notes themselves, the note keeps its place
    kept = score_candidates(ask("what are my delivery preferences for orders?"), pool, NOW)
    assert ids(kept)[0] == "note"


def test_a_record_of_another_kind_yields_unless_the_order_is_named() -> None:
    pool = [
        memory("return", "Return R-9 for order O-1: kettle, label sent.", NOW - timedelta(2),
               fact_type="return", vector=0.7),
        memory("refund", "Refund for O-1: 39.00 EUR issued.", NOW - timedelta(3),
               fact_type="refund", source="billing", vector=0.4),
        memory("ship", "Shipment for order O-1: out for delivery.", NOW - timedelta(hours=5),
               fact_type="shipment", vector=0.75),
        memory("order", "Order O-1: kettle.", NOW - timedelta(9), vector=0.5),
    ]  # fmt: skip
    refund = score_candidates(ask("has my refund come through?"), pool, NOW)
    assert ids(refund)[0] == "refund" and in_final_order(refund)
    order = score_candidates(ask("where is my order?"), pool, NOW)
    assert ids(order)[0] == "ship"  # the order's shipment answers it: no rule moves it


def test_complaint_and_ticket_are_one_family_and_the_order_carries_its_delivery() -> None:
    ticket = [
        memory("ticket", "Ticket: the screen flickers; engineer assigned.", NOW - timedelta(2),
               fact_type="support_ticket", source="ticketing", vector=0.35),
        memory("view", "Viewed the screen protector page.", NOW - timedelta(1),
               fact_type="page_view", source="clickstream", vector=0.6),
    ]  # fmt: skip
    assert ids(score_candidates(ask("what happened with my complaint?"), ticket, NOW))[0] == (
        "ticket"
    )
    orders = [
        memory("order", "Order O-5: lamp, dispatch expected Friday.", NOW - timedelta(2),
               vector=0.3),
        memory("pref", "Likes parcels left with the neighbour.", NOW - timedelta(9),
               fact_type="profile", source="crm", vector=0.6),
    ]  # fmt: skip
    assert ids(score_candidates(ask("when will my parcel arrive?"), orders, NOW))[0] == "order"


def test_stock_and_price_questions_are_answered_by_those_records() -> None:
    product = Anchor("product", "AX-310")
    pool = [
        memory("spec", "AX-310 spec sheet: 256 GB, price on request, available in blue.",
               NOW - timedelta(40), fact_type="product_spec", source="catalog", entity=product,
               vector=0.7),
        memory("stock", "AX-310: 12 units in the Berlin warehouse.", NOW - timedelta(hours=2),
               fact_type="stock_level", source="erp", entity=product, vector=0.45),
        memory("price", "AX-310 now sells at 499 EUR.", NOW - timedelta(3),
               fact_type="price", source="erp", entity=product, vector=0.45),
    ]  # fmt: skip
    stock = score_candidates(ask("is the AX-310 in stock?", user=False), pool, NOW)
    assert ids(stock)[0] == "stock" and in_final_order(stock)
    price = score_candidates(ask("AX-310多少钱？", user=False), pool, NOW)
    assert ids(price)[0] == "price" and in_final_order(price)


def test_an_anonymous_record_of_the_users_own_kind_yields_to_the_users() -> None:
    pool = [
        memory("anon", "Page view: XR-7 headphones with active noise cancelling.",
               NOW - timedelta(2), fact_type="page_view", source="clickstream",
               entity=Anchor("product", "XR-7"), vector=0.8),
        memory("mine", "Viewed the BT-2 headphones.", NOW - timedelta(6), fact_type="page_view",
               source="clickstream", anchors=(USER, Anchor("product", "BT-2")), vector=0.3),
    ]  # fmt: skip
    ranked = score_candidates(ask("the headphones I looked at — do they cancel noise?"), pool, NOW)
    assert ids(ranked)[0] == "mine" and in_final_order(ranked)


def test_a_forum_source_is_commentary_whatever_it_files_the_post_as() -> None:
    product = Anchor("product", "X1")
    pool = [
        memory("forum", "X1 supports USB-C fast charging (user report).", NOW - timedelta(5),
               fact_type="product_spec", source="community_forum", entity=product, vector=0.8),
        memory("review", "Review of the X1: charges over Lightning only.", NOW - timedelta(4),
               fact_type="note", source="review_site", entity=Anchor("review", "RV-1"),
               anchors=(Anchor("review", "RV-1"), product), vector=0.75),
        memory("spec", "X1 official specification: Lightning port.", NOW - timedelta(400),
               fact_type="spec", source="official", entity=product, vector=0.6),
    ]  # fmt: skip
    ranked = score_candidates(ask("does the X1 support USB-C?", user=False), pool, NOW)
    assert ids(ranked)[0] == "spec" and in_final_order(ranked)
    said = score_candidates(ask("what do the forums say about the X1 port?", user=False), pool,
                            NOW)  # fmt: skip
    assert ids(said)[0] == "forum"


def test_the_original_version_answers_an_earliest_question() -> None:
    product = Anchor("product", "AX-310")
    first = memory(
        "v1",
        "AX-310 price: 599 EUR.",
        NOW - timedelta(300),
        fact_type="price",
        entity=product,
        key="p",
        vector=0.7,
        valid_to=NOW - timedelta(100),
    )
    second = memory(
        "v2",
        "AX-310 price: 549 EUR.",
        NOW - timedelta(100),
        fact_type="price",
        entity=product,
        key="p",
        version=2,
        vector=0.7,
        valid_to=NOW - timedelta(9),
    )
    third = memory("v3", "AX-310 price: 499 EUR.", NOW - timedelta(9), fact_type="price",
                   entity=product, key="p", version=3, vector=0.7)  # fmt: skip
    pool = [third, second, first]
    original = score_candidates(ask("what was the original price of the AX-310?", False), pool,
                                NOW)  # fmt: skip
    assert ids(original)[0] == "v1" and in_final_order(original)
    now = score_candidates(ask("what does the AX-310 cost?", False), pool, NOW)
    assert ids(now)[0] == "v3"


def test_the_latest_update_of_a_named_product_published_one_by_one() -> None:
    product = Anchor("product", "AX-310")
    updates = [
        memory(f"u{i}", f"AX-310 stock update: {n} units.", NOW - timedelta(days=d),
               fact_type="inventory_update", entity=product, vector=v)
        for i, (n, d, v) in enumerate(((40, 20, 0.8), (12, 9, 0.7), (3, 1, 0.5)))
    ]  # fmt: skip
    ranked = score_candidates(ask("latest stock of the AX-310?", False), updates, NOW)
    assert ids(ranked)[0] == "u2" and in_final_order(ranked)
    first = score_candidates(ask("AX-310 earliest stock update?", False), updates, NOW)
    assert ids(first)[0] == "u0"


def test_parts_of_a_year_are_periods() -> None:
    cases = {
        "the price in early 2024": ("2024-01-01", "2024-05-01"),
        "2024年初的价格": ("2024-01-01", "2024-04-01"),
        "the first half of 2025": ("2025-01-01", "2025-07-01"),
        "去年年底": ("2025-10-01", "2026-01-01"),
        "半年前的订单": ("2026-06-01", "2026-07-01"),
        "my May order": ("2026-05-01", "2026-06-01"),
    }
    for query, (start, end) in cases.items():
        period = read_period(query, NOW)
        assert period is not None, query
        assert (period.start.date().isoformat(), period.end.date().isoformat()) == (start, end)
    assert read_period("the 2023 model", NOW) is None


def test_a_chinese_product_word_finds_the_english_record_of_the_last_view() -> None:
    old = memory(
        "old",
        "Viewed: BT-2 earbuds, no active noise cancelling.",
        NOW - timedelta(900),
        fact_type="page_view",
        source="clickstream",
        vector=0.6,
    )
    new = memory(
        "new",
        "Viewed: QC-9 headphones.",
        NOW - timedelta(7),
        fact_type="page_view",
        source="clickstream",
        vector=0.3,
    )
    other = memory("kettle", "Viewed: steel kettle.", NOW - timedelta(1), fact_type="page_view",
                   source="clickstream", vector=0.28)  # fmt: skip
    ranked = score_candidates(ask("我上次看的耳机有降噪吗？"), [old, new, other], NOW)
    assert ids(ranked)[0] == "new" and in_final_order(ranked)


def test_chinese_only_similarity_is_narrowed_english_is_not() -> None:
    from memstream.services.domain.fusion import narrowed
    from memstream.services.domain.reading import read_question

    zh = read_question(ask("单子现在啥情况"), NOW)
    en = read_question(ask("how is my order doing"), NOW)
    assert zh.chinese_only and not en.chinese_only
    assert narrowed([0.7, 0.3], zh) == [0.6, 0.4]  # halfway to the mean
    assert narrowed([0.7, 0.3], en) == [0.7, 0.3]
    # a question naming no kind of record: only relevance and trust order these two
    pool = [
        memory("note", "客户档案：偏好微信联系。", NOW - timedelta(300), fact_type="profile",
               source="crm", vector=0.5),
        memory("status", "订单状态：已发出，运输中。", NOW - timedelta(hours=6),
               fact_type="order_status", source="oms", vector=0.35),
    ]  # fmt: skip
    ranked = score_candidates(ask("我的东西现在啥情况了"), pool, NOW)
    assert ids(ranked)[0] == "status" and in_final_order(ranked)  # the note's 0.15 is noise
    english = [dataclasses.replace(c, content="Profile: prefers chat.") for c in pool[:1]]
    english.append(dataclasses.replace(pool[1], content="Order status: shipped."))
    same_in_english = score_candidates(ask("what's going on with my stuff now?"), english, NOW)
    assert ids(same_in_english)[0] == "note"  # in English the encoder's similarity is kept


# --- the property: whatever the rules did, the reply is in the order of its finals -----------

_KINDS = ("order", "return", "refund", "shipment", "preference", "page_view", "price",
          "stock_level", "support_ticket", "complaint", "product_spec")  # fmt: skip
_SOURCES = ("erp", "crm", "community_forum", "official", "clickstream", "review_site")
_QUERIES = (
    "when does my order ship?", "has my refund come through?", "is it in stock?",
    "我的单子啥时候发", "which complaint is open for more than 48 hours?",
    "what was the original price?", "the headphones I looked at last time",
    "我上次看的耳机", "what did I buy in early 2025?", "how much is it?",
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_KINDS),
            st.sampled_from(_SOURCES),
            st.floats(0.0, 1.0),
            st.integers(0, 1500),
            st.booleans(),
            st.sampled_from(("active", "processing", "resolved", "处理中")),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(_QUERIES),
    st.booleans(),
)
def test_every_reply_is_in_the_order_of_its_finals(
    rows: list[tuple[str, str, float, int, bool, str]], query: str, user: bool
) -> None:
    pool = [
        memory(f"m{i}", f"{kind} record {i}", NOW - timedelta(days=age), fact_type=kind,
               source=source, vector=vector, status=status,
               anchors=(USER,) if mine else (Anchor("product", f"P-{i}"),),
               entity=USER if mine else Anchor("product", f"P-{i}"))
        for i, (kind, source, vector, age, mine, status) in enumerate(rows)
    ]  # fmt: skip
    ranked = score_candidates(ask(query, user), pool, NOW)
    assert in_final_order(ranked)
    for result in ranked:  # every factor a rule applied is in the reply, and explains its final
        product = 1.0
        for _, factor in result.factors:
            product *= factor
        assert 0.0 <= product <= 1.0 + 1e-9
        assert dataclasses.replace(result.scores).final <= 1.0 + 1e-9
