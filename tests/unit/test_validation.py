"""Validation: a raw mapping becomes a normalised ``MemoryEvent`` or ``InvalidEvent(reason)``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import Anchor, MemoryEvent, Op
from memstream.services.domain.validation import (
    ABSURD_TIMESTAMP,
    BAD_TIMESTAMP,
    CONTENT_TOO_LARGE,
    EMPTY_CONTENT,
    INVALID_FIELD,
    MAX_ATTRIBUTES,
    MAX_CONTENT_BYTES,
    MAX_FUTURE_SKEW,
    MAX_ID_CHARS,
    MISSING_FIELD,
    REQUIRED_FIELDS,
    UNDECODABLE,
    UNKNOWN_OP,
    validate_event,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
TEXT_FIELDS = [name for name in REQUIRED_FIELDS if name != "occurred_at"]


def raw_event(**overrides: Any) -> dict[str, Any]:
    """A complete, valid raw event; ``overrides`` replace fields, a value of ``...`` drops one."""
    raw: dict[str, Any] = {
        "event_id": "ev-1",
        "tenant_id": "acme",
        "memory_key": "complaint-42",
        "entity_type": "customer",
        "entity_id": "C-17",
        "fact_type": "complaint",
        "content": "Parcel arrived damaged; customer wants a refund.",
        "source_system": "zendesk",
        "status": "pending",
        "occurred_at": "2025-05-30T09:15:00Z",
        "op": "UPSERT",
        "entities": [{"type": "order", "id": "O-9"}],
        "attributes": {"channel": "email", "priority": "high"},
    }
    for name, value in overrides.items():
        if value is ...:
            raw.pop(name, None)
        else:
            raw[name] = value
    return raw


def reason_of(raw: Any, now: datetime = NOW) -> str:
    with pytest.raises(InvalidEvent) as caught:
        validate_event(raw, now)
    return caught.value.reason


# --- valid events -------------------------------------------------------------------------------


def test_a_complete_event_passes_with_every_field_carried_over() -> None:
    event = validate_event(raw_event(), NOW)
    assert event == MemoryEvent(
        event_id="ev-1",
        tenant_id="acme",
        memory_key="complaint-42",
        entity_type="customer",
        entity_id="C-17",
        fact_type="complaint",
        content="Parcel arrived damaged; customer wants a refund.",
        source_system="zendesk",
        status="pending",
        occurred_at=datetime(2025, 5, 30, 9, 15, tzinfo=UTC),
        op=Op.UPSERT,
        entities=(Anchor("order", "O-9"),),
        attributes={"channel": "email", "priority": "high"},
    )
    assert event.occurred_at.tzinfo is UTC


def test_memory_key_defaults_to_the_event_id() -> None:
    assert validate_event(raw_event(memory_key=...), NOW).memory_key == "ev-1"
    assert validate_event(raw_event(memory_key=None), NOW).memory_key == "ev-1"
    assert validate_event(raw_event(memory_key="  "), NOW).memory_key == "ev-1"


def test_status_defaults_to_active() -> None:
    assert validate_event(raw_event(status=...), NOW).status == "active"
    assert validate_event(raw_event(status=""), NOW).status == "active"


def test_op_defaults_to_upsert() -> None:
    assert validate_event(raw_event(op=...), NOW).op is Op.UPSERT
    assert validate_event(raw_event(op=None), NOW).op is Op.UPSERT
    assert validate_event(raw_event(op=""), NOW).op is Op.UPSERT


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("upsert", Op.UPSERT),
        ("Upsert", Op.UPSERT),
        ("retract", Op.RETRACT),
        ("ReTrAcT", Op.RETRACT),
    ],
)
def test_op_is_case_insensitive(text: str, op: Op) -> None:
    assert validate_event(raw_event(op=text), NOW).op is op


def test_text_fields_and_content_are_stripped() -> None:
    event = validate_event(
        raw_event(event_id="  ev-1 ", entity_id="\tC-17\n", content="  hello  "), NOW
    )
    assert (event.event_id, event.entity_id, event.content) == ("ev-1", "C-17", "hello")


def test_optional_collections_default_to_empty() -> None:
    event = validate_event(raw_event(entities=..., attributes=None), NOW)
    assert event.entities == ()
    assert event.attributes == {}


def test_attribute_values_are_stringified() -> None:
    event = validate_event(raw_event(attributes={"count": 3, "ok": True}), NOW)
    assert event.attributes == {"count": "3", "ok": "True"}


@pytest.mark.parametrize(
    "value",
    [
        "2025-05-30T09:15:00Z",
        "2025-05-30T09:15:00z",
        "2025-05-30T09:15:00+00:00",
        "2025-05-30T11:15:00+02:00",
        "2025-05-30T04:15:00-05:00",
        " 2025-05-30T09:15:00.000Z ",
        1748596500000,
        1748596500000.0,
        datetime(2025, 5, 30, 9, 15, tzinfo=UTC),
        datetime(2025, 5, 30, 17, 15, tzinfo=timezone(timedelta(hours=8))),
    ],
)
def test_timestamps_in_every_accepted_form_normalise_to_utc(value: Any) -> None:
    occurred_at = validate_event(raw_event(occurred_at=value), NOW).occurred_at
    assert occurred_at == datetime(2025, 5, 30, 9, 15, tzinfo=UTC)
    assert occurred_at.utcoffset() == timedelta(0)


def test_epoch_millis_keep_sub_second_precision() -> None:
    occurred_at = validate_event(raw_event(occurred_at=1748596500250), NOW).occurred_at
    assert occurred_at == datetime(2025, 5, 30, 9, 15, 0, 250_000, tzinfo=UTC)


def test_epoch_zero_is_the_earliest_accepted_moment() -> None:
    occurred_at = validate_event(raw_event(occurred_at=0), NOW).occurred_at
    assert occurred_at == datetime(1970, 1, 1, tzinfo=UTC)


def test_exactly_one_day_ahead_of_now_is_still_accepted() -> None:
    ahead = NOW + MAX_FUTURE_SKEW
    assert validate_event(raw_event(occurred_at=ahead), NOW).occurred_at == ahead


def test_retract_without_content_is_fine() -> None:
    event = validate_event(raw_event(op="RETRACT", content=...), NOW)
    assert event.op is Op.RETRACT
    assert event.content == ""
    assert validate_event(raw_event(op="RETRACT", content="  "), NOW).content == ""


def test_content_exactly_at_the_limit_passes() -> None:
    ascii_text = "a" * MAX_CONTENT_BYTES
    assert validate_event(raw_event(content=ascii_text), NOW).content == ascii_text
    # "é" is 2 bytes, "中" 3 and "😀" 4 in UTF-8: 2 + 3 + 4 = 9 bytes per triple.
    multi = "é中😀" * (MAX_CONTENT_BYTES // 9)
    multi += "a" * (MAX_CONTENT_BYTES - len(multi.encode("utf-8")))
    assert len(multi.encode("utf-8")) == MAX_CONTENT_BYTES
    assert validate_event(raw_event(content=multi), NOW).content == multi


def test_exactly_max_attributes_and_max_id_length_pass() -> None:
    attributes = {f"k{i}": "v" for i in range(MAX_ATTRIBUTES)}
    long_id = "x" * MAX_ID_CHARS
    event = validate_event(raw_event(attributes=attributes, entity_id=long_id), NOW)
    assert len(event.attributes) == MAX_ATTRIBUTES
    assert event.entity_id == long_id


# --- each reason from its case ------------------------------------------------------------------


def test_a_non_mapping_is_undecodable() -> None:
    assert reason_of(["not", "an", "object"]) == UNDECODABLE
    assert reason_of("event") == UNDECODABLE


@pytest.mark.parametrize("name", REQUIRED_FIELDS)
def test_each_required_field_missing_is_reported(name: str) -> None:
    assert reason_of(raw_event(**{name: ...})) == MISSING_FIELD


@pytest.mark.parametrize("name", REQUIRED_FIELDS)
@pytest.mark.parametrize("empty", ["", None])
def test_each_required_field_empty_is_reported(name: str, empty: str | None) -> None:
    assert reason_of(raw_event(**{name: empty})) == MISSING_FIELD


@pytest.mark.parametrize("name", TEXT_FIELDS)
def test_a_blank_required_text_field_is_missing(name: str) -> None:
    assert reason_of(raw_event(**{name: "   "})) == MISSING_FIELD


@pytest.mark.parametrize("name", TEXT_FIELDS)
@pytest.mark.parametrize("value", [17, 1.5, ["a"], {"a": "b"}, True])
def test_a_non_string_id_is_invalid(name: str, value: Any) -> None:
    assert reason_of(raw_event(**{name: value})) == INVALID_FIELD


@pytest.mark.parametrize("name", ["memory_key", "status"])
def test_a_non_string_optional_text_field_is_invalid(name: str) -> None:
    assert reason_of(raw_event(**{name: 42})) == INVALID_FIELD


@pytest.mark.parametrize("name", ["event_id", "tenant_id", "entity_id", "memory_key", "status"])
def test_an_id_over_the_length_limit_is_invalid(name: str) -> None:
    assert reason_of(raw_event(**{name: "x" * (MAX_ID_CHARS + 1)})) == INVALID_FIELD


def test_non_string_content_is_invalid() -> None:
    assert reason_of(raw_event(content=42)) == INVALID_FIELD
    assert reason_of(raw_event(content=["text"])) == INVALID_FIELD


@pytest.mark.parametrize(
    "entities",
    [
        "order:O-9",
        {"type": "order", "id": "O-9"},
        [{"type": "order"}],
        [{"id": "O-9"}],
        [{"type": "", "id": "O-9"}],
        [{"type": "order", "id": None}],
        ["order:O-9"],
        [{"type": "order", "id": "O-9"}, 7],
    ],
)
def test_bad_entities_are_invalid(entities: Any) -> None:
    assert reason_of(raw_event(entities=entities)) == INVALID_FIELD


@pytest.mark.parametrize("attributes", [["channel", "email"], "channel=email", 3])
def test_attributes_that_are_not_a_map_are_invalid(attributes: Any) -> None:
    assert reason_of(raw_event(attributes=attributes)) == INVALID_FIELD


def test_too_many_attributes_are_invalid() -> None:
    attributes = {f"k{i}": "v" for i in range(MAX_ATTRIBUTES + 1)}
    assert reason_of(raw_event(attributes=attributes)) == INVALID_FIELD


@pytest.mark.parametrize("content", [..., None, "", "   \n\t "])
def test_an_upsert_without_content_is_empty(content: Any) -> None:
    assert reason_of(raw_event(content=content)) == EMPTY_CONTENT


def test_content_one_byte_over_the_limit_is_too_large() -> None:
    assert reason_of(raw_event(content="a" * (MAX_CONTENT_BYTES + 1))) == CONTENT_TOO_LARGE


def test_content_is_measured_in_utf8_bytes_not_characters() -> None:
    # 3-byte characters: far fewer characters than the limit, yet one byte over it.
    chinese = "中" * (MAX_CONTENT_BYTES // 3) + "abc"
    assert len(chinese) < MAX_CONTENT_BYTES
    assert len(chinese.encode("utf-8")) == MAX_CONTENT_BYTES + 1
    assert reason_of(raw_event(content=chinese)) == CONTENT_TOO_LARGE
    # 4-byte characters: exactly the limit passes, one more character does not.
    emoji = "😀" * (MAX_CONTENT_BYTES // 4)
    assert validate_event(raw_event(content=emoji), NOW).content == emoji
    assert reason_of(raw_event(content=emoji + "😀")) == CONTENT_TOO_LARGE


def test_a_large_retract_is_also_too_large() -> None:
    assert reason_of(raw_event(op="RETRACT", content="a" * (MAX_CONTENT_BYTES + 1))) == (
        CONTENT_TOO_LARGE
    )


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "2025-13-40T00:00:00Z",
        "   ",
        True,
        False,
        ["2025-05-30T09:15:00Z"],
        {"ms": 1},
        float("nan"),
        float("inf"),
        10**30,
    ],
)
def test_unparseable_timestamps_are_bad(value: Any) -> None:
    assert reason_of(raw_event(occurred_at=value)) == BAD_TIMESTAMP


@pytest.mark.parametrize(
    "value", ["2025-05-30T09:15:00", "2025-05-30", datetime(2025, 5, 30, 9, 15)]
)
def test_a_timestamp_without_a_timezone_is_bad(value: Any) -> None:
    assert reason_of(raw_event(occurred_at=value)) == BAD_TIMESTAMP


def test_a_missing_occurred_at_is_missing_not_bad() -> None:
    assert reason_of(raw_event(occurred_at=None)) == MISSING_FIELD


@pytest.mark.parametrize(
    "value",
    [
        "1969-12-31T23:59:59Z",
        -1,
        datetime(1900, 1, 1, tzinfo=UTC),
        NOW + MAX_FUTURE_SKEW + timedelta(seconds=1),
        "2030-01-01T00:00:00Z",
    ],
)
def test_absurd_timestamps_are_rejected(value: Any) -> None:
    assert reason_of(raw_event(occurred_at=value)) == ABSURD_TIMESTAMP


def test_the_future_limit_is_relative_to_the_given_now() -> None:
    occurred_at = "2030-01-01T00:00:00Z"
    assert reason_of(raw_event(occurred_at=occurred_at), NOW) == ABSURD_TIMESTAMP
    later_now = datetime(2029, 12, 31, 12, 0, tzinfo=UTC)
    accepted = validate_event(raw_event(occurred_at=occurred_at), later_now)
    assert accepted.occurred_at == datetime(2030, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("op", ["DELETE", "upsert!", "RETRACTED", 1, ["UPSERT"]])
def test_an_unknown_op_is_rejected(op: Any) -> None:
    assert reason_of(raw_event(op=op)) == UNKNOWN_OP


def test_text_that_cannot_be_encoded_as_utf8_is_invalid() -> None:
    # json.loads('"\\ud800"') yields a lone surrogate: it can never be stored or re-encoded.
    assert reason_of(raw_event(content="refund \ud800 please")) == INVALID_FIELD
    assert reason_of(raw_event(entity_id="C-\udc17")) == INVALID_FIELD


# --- robustness ---------------------------------------------------------------------------------


def texts(max_size: int) -> st.SearchStrategy[str]:
    # Lone surrogates drawn on purpose: JSON can carry them ("\\ud800") and st.text() never
    # does (it drops them even from an explicit alphabet), so join characters by hand.
    chars = st.characters() | st.characters(categories=["Cs"])
    return st.lists(chars, max_size=max_size).map("".join)


any_text = texts(20)
junk = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        any_text,
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(any_text, inner, max_size=4)
    ),
    max_leaves=8,
)
field_names = st.sampled_from([*raw_event(), "extra"])


def _is_valid_or_invalid_event(raw: dict[str, Any]) -> None:
    try:
        result = validate_event(raw, NOW)
    except InvalidEvent as exc:
        assert exc.reason in {
            MISSING_FIELD,
            INVALID_FIELD,
            EMPTY_CONTENT,
            CONTENT_TOO_LARGE,
            BAD_TIMESTAMP,
            ABSURD_TIMESTAMP,
            UNKNOWN_OP,
        }
    else:
        assert isinstance(result, MemoryEvent)
        assert result.memory_key
        assert EARLIEST <= result.occurred_at <= NOW + MAX_FUTURE_SKEW


@given(raw=st.dictionaries(any_text, junk))
def test_arbitrary_junk_is_either_an_event_or_invalid(raw: dict[str, Any]) -> None:
    _is_valid_or_invalid_event(raw)


@given(overrides=st.dictionaries(field_names, junk, max_size=4))
def test_a_valid_event_with_junk_fields_is_either_an_event_or_invalid(
    overrides: dict[str, Any],
) -> None:
    _is_valid_or_invalid_event(raw_event(**overrides))


@given(
    name=st.sampled_from([*TEXT_FIELDS, "memory_key", "status", "content", "op"]),
    value=texts(300),
)
def test_any_text_in_a_text_field_is_either_an_event_or_invalid(name: str, value: str) -> None:
    _is_valid_or_invalid_event(raw_event(**{name: value}))
