"""Validation of raw memory events (decoded Avro records or JSON objects).

Turns a mapping into a ``MemoryEvent`` or raises ``InvalidEvent`` with a machine-readable
reason. Pure: ``now`` is passed in. Must not import any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import Anchor, MemoryEvent, Op

# Documented limits (README, "Memory events").
MAX_CONTENT_BYTES = 32 * 1024
MAX_ID_CHARS = 256
MAX_ATTRIBUTES = 64
EARLIEST_OCCURRED_AT = datetime(1970, 1, 1, tzinfo=UTC)
MAX_FUTURE_SKEW = timedelta(days=1)

REQUIRED_FIELDS = (
    "event_id",
    "tenant_id",
    "entity_type",
    "entity_id",
    "fact_type",
    "source_system",
    "occurred_at",
)

# Reasons, as they appear in dead letters and in `publish --wait` counts.
UNDECODABLE = "undecodable"
MISSING_FIELD = "missing_field"
INVALID_FIELD = "invalid_field"
EMPTY_CONTENT = "empty_content"
CONTENT_TOO_LARGE = "content_too_large"
BAD_TIMESTAMP = "bad_timestamp"
ABSURD_TIMESTAMP = "absurd_timestamp"
UNKNOWN_OP = "unknown_op"
RETRACT_UNKNOWN_MEMORY = "retract_unknown_memory"
TENANT_MISMATCH = "tenant_mismatch"


def parse_timestamp(value: Any) -> datetime:
    """An ISO-8601 string, epoch milliseconds or an aware datetime → aware UTC datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    elif isinstance(value, int | float):
        moment = datetime.fromtimestamp(value / 1000, tz=UTC)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        moment = datetime.fromisoformat(text)
    else:
        raise ValueError(f"not a timestamp: {value!r}")
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a timezone: {value!r}")
    return moment.astimezone(UTC)


def _text(raw: Mapping[str, Any], name: str, *, required: bool) -> str:
    value = raw.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InvalidEvent(MISSING_FIELD, f"field {name!r} is missing or empty")
        return ""
    if not isinstance(value, str):
        raise InvalidEvent(
            INVALID_FIELD, f"field {name!r} must be a string, got {type(value).__name__}"
        )
    if len(value) > MAX_ID_CHARS and name != "content":
        raise InvalidEvent(
            INVALID_FIELD, f"field {name!r} is longer than {MAX_ID_CHARS} characters"
        )
    _utf8(value, name)
    return value.strip()


def _utf8(value: str, name: str) -> bytes:
    # JSON may carry lone surrogates ("\ud800") that no UTF-8 encoder (Avro, Postgres) accepts.
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidEvent(INVALID_FIELD, f"field {name!r} is not valid Unicode text") from None


def _anchors(raw: Any) -> tuple[Anchor, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise InvalidEvent(INVALID_FIELD, "field 'entities' must be a list of {type, id}")
    anchors = []
    for item in raw:
        if not isinstance(item, Mapping) or not item.get("type") or not item.get("id"):
            raise InvalidEvent(INVALID_FIELD, f"entity anchor {item!r} needs a 'type' and an 'id'")
        anchors.append(Anchor(str(item["type"]), str(item["id"])))
    return tuple(anchors)


def _attributes(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidEvent(INVALID_FIELD, "field 'attributes' must be a map of string to string")
    if len(raw) > MAX_ATTRIBUTES:
        raise InvalidEvent(INVALID_FIELD, f"more than {MAX_ATTRIBUTES} attributes")
    return {str(k): str(v) for k, v in raw.items()}


def validate_event(raw: Mapping[str, Any], now: datetime) -> MemoryEvent:
    """Check every field of a raw event; raise ``InvalidEvent`` naming the first problem."""
    if not isinstance(raw, Mapping):
        raise InvalidEvent(UNDECODABLE, f"an event is an object, got {type(raw).__name__}")
    for name in REQUIRED_FIELDS:
        if raw.get(name) in (None, ""):
            raise InvalidEvent(MISSING_FIELD, f"field {name!r} is missing or empty")
    op_text = str(raw.get("op") or Op.UPSERT.value).upper()
    try:
        op = Op(op_text)
    except ValueError:
        raise InvalidEvent(UNKNOWN_OP, f"op {raw.get('op')!r} is not UPSERT or RETRACT") from None
    event_id = _text(raw, "event_id", required=True)
    memory_key = _text(raw, "memory_key", required=False) or event_id
    content = raw.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise InvalidEvent(INVALID_FIELD, "field 'content' must be a string")
    if op is Op.UPSERT and not content.strip():
        raise InvalidEvent(EMPTY_CONTENT, f"event {event_id!r} has no content")
    if len(_utf8(content, "content")) > MAX_CONTENT_BYTES:
        raise InvalidEvent(
            CONTENT_TOO_LARGE, f"event {event_id!r} content is over {MAX_CONTENT_BYTES} bytes"
        )
    try:
        occurred_at = parse_timestamp(raw.get("occurred_at"))
    except (ValueError, OverflowError, OSError) as exc:
        raise InvalidEvent(BAD_TIMESTAMP, f"event {event_id!r}: {exc}") from None
    if occurred_at < EARLIEST_OCCURRED_AT or occurred_at > now + MAX_FUTURE_SKEW:
        raise InvalidEvent(
            ABSURD_TIMESTAMP,
            f"event {event_id!r} occurred_at {occurred_at.isoformat()} is before 1970 "
            f"or more than {MAX_FUTURE_SKEW} in the future",
        )
    return MemoryEvent(
        event_id=event_id,
        tenant_id=_text(raw, "tenant_id", required=True),
        memory_key=memory_key,
        entity_type=_text(raw, "entity_type", required=True),
        entity_id=_text(raw, "entity_id", required=True),
        fact_type=_text(raw, "fact_type", required=True),
        content=content.strip(),
        source_system=_text(raw, "source_system", required=True),
        status=_text(raw, "status", required=False) or "active",
        occurred_at=occurred_at,
        op=op,
        entities=_anchors(raw.get("entities")),
        attributes=_attributes(raw.get("attributes")),
    )
