"""Decay: recency = exp(-ln2 * age / half_life), per fact type, per tenant."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.decay import DEFAULT_HALF_LIFE, DecayRules, recency
from memstream.services.domain.errors import DomainError

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)

ages = st.timedeltas(min_value=timedelta(days=-3650), max_value=timedelta(days=36500))
half_lives = st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=3650))


@given(age=ages, half_life=half_lives)
def test_recency_is_within_bounds(age: timedelta, half_life: timedelta) -> None:
    assert 0.0 <= recency(NOW - age, NOW, half_life) <= 1.0


@given(a=ages, b=ages, half_life=half_lives)
def test_recency_is_monotone_non_increasing_in_age(
    a: timedelta, b: timedelta, half_life: timedelta
) -> None:
    younger, older = sorted((a, b))
    assert recency(NOW - older, NOW, half_life) <= recency(NOW - younger, NOW, half_life)


@given(half_life=half_lives)
def test_one_half_life_gives_one_half(half_life: timedelta) -> None:
    assert recency(NOW - half_life, NOW, half_life) == pytest.approx(0.5)


def test_two_half_lives_give_a_quarter() -> None:
    assert recency(NOW - timedelta(days=14), NOW, timedelta(days=7)) == pytest.approx(0.25)


def test_matches_the_documented_formula() -> None:
    age, half_life = timedelta(days=10), timedelta(days=30)
    expected = math.exp(-math.log(2) * 10 / 30)
    assert recency(NOW - age, NOW, half_life) == pytest.approx(expected)


def test_now_and_future_give_one() -> None:
    assert recency(NOW, NOW, timedelta(days=1)) == 1.0
    assert recency(NOW + timedelta(days=3), NOW, timedelta(days=1)) == 1.0


def test_three_year_old_browsing_has_decayed_to_nothing() -> None:
    rules = DecayRules()
    old = recency(NOW - timedelta(days=3 * 365), NOW, rules.half_life("browsing"))
    last_week = recency(NOW - timedelta(days=7), NOW, rules.half_life("browsing"))
    assert old < 1e-9
    assert last_week > 0.8


def test_non_positive_half_life_is_refused() -> None:
    with pytest.raises(DomainError):
        recency(NOW, NOW, timedelta(0))
    with pytest.raises(DomainError, match="complaint"):
        DecayRules({"complaint": timedelta(days=-1)})


def test_default_table() -> None:
    rules = DecayRules()
    assert rules.half_life("complaint") == timedelta(days=7)
    assert rules.half_life("ticket") == timedelta(days=14)
    assert rules.half_life("order") == timedelta(days=90)
    assert rules.half_life("inventory") == timedelta(hours=6)
    assert rules.half_life("stock") == timedelta(hours=6)
    assert rules.half_life("official_doc") == timedelta(days=730)
    assert rules.half_life("Complaint") == timedelta(days=7)  # case-insensitive
    assert rules.half_life("something_new") == DEFAULT_HALF_LIFE == timedelta(days=90)


def test_inventory_decays_faster_than_specs() -> None:
    rules = DecayRules()
    day_old = NOW - timedelta(days=1)
    assert recency(day_old, NOW, rules.half_life("inventory")) < 0.1
    assert recency(day_old, NOW, rules.half_life("product_spec")) > 0.99


def test_tenant_override_merges_into_the_table() -> None:
    base = DecayRules()
    tenant = base.merged({"Complaint": timedelta(days=2)}, default=timedelta(days=30))
    assert tenant.half_life("complaint") == timedelta(days=2)
    assert tenant.half_life("order") == timedelta(days=90)  # untouched entries stay
    assert tenant.half_life("unlisted") == timedelta(days=30)
    assert base.half_life("complaint") == timedelta(days=7)  # the base is not changed
