"""The Avro contracts and their codec: round trips, framing, garbage, evolution, ids."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.schemas import codec
from memstream.schemas.codec import CodecError, decode, encode

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
T0 = datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC)
PLUS_8 = timezone(timedelta(hours=8))
ANCHOR = {"type": "customer", "id": "C-17"}

MEMORY_EVENT: dict[str, Any] = {
    "event_id": "crm-000123",
    "tenant_id": "acme",
    "memory_key": "complaint:C-17:delivery",
    "entity_type": "customer",
    "entity_id": "C-17",
    "entities": [{"type": "order", "id": "O-9"}],
    "fact_type": "complaint",
    "content": "Parcel arrived damaged; customer asks for a refund. 包裹破损。",
    "attributes": {"channel": "email", "severity": "high"},
    "source_system": "crm",
    "status": "pending",
    "occurred_at": datetime(2024, 5, 1, 20, 30, 15, 123000, tzinfo=PLUS_8),
    "op": "UPSERT",
}
SAMPLES: dict[str, dict[str, Any]] = {
    "MemoryEvent": MEMORY_EVENT,
    "ScoreChanged": {
        "tenant_id": "acme",
        "memory_key": "complaint:C-17:4411",
        "version_id": "6f0b1c3e-4d1a-5e7b-9c2d-8a4f3e2b1c0d",
        "recency": 0.5,
        "state": 0.9,
        "effective_status": "escalated",
        "scored_at": datetime(2026, 3, 8, 9, 0, tzinfo=UTC),
    },
    "MemoryVersioned": {
        "event_id": "crm-000124",
        "tenant_id": "acme",
        "memory_key": "complaint:C-17:delivery",
        "version_id": "7d4f0a52-2f7e-5d3c-9a55-0c1f6b8f2b11",
        "version": 2,
        "parent_id": "0b6c2e1a-8f3d-5a4b-b1c2-d3e4f5a6b7c8",
        "op": "RETRACT",
        "outcome": "retracted",
        "is_current": False,
        "valid_from": T0,
        "valid_to": T0 + timedelta(days=2),
        "recorded_at": T0 + timedelta(days=2, seconds=1),
        "fact_type": "complaint",
        "entity_type": "customer",
        "entity_id": "C-17",
        "source_system": "crm",
        "status": "resolved",
    },
    "DeadLetter": {
        "reason": "undecodable",
        "detail": "MemoryEvent: EOFError",
        "original": b"\x00\xff\x01garbage",
        "original_key": b"acme|k",
        "source_topic": "memory.events",
        "source_partition": 3,
        "source_offset": 2**40,
        "event_id": None,
        "tenant_id": "acme",
        "failed_at": T0,
    },
    "RetrievalRequest": {
        "request_id": "req-1",
        "tenant_id": "acme",
        "query": "what did C-17 complain about last week?",
        "user_id": "u-5",
        "anchors": [ANCHOR],
        "context": {
            "active_task": "refund",
            "active_entities": [ANCHOR, {"type": "order", "id": "O-9"}],
            "time_window": {"from": T0 - timedelta(days=7), "to": T0},
        },
        "as_of": T0,
        "known_at": None,
        "limit": 5,
        "force": True,
        "reply_to": "memory.replies",
        "reply_partition": 2,
        "deadline_ms": 1_714_566_615_123,
    },
    "RetrievalReply": {
        "request_id": "req-1",
        "status": "ok",
        "gate": {"decision": "retrieve", "reason": "time_words"},
        "results": [
            {
                "memory_key": "complaint:C-17:delivery",
                "version": 2,
                "version_id": "7d4f0a52-2f7e-5d3c-9a55-0c1f6b8f2b11",
                "content": "Parcel arrived damaged.",
                "entity_type": "customer",
                "entity_id": "C-17",
                "fact_type": "complaint",
                "source_system": "crm",
                "status": "pending",
                "effective_status": "escalate",
                "occurred_at": T0,
                "valid_from": T0,
                "valid_to": None,
                "scores": {
                    "vector": 0.81,
                    "keyword": 0.4,
                    "fused": 0.7,
                    "authority": 1.0,
                    "recency": 0.93,
                    "binding": 1.0,
                    "state": 0.5,
                    "cross_validation": 0.0,
                    "trust": 0.77,
                    "final": 0.74,
                },
                "binding_kind": "exact",
                "conflicts_with": ["v-3"],
                "factors": {"settled": 0.42},
                "rendered": '<memory key="complaint:C-17:delivery" version="2">…</memory>',
            }
        ],
        "latency_ms": {"gate": 0.2, "vector": 2.3, "total": 9.5},
        "error": None,
        "served_at": T0,
        "rotation_ms": 60_000,
    },
}
SAMPLES["MemoryChanges"] = {
    "tenant_id": "acme",
    "changes": [
        {**SAMPLES["MemoryVersioned"], "op": "UPSERT", "outcome": "current", "is_current": True},
        SAMPLES["MemoryVersioned"],
    ],
}

# MemoryEvent as first published: the current schema minus `entities` and `attributes`.
OLD_MEMORY_EVENT: dict[str, Any] = {
    "type": "record",
    "name": "MemoryEvent",
    "namespace": "memstream",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "tenant_id", "type": "string"},
        {"name": "memory_key", "type": ["null", "string"], "default": None},
        {"name": "entity_type", "type": "string"},
        {"name": "entity_id", "type": "string"},
        {"name": "fact_type", "type": "string"},
        {"name": "content", "type": "string", "default": ""},
        {"name": "source_system", "type": "string"},
        {"name": "status", "type": "string", "default": "active"},
        {"name": "occurred_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "op",
            "type": {"type": "enum", "name": "Op", "symbols": ["UPSERT", "RETRACT"]},
            "default": "UPSERT",
        },
    ],
}
NEW_FIELDS = ("entities", "attributes")
REQUIRED_EVENT_FIELDS = (
    "event_id",
    "tenant_id",
    "entity_type",
    "entity_id",
    "fact_type",
    "source_system",
    "occurred_at",
)


def _old_event() -> dict[str, Any]:
    return {k: v for k, v in MEMORY_EVENT.items() if k not in NEW_FIELDS}


def _write(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema, {}), record)
    return buffer.getvalue()


def _raw(name: str) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(codec.schema_text(name))
    return raw


def _named(node: Any) -> Iterator[dict[str, Any]]:
    """Every named type (record, enum) defined anywhere in a raw schema."""
    if isinstance(node, list):
        for item in node:
            yield from _named(item)
    elif isinstance(node, dict):
        if node.get("type") in ("record", "enum"):
            yield node
        for key in ("type", "items", "values"):
            if isinstance(node.get(key), dict | list):
                yield from _named(node[key])
        for field in node.get("fields", []):
            yield from _named(field)


# -- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", codec.SCHEMA_NAMES)
def test_every_contract_round_trips(name: str) -> None:
    decoded = decode(name, encode(name, SAMPLES[name]))
    assert decoded == SAMPLES[name]


def test_omitted_fields_take_their_defaults() -> None:
    minimal = {name: MEMORY_EVENT[name] for name in REQUIRED_EVENT_FIELDS}
    decoded = decode("MemoryEvent", encode("MemoryEvent", minimal))
    assert decoded["memory_key"] is None
    assert decoded["entities"] == []
    assert decoded["attributes"] == {}
    assert decoded["content"] == ""
    assert decoded["status"] == "active"
    assert decoded["op"] == "UPSERT"
    request = {
        k: v for k, v in SAMPLES["RetrievalRequest"].items() if k not in ("context", "limit")
    }
    decoded = decode("RetrievalRequest", encode("RetrievalRequest", request))
    assert decoded["context"] == {"active_task": None, "active_entities": [], "time_window": None}
    assert decoded["limit"] == 10


def test_timestamps_come_back_as_aware_utc_of_the_same_instant() -> None:
    decoded = decode("MemoryEvent", encode("MemoryEvent", MEMORY_EVENT))
    assert decoded["occurred_at"].tzinfo == UTC
    assert decoded["occurred_at"] == MEMORY_EVENT["occurred_at"]
    assert decoded["occurred_at"].hour == 12


def test_epoch_millis_are_accepted_for_timestamps() -> None:
    record = dict(MEMORY_EVENT, occurred_at=int(T0.timestamp() * 1000))
    assert decode("MemoryEvent", encode("MemoryEvent", record))["occurred_at"] == T0


_text = st.text(max_size=40)
_millis = st.integers(min_value=0, max_value=253_402_300_799_999)  # up to year 9999


@settings(max_examples=200, deadline=None)
@given(
    event=st.fixed_dictionaries(
        {
            "event_id": _text,
            "tenant_id": _text,
            "memory_key": st.none() | _text,
            "entity_type": _text,
            "entity_id": _text,
            "entities": st.lists(st.fixed_dictionaries({"type": _text, "id": _text}), max_size=3),
            "fact_type": _text,
            "content": st.text(max_size=300),
            "attributes": st.dictionaries(_text, _text, max_size=4),
            "source_system": _text,
            "status": _text,
            "occurred_at": _millis.map(lambda ms: EPOCH + timedelta(milliseconds=ms)),
            "op": st.sampled_from(["UPSERT", "RETRACT"]),
        }
    )
)
def test_any_memory_event_round_trips(event: dict[str, Any]) -> None:
    assert decode("MemoryEvent", encode("MemoryEvent", event)) == event


# -- framing -------------------------------------------------------------------------------


# -- garbage -------------------------------------------------------------------------------


def _decodes_or_codec_error(name: str, data: bytes) -> None:
    try:
        result = decode(name, data)
    except CodecError as exc:
        assert exc.reason in (codec.UNDECODABLE, codec.UNKNOWN_SCHEMA, codec.SCHEMA_MISMATCH)
    else:  # random bytes can spell a valid record; then it must be a whole one
        assert isinstance(result, dict)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(codec.SCHEMA_NAMES), data=st.binary(max_size=600))
def test_arbitrary_bytes_raise_codec_error_and_nothing_else(name: str, data: bytes) -> None:
    _decodes_or_codec_error(name, data)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(codec.SCHEMA_NAMES),
    edits=st.lists(st.tuples(st.integers(min_value=0), st.binary(max_size=9)), max_size=4),
)
def test_corrupted_records_raise_codec_error_and_nothing_else(
    name: str, edits: list[tuple[int, bytes]]
) -> None:
    data = bytearray(encode(name, SAMPLES[name]))
    for position, replacement in edits:  # overwrite a slice with random bytes
        start = position % (len(data) + 1)
        data[start : start + len(replacement)] = replacement
    _decodes_or_codec_error(name, bytes(data))


@pytest.mark.parametrize("name", codec.SCHEMA_NAMES)
def test_every_truncation_and_any_trailing_byte_is_undecodable(name: str) -> None:
    data = encode(name, SAMPLES[name])
    for end in range(len(data)):
        with pytest.raises(CodecError) as caught:
            decode(name, data[:end])
        assert caught.value.reason == codec.UNDECODABLE
    with pytest.raises(CodecError, match="bytes left"):
        decode(name, data + b"\x00")


@pytest.mark.parametrize(
    "data",
    [
        b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a string of 2**62 bytes
        b"\x03abc",  # a negative length
        b"\xff" * 64,  # a varint that never ends
        b"\x04\xff\xfe",  # not UTF-8
        b"\x02a\x02b\x00\x02c\x02d\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a huge array
    ],
)
def test_hostile_lengths_are_undecodable(data: bytes) -> None:
    for name in codec.SCHEMA_NAMES:
        with pytest.raises(CodecError):
            decode(name, data)


def test_a_tombstone_is_undecodable() -> None:
    with pytest.raises(CodecError) as caught:
        decode("MemoryEvent", None)
    assert caught.value.reason == codec.UNDECODABLE
    with pytest.raises(CodecError):
        decode("MemoryEvent", "not bytes")  # type: ignore[arg-type]


# -- evolution -----------------------------------------------------------------------------


def test_a_record_of_the_old_schema_reads_with_the_current_one() -> None:
    data = _write(OLD_MEMORY_EVENT, _old_event())
    decoded = decode("MemoryEvent", data, writer_schema=OLD_MEMORY_EVENT)
    assert decoded == {**_old_event(), "entities": [], "attributes": {}}
    assert decode("MemoryEvent", data, writer_schema=json.dumps(OLD_MEMORY_EVENT)) == decoded


def test_a_record_of_the_current_schema_reads_with_the_old_one() -> None:
    data = encode("MemoryEvent", MEMORY_EVENT)
    decoded = fastavro.schemaless_reader(
        io.BytesIO(data), codec.schema("MemoryEvent"), fastavro.parse_schema(OLD_MEMORY_EVENT, {})
    )
    assert decoded == _old_event()


def test_an_op_the_reader_does_not_know_is_a_schema_mismatch() -> None:
    newer = json.loads(json.dumps(OLD_MEMORY_EVENT))
    newer["fields"][-1]["type"]["symbols"] = ["UPSERT", "RETRACT", "MERGE"]
    data = _write(newer, dict(_old_event(), op="MERGE"))
    with pytest.raises(CodecError) as caught:
        decode("MemoryEvent", data, writer_schema=newer)
    assert caught.value.reason == codec.SCHEMA_MISMATCH


def test_an_incompatible_writer_is_a_schema_mismatch() -> None:
    changed = json.loads(json.dumps(OLD_MEMORY_EVENT))
    changed["fields"][0]["type"] = "boolean"  # event_id: string -> boolean
    data = _write(changed, dict(_old_event(), event_id=True))
    with pytest.raises(CodecError) as caught:
        decode("MemoryEvent", data, writer_schema=changed)
    assert caught.value.reason == codec.SCHEMA_MISMATCH


def test_a_writer_schema_that_does_not_parse_is_a_bad_schema() -> None:
    data = encode("MemoryEvent", MEMORY_EVENT)
    for bad in ("{not json", {"type": "record", "name": "X", "fields": [{"name": "a"}]}):
        with pytest.raises(CodecError) as caught:
            decode("MemoryEvent", data, writer_schema=bad)
        assert caught.value.reason == codec.BAD_SCHEMA


# -- invalid records -----------------------------------------------------------------------


@pytest.mark.parametrize("missing", REQUIRED_EVENT_FIELDS)
def test_a_missing_required_field_is_named(missing: str) -> None:
    record = {k: v for k, v in MEMORY_EVENT.items() if k != missing}
    with pytest.raises(CodecError) as caught:
        encode("MemoryEvent", record)
    assert caught.value.reason == codec.INVALID_RECORD
    assert caught.value.field == missing
    assert missing in caught.value.detail


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"event_id": None}, "event_id"),
        ({"entity_id": 17}, "entity_id"),
        ({"op": "MERGE"}, "op"),
        ({"entities": [{"type": "order"}]}, "id"),
        ({"attributes": {"n": 1}}, "attributes"),
        ({"occurred_at": "yesterday"}, "occurred_at"),
        ({"memroy_key": "typo"}, "memroy_key"),
    ],
)
def test_an_invalid_field_is_named(change: dict[str, Any], field: str) -> None:
    with pytest.raises(CodecError) as caught:
        encode("MemoryEvent", {**MEMORY_EVENT, **change})
    assert caught.value.reason == codec.INVALID_RECORD
    assert caught.value.field == field


def test_naive_datetimes_are_refused_wherever_they_are() -> None:
    with pytest.raises(CodecError) as caught:
        encode("MemoryEvent", dict(MEMORY_EVENT, occurred_at=datetime(2024, 5, 1)))
    assert caught.value.field == "occurred_at"
    reply = {
        **SAMPLES["RetrievalReply"],
        "results": [dict(SAMPLES["RetrievalReply"]["results"][0])],
    }
    reply["results"][0]["valid_to"] = datetime(2024, 5, 2)
    with pytest.raises(CodecError) as caught:
        encode("RetrievalReply", reply)
    assert caught.value.field == "valid_to"
    assert "results[0].valid_to" in caught.value.detail


def test_not_a_record_and_not_a_contract() -> None:
    with pytest.raises(CodecError) as caught:
        encode("MemoryEvent", "not a record")  # type: ignore[arg-type]
    assert caught.value.reason == codec.INVALID_RECORD
    with pytest.raises(CodecError) as caught:
        encode("Memory", MEMORY_EVENT)
    assert caught.value.reason == codec.UNKNOWN_SCHEMA
    with pytest.raises(CodecError) as caught:
        decode("Memory", b"")
    assert caught.value.reason == codec.UNKNOWN_SCHEMA


# -- schema ids and the files themselves ---------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "files"),
    [
        ("EntityAnchor", ("MemoryEvent", "RetrievalRequest")),
        ("Op", ("MemoryEvent", "MemoryVersioned")),
        ("Op", ("MemoryVersioned", "MemoryChanges")),
        ("MemoryVersioned", ("MemoryVersioned", "MemoryChanges")),
    ],
)
def test_types_shared_between_files_are_defined_identically(
    type_name: str, files: tuple[str, str]
) -> None:
    definitions = [
        [node for node in _named(_raw(name)) if node["name"] == type_name] for name in files
    ]
    assert all(len(found) == 1 for found in definitions)
    assert definitions[0] == definitions[1]


@pytest.mark.parametrize("name", codec.SCHEMA_NAMES)
def test_every_field_and_type_is_documented(name: str) -> None:
    for node in _named(_raw(name)):
        assert node.get("doc"), node["name"]
        for field in node.get("fields", []):
            assert field.get("doc"), f"{node['name']}.{field['name']}"
