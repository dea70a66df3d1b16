"""memory.changes in both forms: a batch's ``MemoryChanges`` and an older worker's single
``MemoryVersioned``, read alike by ``read_changes`` (what every consumer of the topic calls)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstream.schemas import codec
from memstream.schemas.changes import (
    CHANGES_HEADER,
    MAX_CHANGES,
    encode_changes,
    read_changes,
)
from memstream.schemas.codec import CodecError, decode, encode
from memstream.services.domain.model import MemoryVersion, Op
from memstream.services.ports import Recorded
from memstream.streams.records import versioned_record

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def change(tenant: str, n: int, **overrides: Any) -> dict[str, Any]:
    return {
        "event_id": f"crm-{n}",
        "tenant_id": tenant,
        "memory_key": f"complaint:C-{n % 3}",
        "version_id": f"00000000-0000-5000-8000-{n:012d}",
        "version": 1 + n % 4,
        "parent_id": None if n % 4 == 0 else f"00000000-0000-5000-8000-{n - 1:012d}",
        "op": "RETRACT" if n % 5 == 4 else "UPSERT",
        "outcome": "retracted" if n % 5 == 4 else "current",
        "is_current": n % 5 != 4,
        "valid_from": T0 + timedelta(minutes=n),
        "valid_to": None if n % 2 else T0 + timedelta(days=1, minutes=n),
        "recorded_at": T0 + timedelta(minutes=n, seconds=1),
        "fact_type": "complaint",
        "entity_type": "customer",
        "entity_id": f"C-{n % 3}",
        "source_system": "crm",
        "status": "pending",
        **overrides,
    }


def test_a_batch_round_trips_in_order_with_its_header() -> None:
    changes = [change("acme", n) for n in range(7)]
    value, schema = encode_changes("acme", changes)
    assert schema == b"MemoryChanges"
    assert read_changes(value, {CHANGES_HEADER: schema}) == changes
    assert read_changes(value, {CHANGES_HEADER: "MemoryChanges"}) == changes
    assert decode("MemoryChanges", value) == {"tenant_id": "acme", "changes": changes}


def test_one_record_for_a_batch_is_smaller_than_a_message_per_version() -> None:
    changes = [change("acme", n) for n in range(64)]
    value, _ = encode_changes("acme", changes)
    singles = [encode("MemoryVersioned", c) for c in changes]
    assert len(value) <= sum(map(len, singles)) + 16
    assert MAX_CHANGES * len(value) // 64 < 1_000_000, "a full message stays under 1 MB"


def test_a_consumer_reads_an_older_workers_single_change() -> None:
    old = change("acme", 3)
    value = encode("MemoryVersioned", old)  # what a worker before MemoryChanges sends
    assert read_changes(value, {}) == [old]
    assert read_changes(value, None) == [old]
    assert read_changes(value, {"other-header": b"x"}) == [old]
    assert read_changes(value, {CHANGES_HEADER: b"MemoryVersioned"}) == [old]


def test_a_batch_that_lost_its_headers_is_still_read() -> None:
    changes = [change("acme", n) for n in range(5)]
    value, _ = encode_changes("acme", changes)
    assert read_changes(value, {}) == changes


def test_garbage_and_unknown_forms_are_codec_errors() -> None:
    value, _ = encode_changes("acme", [change("acme", 1)])
    with pytest.raises(CodecError) as caught:
        read_changes(value, {CHANGES_HEADER: b"SomethingElse"})
    assert caught.value.reason == codec.UNKNOWN_SCHEMA
    for junk in (b"", b"\x00junk", None):
        with pytest.raises(CodecError) as caught:
            read_changes(junk, {})
        assert caught.value.reason == codec.UNDECODABLE
    with pytest.raises(CodecError):
        read_changes(value[:-1], {CHANGES_HEADER: b"MemoryChanges"})


def test_a_batch_holds_one_tenant_and_at_least_one_change() -> None:
    with pytest.raises(CodecError) as caught:
        encode_changes("acme", [change("acme", 1), change("globex", 2)])
    assert caught.value.reason == codec.INVALID_RECORD and caught.value.field == "tenant_id"
    with pytest.raises(CodecError):
        encode_changes("acme", [])


def test_the_sinks_records_of_domain_versions_travel_in_a_batch() -> None:
    version = MemoryVersion(
        version_id="7d4f0a52-2f7e-5d3c-9a55-0c1f6b8f2b11",
        tenant_id="acme",
        memory_key="pref:C-1",
        version=2,
        parent_id="0b6c2e1a-8f3d-5a4b-b1c2-d3e4f5a6b7c8",
        event_id="crm-2",
        op=Op.UPSERT,
        content="prefers email",
        entity_type="customer",
        entity_id="C-1",
        fact_type="preference",
        source_system="crm",
        status="active",
        occurred_at=T0,
        valid_from=T0,
        valid_to=None,
        recorded_at=T0 + timedelta(seconds=1),
        superseded_at=None,
        is_current=True,
    )
    recorded = Recorded(version, (), "current", False)
    value, schema = encode_changes("acme", [versioned_record(version, recorded.outcome)])
    (read,) = read_changes(value, {CHANGES_HEADER: schema})
    assert read["version_id"] == version.version_id and read["outcome"] == "current"
    assert read["valid_from"] == T0 and read["valid_to"] is None
