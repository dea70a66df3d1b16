"""``POST /v1/forget``'s body rules: exactly one scope form, and what the reply reports."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.gateway.erasure import Forgotten, erasure_scope
from memstream.services.domain.erasure import (
    ErasureCounts,
    ErasureResult,
    InvalidScope,
    ScopeKind,
)

ids = st.text(alphabet="abcXYZ019-_:. ", min_size=0, max_size=12)


@given(st.one_of(st.none(), ids), st.one_of(st.none(), ids), st.one_of(st.none(), ids))
def test_a_scope_is_an_entity_or_a_memory_never_both_never_neither(
    entity_type: str | None, entity_id: str | None, memory_key: str | None
) -> None:
    body = {"entity_type": entity_type, "entity_id": entity_id, "memory_key": memory_key}
    body = {k: v for k, v in body.items() if v is not None}
    entity = entity_type is not None or entity_id is not None
    valid_memory = memory_key is not None and not entity and memory_key.strip()
    valid_entity = (
        memory_key is None
        and entity_type is not None
        and entity_id is not None
        and ":" not in entity_type
        and entity_type.strip()
        and entity_id.strip()
    )
    if valid_memory:
        scope = erasure_scope("acme", body)
        assert scope.kind is ScopeKind.MEMORY and scope.value == memory_key.strip()
    elif valid_entity:
        scope = erasure_scope("acme", body)
        assert scope.kind is ScopeKind.ENTITY and scope.tenant_id == "acme"
        assert (scope.entity_type, scope.entity_id) == (entity_type.strip(), entity_id.strip())
    else:
        with pytest.raises(InvalidScope):
            erasure_scope("acme", body)


def result(**overrides: object) -> ErasureResult:
    base: dict[str, object] = {
        "erasure_id": "e1",
        "tenant_id": "acme",
        "scope_kind": ScopeKind.ENTITY,
        "subject_digest": "ab" * 32,
        "dry_run": False,
        "counts": ErasureCounts(memories=1, versions=2),
    }
    return ErasureResult(**(base | overrides))  # type: ignore[arg-type]


def test_the_status_a_caller_is_told() -> None:
    assert Forgotten(result(dry_run=True, erasure_id=None)).status == "dry_run"
    assert Forgotten(result(completed=("e1",))).status == "completed"
    nothing = result(erasure_id=None, counts=ErasureCounts())
    assert Forgotten(nothing).status == "nothing_to_erase"
    pending = result(pending=("e1",), error="the shard is held at /some/path")
    assert Forgotten(pending).status == "pending" and not Forgotten(pending).settled
    handed = Forgotten(pending, handed_to_worker="erase-1")
    assert handed.status == "completing" and handed.to_json()["error"] is None
    handed.completed_by_worker = True
    body = handed.to_json()
    assert handed.status == "completed" and body["completed"] == ["e1"] and body["pending"] == []
