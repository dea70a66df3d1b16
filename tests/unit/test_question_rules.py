"""What the question and its context say decides: the focus binds, the named attributes all count,
latest and earliest are questions of time — each rule a factor inside final."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.services.domain.decay import DEFAULT_DECAY
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, RetrievalRequest, ScoredResult
from memstream.services.domain.ranking import score_candidates
from memstream.services.domain.timely import ORDINAL_SHARE
from memstream.services.domain.yielding import RELEVANCE_SHARE

NOW = datetime(2026, 9, 20, 15, 0, tzinfo=UTC)
GUEST = Anchor("customer", "g-310")


def memory(
    vid: str,
    content: str,
    *,
    anchors: tuple[Anchor, ...] = (GUEST,),
    fact_type: str = "order",
    source: str = "erp",
    days: float = 3,
    vector: float = 0.5,
    keyword: float | None = None,
    attributes: Mapping[str, str] | None = None,
) -> Candidate:
    at = NOW - timedelta(days=days)
    primary = anchors[0] if anchors else Anchor("page", vid)
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
        status="active",
        occurred_at=at,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        is_current=True,
        attributes=dict(attributes or {}),
        vector_score=vector,
        keyword_score=keyword,
    )


def ask(
    query: str, *, focus: tuple[Anchor, ...] = (), user: Anchor | None = GUEST
) -> RetrievalRequest:
    return RetrievalRequest(
        request_id="r",
        tenant_id="t",
        query=query,
        user_id=user.id if user else None,
        anchors=(user,) if user else (),
        active_entities=focus,
    )


def ids(results: Sequence[ScoredResult]) -> list[str]:
    return [r.candidate.version_id for r in results]


# --- focus -----------------------------------------------------------------------------------

BOOKING_A = Anchor("booking", "BK-5501")
BOOKING_B = Anchor("booking", "BK-5502")


def transfers() -> list[Candidate]:
    """Two bookings of one guest, each with its airport transfer; B's is fresher and its text
    closer to the question."""
    return [
        memory(
            "bk-a",
            "Booking BK-5501: lake cabin, 3 nights.",
            anchors=(GUEST, BOOKING_A),
            days=9,
            vector=0.3,
        ),
        memory(
            "bk-b",
            "Booking BK-5502: city loft, 2 nights.",
            anchors=(GUEST, BOOKING_B),
            days=2,
            vector=0.3,
        ),
        memory(
            "tr-a",
            "Airport transfer for BK-5501 confirmed, driver meets you at arrivals.",
            anchors=(GUEST, BOOKING_A),
            fact_type="transfer",
            days=6,
            vector=0.41,
        ),
        memory(
            "tr-b",
            "Airport transfer booked: pickup 10:00, shuttle van.",
            anchors=(GUEST, BOOKING_B),
            fact_type="transfer",
            days=1,
            vector=0.55,
        ),
    ]


def test_the_booking_in_focus_answers_the_follow_up_without_its_number() -> None:
    for query in ("and the airport pickup?", "what about the transfer?", "那接机呢？"):
        without = score_candidates(ask(query), transfers(), NOW)
        assert ids(without)[0] == "tr-b"  # the fresher, closer transfer of the other booking
        focused = score_candidates(ask(query, focus=(BOOKING_A,)), transfers(), NOW)
        assert ids(focused)[0] == "tr-a", query
        first_other = min(ids(focused).index("tr-b"), ids(focused).index("bk-b"))
        assert ids(focused).index("tr-a") < first_other
        other = next(r for r in focused if r.candidate.version_id == "tr-b")
        assert "focus" in dict(other.factors)


def test_focus_binds_with_an_anaphor_as_well() -> None:
    ranked = score_candidates(ask("when does it pick me up?", focus=(BOOKING_A,)), transfers(), NOW)
    assert ids(ranked)[0] == "tr-a"


def test_a_memory_that_names_the_focus_only_in_its_text_is_about_it() -> None:
    pool = transfers()
    pool[2] = memory(
        "tr-a",
        "Airport transfer for BK-5501 confirmed, driver meets you at arrivals.",
        anchors=(GUEST,),
        fact_type="transfer",
        days=6,
        vector=0.41,
    )
    ranked = score_candidates(ask("and the airport pickup?", focus=(BOOKING_A,)), pool, NOW)
    assert ids(ranked)[0] == "tr-a"


def test_the_focus_excludes_another_entity_of_its_kind_unless_the_question_names_it() -> None:
    mug_a = Anchor("product", "MG-40")
    mug_b = Anchor("product", "MG-41")
    pool = [
        memory(
            "a",
            "MG-40 mug: 350 ml, dishwasher safe.",
            anchors=(mug_a,),
            fact_type="product_spec",
            source="catalog",
            vector=0.5,
        ),
        memory(
            "b",
            "MG-41 mug: 500 ml, hand wash only.",
            anchors=(mug_b,),
            fact_type="product_spec",
            source="catalog",
            vector=0.7,
        ),
    ]
    assert ids(
        score_candidates(ask("is it dishwasher safe?", focus=(mug_a,), user=None), pool, NOW)
    ) == ["a"]
    compared = score_candidates(ask("and the MG-41?", focus=(mug_a,), user=None), pool, NOW)
    assert set(ids(compared)) == {"a", "b"}


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.05, 1.0),
    st.floats(0.05, 1.0),
    st.integers(0, 400),
    st.integers(0, 400),
    st.sampled_from(["and the delivery?", "status?", "那物流呢？", "where is it now?"]),
)
def test_no_memory_of_another_booking_above_one_in_focus(
    focused_vector: float, other_vector: float, focused_days: int, other_days: int, query: str
) -> None:
    pool = [
        memory(
            "in",
            "Transfer booked.",
            anchors=(GUEST, BOOKING_A),
            days=focused_days,
            vector=focused_vector,
        ),
        memory(
            "out",
            "Transfer booked.",
            anchors=(GUEST, BOOKING_B),
            days=other_days,
            vector=other_vector,
        ),
    ]
    ranked = score_candidates(ask(query, focus=(BOOKING_A,)), pool, NOW)
    assert ids(ranked) == ["in", "out"]


def test_a_page_yields_to_the_focus_only_when_the_focus_is_comparably_relevant() -> None:
    page = memory(
        "faq",
        "Airport transfers run every hour from 6:00.",
        anchors=(),
        fact_type="faq",
        source="official",
        vector=0.9,
    )
    pool = [*transfers(), page]
    ranked = score_candidates(
        ask("when do airport transfers run?", focus=(BOOKING_A,), user=None), pool, NOW
    )
    by_id = {r.candidate.version_id: r for r in ranked}
    assert by_id["tr-a"].scores.fused < RELEVANCE_SHARE * by_id["faq"].scores.fused
    assert ids(ranked)[0] == "faq"


# --- attributes ------------------------------------------------------------------------------


def laptops() -> list[Candidate]:
    """Eight variants of one laptop line by colour, storage and port; the one with all three
    asked attributes is three weeks old and a little less similar than its fresher siblings."""
    variants = []
    exact = ("silver", "512GB", "Thunderbolt")
    for i, (colour, storage, port) in enumerate(
        (c, s, p)
        for c in ("silver", "graphite")
        for s in ("512GB", "1TB")
        for p in ("Thunderbolt", "HDMI")
    ):
        is_exact = (colour, storage, port) == exact
        variants.append(
            memory(
                f"v{i}",
                f"Aero 14 laptop, {colour}, {storage} SSD, {port} port.",
                anchors=(Anchor("sku", f"AE14-{i}"),),
                fact_type="catalog",
                source="catalog",
                days=21 if is_exact else 1,
                vector=0.70 if is_exact else 0.78,
                attributes={"colour": colour, "storage": storage, "port": port},
            )
        )
    return variants


def test_the_variant_with_every_named_attribute_beats_fresher_near_misses() -> None:
    for query in (
        "the silver Aero 14 with 512GB and Thunderbolt",
        "银色、512GB、带Thunderbolt接口的Aero 14",
    ):
        ranked = score_candidates(ask(query, user=None), laptops(), NOW)
        top = ranked[0]
        assert top.candidate.attributes == {
            "colour": "silver",
            "storage": "512GB",
            "port": "Thunderbolt",
        }, query
        assert all(
            r.scores.final < top.scores.final and "attributes" in dict(r.factors)
            for r in ranked[1:]
            if r.scores.fused <= 2 * top.scores.fused
        )


def test_attribute_values_a_catalogue_names_count_too() -> None:
    """Colours with a maker's names ("fjord", "ember"), found through the entries' attributes."""
    pool = [
        memory(
            f"p{i}",
            f"Nimbus 7 phone, {colour} finish, {storage}.",
            anchors=(Anchor("sku", f"NB7-{i}"),),
            fact_type="product_variant",
            source="catalog",
            days=25 if (colour, storage) == ("fjord", "128 GB") else 2,
            vector=0.66 if (colour, storage) == ("fjord", "128 GB") else 0.74,
            attributes={"finish": colour, "storage": storage},
        )
        for i, (colour, storage) in enumerate(
            (c, s) for c in ("fjord", "ember", "chalk") for s in ("128 GB", "256 GB")
        )
    ]
    ranked = score_candidates(ask("Nimbus 7 in fjord with 128GB", user=None), pool, NOW)
    assert ranked[0].candidate.attributes == {"finish": "fjord", "storage": "128 GB"}


def test_one_named_attribute_is_no_combination() -> None:
    """One colour named orders no combination among the variants of that colour; the variants
    stating another colour (graphite) yield to them."""
    ranked = score_candidates(ask("the silver Aero 14", user=None), laptops(), NOW)
    silver = [r for r in ranked if r.candidate.attributes["colour"] == "silver"]
    assert all("attributes" not in dict(r.factors) for r in silver)
    assert [r.candidate.attributes["colour"] for r in ranked] == ["silver"] * 4 + ["graphite"] * 4


def test_a_catalogue_entry_decays_slowly() -> None:
    for fact_type in ("catalog", "catalogue", "product", "product_variant", "sku", "product_spec"):
        assert DEFAULT_DECAY.half_life(fact_type) >= timedelta(days=365)
    three_weeks = [
        r
        for r in score_candidates(ask("Aero 14", user=None), laptops(), NOW)
        if r.candidate.occurred_at == NOW - timedelta(days=21)
    ]
    assert three_weeks[0].scores.recency > 0.95


# --- ordinals --------------------------------------------------------------------------------


def rentals() -> list[Candidate]:
    """A guest's three bike rentals; the oldest shares the most words with the questions, and a
    fresh parcel record shares none."""
    return [
        memory(
            "r-old",
            "Rented a red city bike, one day, returned on time.",
            fact_type="rental",
            days=400,
            vector=0.62,
        ),
        memory(
            "r-mid",
            "Rented a tandem bike for the weekend.",
            fact_type="rental",
            days=120,
            vector=0.45,
        ),
        memory(
            "r-new", "Rented an e-bike for two hours.", fact_type="rental", days=12, vector=0.38
        ),
        memory(
            "parcel",
            "Parcel 88-21 handed to the courier.",
            fact_type="shipment",
            days=1,
            vector=0.40,
        ),
    ]


def test_earliest_questions_put_the_first_memory_first() -> None:
    for query in (
        "which bike did I rent first?",
        "what was my earliest bike rental?",
        "我第一次租的是什么车",
    ):
        ranked = score_candidates(ask(query), rentals(), NOW)
        rental_order = [vid for vid in ids(ranked) if vid.startswith("r-")]
        assert rental_order == ["r-old", "r-mid", "r-new"], query


def test_latest_questions_put_the_last_memory_first_even_when_older_ones_fit_better() -> None:
    for query in (
        "which bike did I rent most recently?",
        "my last bike rental",
        "我上次租的自行车",
    ):
        ranked = score_candidates(ask(query), rentals(), NOW)
        assert ids(ranked)[0] == "r-new", query
        rental_order = [vid for vid in ids(ranked) if vid.startswith("r-")]
        assert rental_order == ["r-new", "r-mid", "r-old"], query


def test_a_fresh_record_without_a_word_of_the_question_does_not_answer_an_ordinal() -> None:
    ranked = score_candidates(ask("我上次租的自行车"), rentals(), NOW)
    assert ids(ranked).index("parcel") > ids(ranked).index("r-new")


def test_without_an_ordinal_relevance_and_decay_decide() -> None:
    ranked = score_candidates(ask("did I rent a red bike?"), rentals(), NOW)
    assert all("ordinal" not in dict(r.factors) for r in ranked)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.2, 1.0), st.integers(0, 2000)), min_size=2, max_size=6),
    st.sampled_from(
        [("first", "earliest"), ("latest", "latest"), ("最早", "earliest"), ("最近一次", "latest")]
    ),
)
def test_matching_memories_are_served_in_time_order(
    items: list[tuple[float, int]], phrase: tuple[str, str]
) -> None:
    """Property: in an ordinal question, the user's rentals at least a third as relevant as the
    most relevant one come in time order — oldest first for earliest, newest first for latest."""
    word, kind = phrase
    pool = [
        memory(f"r{i}", "Rented a bike.", fact_type="rental", days=d + i / 10, vector=v)
        for i, (v, d) in enumerate(items)
    ]
    ranked = score_candidates(ask(f"which bike did I rent {word}?"), pool, NOW)
    best = max(r.scores.fused for r in ranked)
    matching = [r for r in ranked if r.scores.fused >= ORDINAL_SHARE * best]
    times = [r.candidate.occurred_at for r in matching]
    assert times == sorted(times, reverse=kind == "latest")
