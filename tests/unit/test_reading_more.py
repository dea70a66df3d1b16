"""Property tests over the whole ranking (``score_candidates``) for what a question reads beyond
its words: colours a maker names, attributes written together, a whereabouts follow-up, a matter
picked by its being open, a period with an entity in focus, a launch document a later record
superseded, and an ordinal over the kind of record a verb names ("what did I buy last?")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.attributes import attributes_in
from memstream.services.domain.colours import COLOURS, EN_NAMES, colours_in
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, RetrievalRequest, ScoredResult
from memstream.services.domain.ranking import score_candidates

NOW = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
ME = Anchor("customer", "c-1")


def memory(
    vid: str,
    content: str,
    *,
    at: datetime,
    anchors: tuple[Anchor, ...] = (ME,),
    fact_type: str = "order",
    source: str = "erp",
    vector: float = 0.5,
    status: str = "active",
    attributes: Mapping[str, str] | None = None,
) -> Candidate:
    primary = anchors[0]
    return Candidate(
        version_id=vid,
        memory_key=vid,
        version=1,
        content=content,
        entity_type=primary.type,
        entity_id=primary.id,
        anchors=anchors,
        fact_type=fact_type,
        source_system=source,
        status=status,
        occurred_at=at,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        is_current=True,
        attributes=dict(attributes or {}),
        vector_score=vector,
        keyword_score=None,
    )


def ask(
    query: str, *, user: Anchor | None = ME, focus: tuple[Anchor, ...] = ()
) -> RetrievalRequest:
    return RetrievalRequest(
        request_id="r",
        tenant_id="t",
        query=query,
        user_id=user.id if user else None,
        anchors=(user,) if user else (),
        active_entities=focus,
    )


def first(results: Sequence[ScoredResult]) -> str:
    return results[0].candidate.version_id


def served_in_final_order(results: Sequence[ScoredResult]) -> bool:
    finals = [r.scores.final for r in results]
    return finals == sorted(finals, reverse=True)


vectors = st.floats(0.05, 1.0)
ages = st.floats(0.0, 900.0)
COLOUR_NAMES = sorted(c for c in COLOURS if c in EN_NAMES)  # read alone in English


@given(
    st.sampled_from(COLOUR_NAMES),
    st.sampled_from(COLOUR_NAMES),
    st.booleans(),
    st.booleans(),
)
def test_a_colour_reads_the_same_in_either_language(
    asked: str, other: str, zh_question: bool, zh_record: bool
) -> None:
    """Property: a colour and its Chinese name read as one colour; two colours never as one."""
    name = COLOURS[asked][0] if zh_question else asked
    said = COLOURS[other][0] if zh_record else other
    assert asked in colours_in(name)
    assert (colours_in(name) & colours_in(said) != frozenset()) == (asked == other)


@given(
    st.sampled_from(COLOUR_NAMES),
    st.sampled_from(COLOUR_NAMES),
    st.booleans(),
    vectors,
    vectors,
    ages,
    ages,
)
@settings(max_examples=150)
def test_the_variant_of_another_colour_never_answers_a_colour_asked(
    asked: str,
    other: str,
    zh: bool,
    right_vector: float,
    other_vector: float,
    right_age: float,
    other_age: float,
) -> None:
    """Property: "is the Pavo HC27 in <colour> in stock?" — the stock of the variant in another
    colour never ranks above the variant in that colour, however fresher or closer it is."""
    if asked == other or right_vector < other_vector / 2:
        return  # variants' texts differ by one word: as relevant within a factor of two
    colour = COLOURS[asked][0] if zh else asked
    query = f"Pavo HC27 {colour} 还有货吗" if zh else f"is the Pavo HC27 in {colour} in stock?"
    pool = [
        memory(
            f"{name}-stock",
            f"Nanjing warehouse, Pavo HC27 {name}: {n} units in stock.",
            at=NOW - timedelta(days=age),
            anchors=(Anchor("sku", f"HC27-{name}"),),
            fact_type="stock",
            source="erp",
            vector=vector,
        )
        for name, n, vector, age in (
            (asked, 3, right_vector, right_age),
            (other, 40, other_vector, other_age),
        )
    ]
    ranked = score_candidates(ask(query, user=None), pool, NOW)
    assert first(ranked) == f"{asked}-stock"
    assert served_in_final_order(ranked)


@given(
    st.sampled_from(["白色", "黑色", "沙色", "午夜蓝", "石墨黑"]),
    st.sampled_from(["USB-C", "micro-USB", "Lightning"]),
    st.sampled_from(["10000mAh", "20000mAh", "128G", "256GB", "165Hz"]),
    st.permutations([0, 1, 2]),
)
def test_attributes_written_together_read_as_written_apart(
    colour: str, port: str, quantity: str, order: list[int]
) -> None:
    """Property: "白色micro-USB30000mAh" names what "白色 / micro-USB / 30000mAh" names, in any
    order."""
    parts = [colour, port, quantity]
    glued = "我要" + "".join(parts[i] for i in order) + "那款"
    apart = "（" + "/".join(parts) + "）"
    assert attributes_in(glued) == attributes_in(apart)
    assert len(attributes_in(apart)) == 3


@given(vectors, vectors, ages, ages, st.sampled_from(["where is it now?", "where are they?"]))
def test_a_whereabouts_follow_up_is_answered_by_the_focused_shipment(
    order_vector: float, ship_vector: float, order_age: float, ship_age: float, query: str
) -> None:
    """Property: with an order in focus, "where is it now?" is answered by its shipment record,
    not by the order record, whatever their similarity and age."""
    order = Anchor("order", "O-1")
    pool = [
        memory(
            "order",
            "Order O-1: desk lamp, paid.",
            at=NOW - timedelta(days=order_age),
            anchors=(order, ME),
            vector=order_vector,
        ),
        memory(
            "shipment",
            "Order O-1 shipment: DHL tracking 123, in transit via Milan.",
            at=NOW - timedelta(days=ship_age),
            anchors=(order, ME),
            fact_type="shipment",
            vector=ship_vector,
        ),
    ]
    ranked = score_candidates(ask(query, focus=(order,)), pool, NOW)
    assert first(ranked) == "shipment"


@given(
    vectors,
    vectors,
    ages,
    ages,
    st.sampled_from(
        [
            "where do we stand on the case that hasn't been closed?",
            "my unresolved complaint about the charger",
            "那个未解决的投诉怎么样了",
        ]
    ),
)
def test_a_matter_picked_by_being_open_is_the_open_one(
    open_vector: float, closed_vector: float, open_age: float, closed_age: float, query: str
) -> None:
    """Property: a question that picks a matter by its being open is answered by the open
    complaint, not by the settled one, whatever their similarity and age."""
    pool = [
        memory(
            vid,
            f"Ticket {vid}: charger overheating; {what}.",
            at=NOW - timedelta(days=age),
            anchors=(Anchor("complaint", vid), ME),
            fact_type="complaint",
            source="ticketing",
            status=status,
            vector=vector,
        )
        for vid, what, status, vector, age in (
            ("CS-1", "investigating", "open", open_vector, open_age),
            ("CS-2", "refund issued, case closed", "resolved", closed_vector, closed_age),
        )
    ]
    ranked = score_candidates(ask(query), pool, NOW)
    assert first(ranked) == "CS-1"


@given(
    st.lists(vectors, min_size=4, max_size=4),
    st.integers(0, 3),
    st.sampled_from(
        [
            "what was done on it in {en}?",
            "and the service it got in {en}?",
            "它{zh}做了什么保养？",
        ]
    ),
)
def test_a_period_with_an_entity_in_focus_picks_its_record_of_then(
    vecs: list[float], asked: int, template: str
) -> None:
    """Property: with a device in focus, a question naming a month is answered by the device's
    record of that month — not by another month's record that repeats more words, nor by a
    notice outside the focus."""
    device = Anchor("device", "SN-1")
    months = [(2026, 1), (2026, 4), (2026, 7), (2026, 9)]
    pool = [
        memory(
            f"m{i}",
            f"Maintenance log SN-1: {'descaled done' if i % 2 else 'annual inspection'}.",
            at=datetime(y, m, 12, tzinfo=UTC),
            anchors=(device, ME),
            fact_type="maintenance",
            source="crm",
            vector=vecs[i],
        )
        for i, (y, m) in enumerate(months)
    ]
    pool.append(
        memory(
            "notice",
            "Customer service hours: 9:00-21:00.",
            at=datetime(2026, 3, 1, tzinfo=UTC),
            anchors=(Anchor("document", "kb-1"),),
            fact_type="notice",
            source="kb",
            vector=max(vecs) + 0.2,
        )
    )
    y, m = months[asked]
    names = ["January", "April", "July", "September"]
    query = template.format(en=f"{names[asked]} {y}", zh=f"{y}年{m}月")
    ranked = score_candidates(ask(query, focus=(device,)), pool, NOW)
    assert first(ranked) == f"m{asked}"
    assert served_in_final_order(ranked)


@given(
    vectors,
    vectors,
    st.sampled_from(
        [
            ("maximum charging power: 30 W", "maximum charging power: 67 W", "30 W"),
            ("charges through its Lightning port", "charging port: USB-C", "Lightning"),
            ("covered by a 3-year warranty", "warranty: 5 years from purchase", "3 years"),
            ("保修期：自购买之日起 4 年", "享受 5 年厂家质保", "4 年质保"),
        ]
    ),
)
def test_a_launch_datasheet_yields_to_the_later_record_that_replaced_it(
    doc_vector: float, record_vector: float, claims: tuple[str, str, str]
) -> None:
    """Property: a launch datasheet that states an aspect of a product with another value than a
    later record of the product never ranks above it, even when the question repeats the
    datasheet's value."""
    old, new, asked = claims
    product = Anchor("product", "P-1")
    pool = [
        memory(
            "datasheet",
            f"2025 launch datasheet: the Lumo 54 {old}.",
            at=NOW - timedelta(days=300),
            anchors=(product,),
            fact_type="datasheet",
            source="catalog",
            vector=doc_vector,
        ),
        memory(
            "spec",
            f"Lumo 54 {new}.",
            at=NOW - timedelta(days=20),
            anchors=(product,),
            fact_type="spec",
            source="catalog",
            vector=record_vector,
        ),
    ]
    ranked = score_candidates(ask(f"does the Lumo 54 have {asked}?", user=None), pool, NOW)
    assert first(ranked) == "spec"
    assert "datasheet" in ranked[0].conflicts_with


