"""Arbitration: conflicts on the same entity + fact, settled by authority then recency."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest

from memstream.services.domain.arbitration import ArbitrationRules, arbitrate, disagree
from memstream.services.domain.authority import AuthorityTable
from memstream.services.domain.errors import DomainError
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, ScoredResult, Scores

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
AUTHORITY = AuthorityTable()


def candidate(
    version_id: str,
    *,
    content: str = "The XR-500 charges over USB-C.",
    entity: tuple[str, str] = ("product", "XR-500"),
    fact_type: str = "product_spec",
    source_system: str = "erp",
    age: timedelta = timedelta(days=1),
    attributes: Mapping[str, str] | None = None,
    memory_key: str | None = None,
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
        status="active",
        occurred_at=occurred,
        valid_from=occurred,
        valid_to=None,
        recorded_at=occurred,
        is_current=True,
        attributes=dict(attributes or {}),
    )


def result(c: Candidate, final: float = 0.8) -> ScoredResult:
    return ScoredResult(candidate=c, scores=Scores(final=final), effective_status="active")


def by_id(results: list[ScoredResult]) -> dict[str, ScoredResult]:
    return {r.candidate.version_id: r for r in results}


def test_attribute_conflict_is_won_by_authority_and_reported_both_ways() -> None:
    erp = result(candidate("erp", attributes={"port": "USB-C"}, age=timedelta(days=300)), 0.6)
    forum = result(candidate("forum", source_system="forum", attributes={"port": "micro-USB"}), 0.9)
    out = by_id(arbitrate([forum, erp], AUTHORITY))
    assert out["erp"].conflicts_with == ("forum",)
    assert out["forum"].conflicts_with == ("erp",)
    assert out["erp"].scores.final == pytest.approx(0.6)  # the winner keeps its score
    assert out["forum"].scores.final == pytest.approx(0.45)  # the loser is halved


def test_equal_authority_is_won_by_recency() -> None:
    assert AUTHORITY.authority("catalog") == AUTHORITY.authority("official")
    old = result(
        candidate(
            "old", source_system="catalog", attributes={"price": "199"}, age=timedelta(days=30)
        )
    )
    new = result(
        candidate(
            "new", source_system="official", attributes={"price": "179"}, age=timedelta(days=1)
        )
    )
    out = by_id(arbitrate([old, new], AUTHORITY))
    assert out["new"].scores.final == pytest.approx(0.8)
    assert out["old"].scores.final == pytest.approx(0.4)


def test_one_systems_records_never_conflict() -> None:
    red = result(candidate("red", attributes={"colour": "red"}))
    black = result(candidate("black", attributes={"colour": "black"}))
    out = by_id(arbitrate([red, black], AUTHORITY))
    assert out["red"] == red and out["black"] == black


def test_order_is_preserved_and_untouched_results_stay_identical() -> None:
    a = result(candidate("a", attributes={"port": "USB-C"}))
    b = result(candidate("b", entity=("product", "XR-600"), attributes={"port": "HDMI"}))
    out = arbitrate([b, a], AUTHORITY)
    assert out == [b, a]


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # another entity
        (
            candidate("a", attributes={"port": "USB-C"}),
            candidate("b", entity=("product", "XR-600"), attributes={"port": "HDMI"}),
        ),
        # another fact type
        (
            candidate("a", attributes={"port": "USB-C"}),
            candidate("b", fact_type="review", attributes={"port": "HDMI"}),
        ),
        # two versions of one memory are supersession, not conflict
        (
            candidate("a", memory_key="m", attributes={"port": "USB-C"}),
            candidate("b", memory_key="m", attributes={"port": "HDMI"}),
        ),
        # two different orders of one customer
        (
            candidate(
                "a",
                entity=("customer", "C-17"),
                fact_type="order",
                attributes={"order_id": "O-1", "status": "shipped"},
            ),
            candidate(
                "b",
                entity=("customer", "C-17"),
                fact_type="order",
                attributes={"order_id": "O-2", "status": "pending"},
            ),
        ),
    ],
)
def test_no_conflict_across_subjects_versions_or_matters(left: Candidate, right: Candidate) -> None:
    out = arbitrate([result(left), result(right)], AUTHORITY)
    assert all(r.conflicts_with == () for r in out)
    assert all(r.scores.final == 0.8 for r in out)


def test_disagree_rules() -> None:
    spec = "product_spec"
    # agreeing shared attribute (case/space-insensitive)
    assert not disagree(
        candidate("a", attributes={"port": "USB-C"}), candidate("b", attributes={"port": "usb-c "})
    )
    # different aspects: attributes with no key in common
    assert not disagree(
        candidate("a", attributes={"weight": "1.2 kg"}),
        candidate("b", attributes={"battery": "10 h"}),
    )
    # single-valued fact, wording with little overlap
    assert disagree(
        candidate("a", content="The XR-500 charges over USB-C.", fact_type=spec),
        candidate("b", content="Micro-USB only, sadly, no fast charging", fact_type=spec),
    )
    # single-valued fact, same wording, different figures
    assert disagree(
        candidate("a", content="XR-500 battery lasts 10 hours", fact_type=spec),
        candidate("b", content="XR-500 battery lasts 4 hours", fact_type=spec),
    )
    # the same statement twice
    assert not disagree(
        candidate("a", content="XR-500 battery lasts 10 hours", fact_type=spec),
        candidate("b", content="The XR-500 battery lasts 10 hours", fact_type=spec),
    )
    # accumulating facts: two different complaints are both true
    assert not disagree(
        candidate("a", content="Parcel arrived damaged", fact_type="complaint"),
        candidate("b", content="Refund has not arrived", fact_type="complaint"),
    )


def test_a_loser_is_demoted_once_even_when_it_loses_twice() -> None:
    erp = result(candidate("erp", source_system="erp", attributes={"port": "USB-C"}))
    crm = result(candidate("crm", source_system="crm", attributes={"port": "USB-C"}))
    forum = result(candidate("forum", source_system="forum", attributes={"port": "HDMI"}), 0.9)
    out = by_id(arbitrate([erp, crm, forum], AUTHORITY))
    assert out["forum"].conflicts_with == ("erp", "crm")
    assert out["forum"].scores.final == pytest.approx(0.45)
    assert out["erp"].conflicts_with == ("forum",)
    assert out["crm"].conflicts_with == ("forum",)
    assert out["erp"].scores.final == out["crm"].scores.final == 0.8


def test_tenant_authority_and_demotion_factor() -> None:
    forum_first = AUTHORITY.merged({"forum": 1.0, "erp": 0.2})
    erp = result(candidate("erp", attributes={"port": "USB-C"}))
    forum = result(candidate("forum", source_system="forum", attributes={"port": "HDMI"}))
    out = by_id(arbitrate([erp, forum], forum_first, ArbitrationRules(demotion=0.1)))
    assert out["forum"].scores.final == pytest.approx(0.8)
    assert out["erp"].scores.final == pytest.approx(0.08)
    with pytest.raises(DomainError):
        ArbitrationRules(demotion=1.5)


def test_commentary_that_contradicts_a_record_loses_to_it() -> None:
    from memstream.services.domain.arbitration import quantity_clash

    assert quantity_clash("easily lasts 20 hours", "battery life: up to 12 hours")
    assert not quantity_clash("lasts 12 hours, as promised", "up to 12 hours")
    assert not quantity_clash("great sound", "up to 12 hours")
    review = result(
        candidate(
            "review",
            source_system="user_review",
            fact_type="review",
            content="The battery easily lasts 20 hours!",
        ),
        0.9,
    )
    spec = result(
        candidate(
            "spec",
            source_system="catalog",
            fact_type="product_spec",
            content="Battery life: up to 12 hours.",
        ),
        0.7,
    )
    out = by_id(arbitrate([review, spec], AUTHORITY))
    assert out["review"].conflicts_with == ("spec",)
    assert out["spec"].conflicts_with == ("review",)
    assert out["review"].scores.final == pytest.approx(0.45)
    assert out["spec"].scores.final == pytest.approx(0.7)
