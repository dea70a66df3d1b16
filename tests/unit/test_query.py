"""validate_request: raw retrieval requests → RetrievalRequest or InvalidRequest with a code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstream.services.domain.errors import InvalidRequest
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import validate_request

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def raw(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"request_id": "r-1", "tenant_id": "acme", "query": "where is my order"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def code_of(fields: dict[str, Any]) -> str:
    with pytest.raises(InvalidRequest) as caught:
        validate_request(fields, NOW)
    return caught.value.code


def test_minimal_request_gets_the_defaults() -> None:
    request = validate_request(raw(), NOW)
    assert (request.request_id, request.tenant_id, request.query) == (
        "r-1",
        "acme",
        "where is my order",
    )
    assert request.limit == 10
    assert request.force is False
    assert request.anchors == ()
    assert request.user_id is None
    assert request.time_window is None and request.as_of is None and request.known_at is None
    assert request.reply_to == "" and request.deadline_ms is None


def test_user_id_becomes_a_customer_anchor() -> None:
    request = validate_request(raw(user_id="C-17", anchors=[{"type": "order", "id": "O-1"}]), NOW)
    assert request.anchors == (Anchor("order", "O-1"), Anchor("customer", "C-17"))


def test_user_anchor_is_not_repeated_when_already_named() -> None:
    for kind in ("customer", "user"):
        request = validate_request(raw(user_id="C-17", anchors=[{"type": kind, "id": "C-17"}]), NOW)
        assert request.anchors == (Anchor(kind, "C-17"),)


def test_full_request_with_context() -> None:
    request = validate_request(
        raw(
            user_id="C-17",
            entities=[{"type": "product", "id": "XR-500"}, {"type": "product", "id": "XR-500"}],
            context={
                "active_task": "return",
                "active_entities": [{"type": "order", "id": 42}],
                "time_window": ["2025-05-01T00:00:00Z", "2025-05-31T00:00:00+02:00"],
            },
            as_of="2025-05-15T00:00:00Z",
            known_at=1747267200000,
            limit="5",
            force=True,
            reply_to="memory.replies.agent-1",
            deadline_ms=250,
        ),
        NOW,
    )
    assert request.anchors == (Anchor("product", "XR-500"), Anchor("customer", "C-17"))
    assert request.active_task == "return"
    assert request.active_entities == (Anchor("order", "42"),)
    assert request.time_window == (
        datetime(2025, 5, 1, tzinfo=UTC),
        datetime(2025, 5, 30, 22, tzinfo=UTC),
    )
    assert request.as_of == datetime(2025, 5, 15, tzinfo=UTC)
    assert request.known_at == datetime(2025, 5, 15, tzinfo=UTC)
    assert (request.limit, request.force, request.deadline_ms) == (5, True, 250)
    assert request.reply_to == "memory.replies.agent-1"


def test_top_level_context_fields_win() -> None:
    request = validate_request(raw(active_task="top", context={"active_task": "nested"}), NOW)
    assert request.active_task == "top"


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        (raw(tenant_id=None), "missing_tenant"),
        (raw(tenant_id="  "), "missing_tenant"),
        (raw(query=None), "missing_query"),
        (raw(query=""), "missing_query"),
        (raw(limit=0), "limit_out_of_range"),
        (raw(limit=51), "limit_out_of_range"),
        (raw(limit="-3"), "limit_out_of_range"),
        (raw(limit="many"), "bad_field"),
        (raw(limit=True), "bad_field"),
        (raw(as_of="yesterday"), "bad_time"),
        (raw(as_of="2025-05-01T00:00:00"), "bad_time"),  # no timezone
        (raw(known_at=(NOW + timedelta(days=2)).isoformat()), "bad_time"),
        (raw(time_window=["2025-05-02T00:00:00Z", "2025-05-01T00:00:00Z"]), "bad_time"),
        (raw(time_window=["2025-05-02T00:00:00Z"]), "bad_time"),
        (raw(time_window={"from": "2025-05-02T00:00:00Z"}), "bad_time"),
        (raw(request_id=None), "bad_field"),
        (raw(tenant_id=7), "bad_field"),
        (raw(query="x" * 5000), "bad_field"),
        (raw(anchors="C-17"), "bad_field"),
        (raw(anchors=[{"type": "customer"}]), "bad_field"),
        (raw(context={"active_entities": [{"id": "X"}]}), "bad_field"),
        (raw(force="yes"), "bad_field"),
        (raw(deadline_ms=0), "bad_field"),
        (raw(context="nope"), "bad_field"),
    ],
)
def test_invalid_requests_carry_their_code(fields: dict[str, Any], code: str) -> None:
    assert code_of(fields) == code


def test_limit_bounds_are_inclusive() -> None:
    assert validate_request(raw(limit=1), NOW).limit == 1
    assert validate_request(raw(limit=50), NOW).limit == 50


def test_window_as_mapping_and_equal_bounds() -> None:
    moment = "2025-05-01T00:00:00Z"
    request = validate_request(raw(time_window={"from": moment, "to": moment}), NOW)
    assert request.time_window == (datetime(2025, 5, 1, tzinfo=UTC),) * 2


def test_not_a_mapping() -> None:
    assert code_of(["not", "an", "object"]) == "bad_field"  # type: ignore[arg-type]


def test_candidate_from_version_copies_the_scoring_fields() -> None:
    from memstream.services.domain.model import MemoryVersion, Op
    from memstream.services.domain.query import Candidate

    moment = datetime(2025, 5, 1, tzinfo=UTC)
    version = MemoryVersion(
        version_id="v-2",
        tenant_id="acme",
        memory_key="k",
        version=2,
        parent_id="v-1",
        event_id="e-2",
        entity_type="customer",
        entity_id="C-17",
        fact_type="order",
        content="Ordered an XR-500.",
        source_system="erp",
        status="active",
        op=Op.UPSERT,
        occurred_at=moment,
        valid_from=moment,
        valid_to=None,
        recorded_at=moment,
        superseded_at=None,
        is_current=True,
        entities=(Anchor("product", "XR-500"),),
        attributes={"order_id": "O-9"},
    )
    candidate = Candidate.from_version(version, vector_score=0.7)
    assert candidate.anchors == (Anchor("customer", "C-17"), Anchor("product", "XR-500"))
    assert (candidate.version_id, candidate.version, candidate.is_current) == ("v-2", 2, True)
    assert candidate.attributes == {"order_id": "O-9"}
    assert (candidate.vector_score, candidate.keyword_score) == (0.7, None)
