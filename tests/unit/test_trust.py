"""Trust components: authority, entity binding, state consistency, cross-validation, profile."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.authority import DEFAULT_AUTHORITY, UNKNOWN_AUTHORITY, AuthorityTable
from memstream.services.domain.errors import DomainError
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate
from memstream.services.domain.text import agreement, tokens
from memstream.services.domain.trust import (
    RECENCY_FLOOR,
    TRUST_FLOOR,
    StateRules,
    TrustComponents,
    TrustProfile,
    cross_validation,
    entity_binding,
    state_consistency,
    trust_score,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def candidate(
    version_id: str = "v1",
    *,
    memory_key: str | None = None,
    content: str = "XR-500 charges over USB-C in two hours.",
    entity: tuple[str, str] = ("product", "XR-500"),
    fact_type: str = "product_spec",
    source_system: str = "erp",
    status: str = "active",
    age: timedelta = timedelta(days=1),
    valid_to: datetime | None = None,
    attributes: Mapping[str, str] | None = None,
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
        recorded_at=occurred,
        is_current=valid_to is None,
        attributes=dict(attributes or {}),
    )


# --- authority -------------------------------------------------------------------------------


def test_authority_order_of_the_defaults() -> None:
    table = AuthorityTable()
    order = ["erp", "crm", "ticketing", "support_chat", "user_review", "forum"]
    values = [table.authority(source) for source in order]
    assert values == sorted(values, reverse=True)
    assert len(set(values)) == len(values)
    assert table.authority("official") > table.authority("forum")
    assert table.authority("clickstream") == 0.5
    assert table.authority("some_new_system") == 0.5
    assert table.authority("ERP") == table.authority("erp")


def test_authority_tenant_override() -> None:
    tenant = AuthorityTable().merged({"forum": 0.7})
    assert tenant.authority("forum") == 0.7
    assert tenant.authority("erp") == 1.0
    assert AuthorityTable().authority("forum") == 0.3


def test_authority_out_of_range_is_refused() -> None:
    with pytest.raises(DomainError, match="forum"):
        AuthorityTable({"forum": 1.5})


# --- binding ---------------------------------------------------------------------------------

C17 = Anchor("customer", "C-17")


def test_binding_exact_on_a_shared_anchor() -> None:
    assert entity_binding([Anchor("customer", "C-17")], [C17]) == ("exact", 1.0)
    assert entity_binding([Anchor("user", "C-17")], [C17]).kind == "exact"  # user = customer
    assert entity_binding([Anchor("Customer", "C-17")], [C17]).kind == "exact"


def test_binding_fuzzy_on_case_and_punctuation() -> None:
    assert entity_binding([Anchor("order", "ORD-2024-17")], [Anchor("order", "ord202417")]) == (
        "fuzzy",
        0.5,
    )


def test_binding_fuzzy_on_a_one_letter_typo_of_the_same_type() -> None:
    binding = entity_binding(
        [Anchor("customer", "alice.smyth")], [Anchor("customer", "alice.smith")]
    )
    assert binding.kind == "fuzzy"


def test_binding_none_for_another_customer() -> None:
    # One digit apart is another customer, not a typo.
    assert entity_binding([Anchor("customer", "C-18")], [C17]) == ("none", 0.0)
    assert entity_binding([Anchor("customer", "C-1017")], [Anchor("customer", "C-1018")]).kind == (
        "none"
    )


def test_binding_neutral_when_there_is_nothing_to_bind_to() -> None:
    assert entity_binding([Anchor("product", "XR-500")], []) == ("neutral", 0.5)
    # A product manual is about something else, not about someone else.
    assert entity_binding([Anchor("product", "XR-500")], [C17]) == ("neutral", 0.5)


def test_binding_exact_wins_over_a_mismatch_elsewhere() -> None:
    both = [Anchor("customer", "C-18"), Anchor("product", "XR-500")]
    assert entity_binding(both, [C17, Anchor("product", "XR-500")]).kind == "exact"


# --- state -----------------------------------------------------------------------------------


def test_pending_complaint_older_than_48h_is_escalated() -> None:
    old = candidate(fact_type="complaint", status="pending", age=timedelta(hours=49))
    young = candidate(fact_type="complaint", status="pending", age=timedelta(hours=47))
    assert state_consistency(old, NOW, StateRules()) == ("escalated", 0.9)
    assert state_consistency(young, NOW, StateRules()) == ("pending", 1.0)


def test_escalation_follows_the_clock_passed_in() -> None:
    ticket = candidate(fact_type="ticket", status="open", age=timedelta(hours=1))
    later = NOW + timedelta(days=3)
    assert state_consistency(ticket, NOW, StateRules()).effective_status == "open"
    assert state_consistency(ticket, later, StateRules()).effective_status == "escalated"


def test_escalation_delay_is_a_rule() -> None:
    complaint = candidate(fact_type="complaint", status="pending", age=timedelta(hours=30))
    rules = StateRules(escalate_after=timedelta(hours=24))
    assert state_consistency(complaint, NOW, rules).effective_status == "escalated"


def test_pending_order_does_not_escalate() -> None:
    order = candidate(fact_type="order", status="pending", age=timedelta(days=5))
    assert state_consistency(order, NOW, StateRules()) == ("pending", 1.0)


def test_settled_retracted_superseded_and_flagged_states() -> None:
    rules = StateRules()
    resolved = candidate(fact_type="complaint", status="resolved", age=timedelta(days=30))
    retracted = candidate(status="retracted")
    superseded = candidate(valid_to=NOW - timedelta(hours=1))
    risky = candidate(fact_type="order", status="high_risk")
    archived = candidate(status="archived")
    assert state_consistency(resolved, NOW, rules) == ("resolved", 0.8)
    assert state_consistency(retracted, NOW, rules) == ("retracted", 0.0)
    assert state_consistency(superseded, NOW, rules) == ("superseded", 0.2)
    assert state_consistency(risky, NOW, rules) == ("high_risk", 0.9)
    assert state_consistency(archived, NOW, rules) == ("archived", 0.4)
    assert state_consistency(candidate(status="weird"), NOW, rules) == ("weird", 0.6)
    # Still valid at `now` although a later version exists afterwards: not superseded yet.
    future_end = candidate(valid_to=NOW + timedelta(days=1))
    assert state_consistency(future_end, NOW, rules) == ("active", 1.0)


def test_open_matter_scores_above_settled_one() -> None:
    rules = StateRules()
    open_ = state_consistency(candidate(fact_type="complaint", status="open"), NOW, rules)
    settled = state_consistency(candidate(fact_type="complaint", status="resolved"), NOW, rules)
    assert open_.score > settled.score


# --- cross-validation ------------------------------------------------------------------------


def test_a_single_source_is_neutral() -> None:
    alone = candidate("a")
    assert cross_validation(alone, [alone]) == 0.5


def test_two_and_three_agreeing_sources_boost() -> None:
    erp = candidate("a", source_system="erp", attributes={"port": "USB-C"})
    catalog = candidate("b", source_system="catalog", attributes={"port": "usb-c"})
    crm = candidate("c", source_system="crm", content="The XR-500 charges over USB-C in two hours.")
    assert cross_validation(erp, [erp, catalog]) == 0.85
    assert cross_validation(erp, [erp, catalog, crm]) == 1.0


def test_same_source_twice_is_not_independent() -> None:
    first = candidate("a", source_system="erp")
    second = candidate("b", source_system="erp")
    assert cross_validation(first, [first, second]) == 0.5


def test_disagreeing_or_unrelated_memories_do_not_corroborate() -> None:
    erp = candidate("a", source_system="erp", attributes={"port": "USB-C"})
    clash = candidate("b", source_system="forum", attributes={"port": "micro-USB"})
    other_product = candidate("c", source_system="catalog", entity=("product", "XR-600"))
    other_fact = candidate("d", source_system="catalog", fact_type="price")
    unrelated = candidate("e", source_system="crm", content="Shipping to Norway takes a week.")
    version = candidate("f", memory_key="key-a", source_system="catalog")
    others = [erp, clash, other_product, other_fact, unrelated, version]
    assert cross_validation(erp, others) == 0.5


def test_token_overlap_handles_chinese() -> None:
    assert tokens("XR-500 支持 USB-C") == {"xr-500", "支", "持", "usb-c"}
    assert agreement("XR-500 battery lasts 10 hours", "XR-500 battery lasts 10 hours") == 1.0
    assert agreement("退货已完成", "退货已完成") == 1.0
    assert agreement("red shoes", "blue hat") == 0.0


# --- trust score -----------------------------------------------------------------------------

unit = st.floats(min_value=0.0, max_value=1.0)
components = st.builds(TrustComponents, unit, unit, unit, unit, unit)
profiles = st.builds(
    TrustProfile,
    authority=st.floats(0.01, 5),
    recency=st.floats(0, 5),
    binding=st.floats(0, 5),
    state=st.floats(0, 5),
    cross_validation=st.floats(0, 5),
    alpha=unit,
)


@given(parts=components, profile=profiles)
def test_trust_score_is_within_bounds(parts: TrustComponents, profile: TrustProfile) -> None:
    assert 0.0 <= trust_score(parts, profile) <= 1.0


@given(parts=components, bump=unit)
def test_trust_score_is_monotone_in_authority(parts: TrustComponents, bump: float) -> None:
    higher = TrustComponents(
        min(1.0, parts.authority + bump),
        parts.recency,
        parts.binding,
        parts.state,
        parts.cross_validation,
    )
    assert trust_score(higher) >= trust_score(parts) - 1e-12


def test_trust_score_extremes_and_weights() -> None:
    assert trust_score(TrustComponents(1, 1, 1, 1, 1)) == pytest.approx(1.0)
    # every component at its floor; recency's floor is far lower (decay keeps deciding)
    floors = TRUST_FLOOR**0.8 * RECENCY_FLOOR**0.2
    assert trust_score(TrustComponents(0, 0, 0, 0, 0)) == pytest.approx(floors)
    only_authority = TrustProfile(1, 0, 0, 0, 0)
    assert trust_score(TrustComponents(0.3, 1, 1, 1, 1), only_authority) == pytest.approx(0.3)
    # default: weighted geometric mean, authority .30, recency .20, binding .25, state .15, cv .10
    value = trust_score(TrustComponents(1.0, 0.5, 0.0, 1.0, 0.5))
    assert value == pytest.approx(0.5**0.20 * TRUST_FLOOR**0.25 * 0.5**0.10)


def test_one_failed_component_is_not_bought_back_by_the_others() -> None:
    stale = trust_score(TrustComponents(0.85, 0.003, 1.0, 0.8, 0.5))
    fresh = trust_score(TrustComponents(0.85, 0.673, 1.0, 0.9, 0.5))
    assert stale < 0.5 * fresh


def test_invalid_profiles_are_refused() -> None:
    with pytest.raises(DomainError):
        TrustProfile(authority=-1)
    with pytest.raises(DomainError):
        TrustProfile(0, 0, 0, 0, 0)
    with pytest.raises(DomainError):
        TrustProfile(alpha=1.5)


def test_open_matters_are_unresolved_complaint_like_memories() -> None:
    from memstream.services.domain.trust import DEFAULT_STATE_RULES, is_open_matter

    def matter(fact_type: str, status: str) -> bool:
        c = candidate(fact_type=fact_type, status=status)
        return is_open_matter(c, DEFAULT_STATE_RULES)

    assert matter("complaint", "pending") and matter("ticket", "open")
    assert matter("complaint", "active"), "a complaint that is simply active is still open"
    assert not matter("complaint", "resolved")
    assert not matter("return", "active"), "an active return is a fact, not an open matter"
    assert not matter("page_view", "pending")


def test_the_default_authorities_keep_the_ladders_a_support_team_ranks_by() -> None:
    table = DEFAULT_AUTHORITY
    ladders = [
        ("erp", "crm", "chat_log", "forum"),
        ("official_document", "press_release", "user_review"),
        ("crm", "wiki", "user_input", "third_party"),
    ]
    for ladder in ladders:
        standings = [table.authority(source) for source in ladder]
        assert standings == sorted(standings, reverse=True) and len(set(standings)) == len(ladder)
    assert table.authority("Catalogue") == table.authority("catalog")
    assert table.authority("a-source-nobody-named") == UNKNOWN_AUTHORITY