@given(
    st.lists(
        st.tuples(vectors, st.floats(1.0, 600.0)), min_size=2, max_size=5, unique_by=lambda t: t[1]
    ),
    vectors,
    st.sampled_from([("what did I buy last time?", "latest"), ("我上次买了什么？", "latest"),
                     ("what was the first thing I bought?", "earliest"),
                     ("我第一次买的是什么？", "earliest")]),
)  # fmt: skip
def test_an_ordinal_over_what_was_bought_orders_the_orders(
    orders: list[tuple[float, float]], note_vector: float, phrase: tuple[str, str]
) -> None:
    """Property: "what did I buy last?" ranks first the latest order (earliest for "first"),
    never the asker's note however similar it is."""
    query, end = phrase
    pool = [  # one kind of record under two fact types (an ERP's orders, a shop's purchases)
        memory(
            f"o{i}",
            f"Order O-{i}: item {i}, paid.",
            at=NOW - timedelta(days=age),
            vector=v,
            fact_type="purchase" if i % 2 else "order",
        )
        for i, (v, age) in enumerate(orders)
    ]
    pool.append(
        memory(
            "note",
            "Prefers invoices made out to a person.",
            at=NOW - timedelta(days=5),
            fact_type="preference",
            source="crm",
            vector=note_vector,
        )
    )
    ranked = score_candidates(ask(query), pool, NOW)
    relevant = [c for c in pool[:-1]]
    pick = (max if end == "latest" else min)(relevant, key=lambda c: c.occurred_at)
    top = ranked[0].candidate
    assert top.fact_type in ("order", "purchase")
    if all(v >= max(o[0] for o in orders) / 3 for v, _ in orders):
        assert top.version_id == pick.version_id
