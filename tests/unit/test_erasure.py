"""The erasure domain: scopes, digests, tombstones and the ERASE event (property-based)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.schemas.codec import decode, encode
from memstream.services.domain.erasure import (
    ERASE_OP,
    ErasureScope,
    InvalidScope,
    ScopeKind,
    checked_reason,
    content_digest,
    erase_event,
    erasure_id_of_event,
    ledger_tombstone,
    payload_digest,
    scope_of_event,
)

AT = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
ids = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda s: s.strip() == s and s != ""
)


@given(tenant=ids, kind=ids.filter(lambda s: ":" not in s), entity_id=ids)
def test_an_entity_scope_parses_back_and_its_digest_hides_the_subject(
    tenant: str, kind: str, entity_id: str
) -> None:
    scope = ErasureScope.entity(tenant, f"{kind}:{entity_id}")
    assert (scope.entity_type, scope.entity_id) == (kind, entity_id)
    assert ErasureScope.parse(tenant, f"entity:{kind}:{entity_id}") == scope
    assert len(scope.digest) == 64
    assert scope.digest == ErasureScope.entity(tenant, scope.value).digest
    assert scope.needles() == (entity_id,)
    # The same subject in another tenant, or as a memory key, is another digest.
    assert ErasureScope.entity(tenant + "x", scope.value).digest != scope.digest
    assert ErasureScope.memory(tenant, scope.value).digest != scope.digest


@pytest.mark.parametrize(
    ("text", "problem"),
    [("customer", "TYPE:ID"), (":C-1", "TYPE:ID"), ("customer: ", "TYPE:ID")],
)
def test_a_bad_entity_is_refused_with_the_form_named(text: str, problem: str) -> None:
    with pytest.raises(InvalidScope, match=problem):
        ErasureScope.entity("t", text)


def test_bad_scopes_tenants_and_reasons_are_refused() -> None:
    for make in (
        lambda: ErasureScope.memory("t", "  "),
        lambda: ErasureScope.entity("", "a:b"),
        lambda: ErasureScope.parse("t", "everything"),
        lambda: checked_reason("x" * 501),
        lambda: scope_of_event({"tenant_id": "t", "memory_key": None}),
    ):
        with pytest.raises(InvalidScope):
            make()


@given(content=st.text(max_size=50), attrs=st.dictionaries(ids, st.text(max_size=10), max_size=4))
def test_digests_are_deterministic_and_change_with_the_content(
    content: str, attrs: dict[str, str]
) -> None:
    a = content_digest(content, attrs, "customer:C-1", [])
    assert a == content_digest(content, dict(reversed(list(attrs.items()))), "customer:C-1", [])
    assert a != content_digest(content + "!", attrs, "customer:C-1", [])
    assert a != content_digest(content, attrs, "customer:C-2", [])


@given(payload=st.dictionaries(ids, st.text(max_size=30).map("PII:".__add__), min_size=1))
def test_a_ledger_tombstone_keeps_no_value_of_the_payload(payload: dict[str, str]) -> None:
    digest = payload_digest(payload)
    tombstone = ledger_tombstone("e-1", AT, digest)
    assert "PII:" not in json.dumps(tombstone, ensure_ascii=False)
    assert set(tombstone) == {"erased", "erasure_id", "erased_at", "payload_sha256"}
    assert tombstone["payload_sha256"] == digest != payload_digest({**payload, "x": "PII:y"})


@given(tenant=ids, event_id=ids)
def test_an_erase_event_is_a_memory_event_on_the_wire_and_its_id_is_stable(
    tenant: str, event_id: str
) -> None:
    for scope in (ErasureScope.entity(tenant, "customer:C-1"), ErasureScope.memory(tenant, "k")):
        record = erase_event(scope, event_id, "request 1", "crm", AT)
        back = decode("MemoryEvent", encode("MemoryEvent", record))
        assert back["op"] == ERASE_OP
        assert scope_of_event(back) == scope
    assert erasure_id_of_event(tenant, event_id) == erasure_id_of_event(tenant, event_id)
    assert erasure_id_of_event(tenant, event_id) != erasure_id_of_event(tenant, event_id + "x")
    assert ErasureScope.parse(tenant, "memory:k").kind is ScopeKind.MEMORY
