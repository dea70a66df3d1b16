"""Avro codec for memstream's wire contracts (the ``*.avsc`` files bundled in this package).

- ``encode`` / ``decode``: schemaless Avro binary (fastavro), with reader/writer schema
  resolution when the writer used another version of a contract;
- no framing: every producer and consumer of memstream's topics writes and reads schemaless
  records of the bundled schemas (the contract is the ``.avsc`` files; ``writer_schema`` reads
  an older version).

Every failure surfaces as ``CodecError`` with a machine-readable ``reason``; decoding never
raises anything else, whatever the bytes. Each ``.avsc`` is self-contained: named types used by
several contracts (``EntityAnchor``, ``Op``) are defined inline in each file that uses them, with
identical definitions (a unit test keeps them equal), so every file registers on its own.

Imports fastavro and the stdlib only: no services, streams or ops module, no broker and no
registry client.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache, lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

import fastavro
from fastavro.read import SchemaResolutionError
from fastavro.validation import ValidationError, validate

AvroSchema = dict[str, Any]
"""A record schema: as loaded from JSON, or parsed by fastavro (``schema``, ``schema_for``)."""

SCHEMA_FILES: Final[Mapping[str, str]] = {
    "MemoryEvent": "memory_event.avsc",
    "MemoryVersioned": "memory_versioned.avsc",
    "MemoryChanges": "memory_changes.avsc",
    "DeadLetter": "dead_letter.avsc",
    "RetrievalRequest": "retrieval_request.avsc",
    "RetrievalReply": "retrieval_reply.avsc",
    "ScoreChanged": "score_changed.avsc",
}
SCHEMA_NAMES: Final[tuple[str, ...]] = tuple(SCHEMA_FILES)

# CodecError reasons. UNDECODABLE is also the dead-letter reason for such a message.
UNDECODABLE: Final = "undecodable"
SCHEMA_MISMATCH: Final = "schema_mismatch"
INVALID_RECORD: Final = "invalid_record"
UNKNOWN_SCHEMA: Final = "unknown_schema"
BAD_SCHEMA: Final = "bad_schema"

_TIMESTAMPS: Final = frozenset({"timestamp-millis", "timestamp-micros"})
_WRITER_FIELD = re.compile(r"(?:on field|^Field|specifies:) (\w+)")


class CodecError(Exception):
    """A record that cannot be encoded, bytes that cannot be decoded, or an unknown schema.

    ``reason`` is one of the module's reason constants; ``field`` names the offending field
    when it is known (its plain name, e.g. ``"event_id"``; ``detail`` gives its full path).
    """

    def __init__(
        self, reason: str, detail: str, *, schema: str | None = None, field: str | None = None
    ) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.schema = schema
        self.field = field


# -- loading -------------------------------------------------------------------------------

_Path = tuple[str | int, ...]
_Plan = tuple[str, Any]  # (kind, argument): see _timestamp_plan


@dataclass(frozen=True, slots=True)
class _Contract:
    name: str
    text: str
    raw: AvroSchema
    parsed: AvroSchema
    timestamps: _Plan | None


@cache
def _contract(name: str) -> _Contract:
    """Load and parse one bundled contract, once per process (no I/O at import)."""
    try:
        filename = SCHEMA_FILES[name]
    except KeyError:
        raise CodecError(
            UNKNOWN_SCHEMA, f"no contract named {name!r} (known: {', '.join(SCHEMA_NAMES)})"
        ) from None
    text = _bundle().joinpath(filename).read_text(encoding="utf-8")
    raw = json.loads(text)
    named: dict[str, Any] = {}
    parsed = fastavro.parse_schema(raw, named)
    if not isinstance(parsed, dict):
        raise CodecError(BAD_SCHEMA, f"{filename} is not a record schema")
    return _Contract(name, text, raw, parsed, _timestamp_plan(parsed, named, frozenset()))


def _bundle() -> Traversable:
    try:
        return resources.files("memstream.schemas")
    except (TypeError, NotADirectoryError):
        # An editable install made before schemas/ had an __init__.py imports it as a namespace
        # package whose path holds a non-directory placeholder, which Python 3.11's resources
        # cannot read (reinstalling fixes it). The files sit next to this module either way.
        return Path(__file__).parent


def schema(name: str) -> AvroSchema:
    """The parsed current schema of contract ``name`` (treat it as read-only)."""
    return _contract(name).parsed


def schema_text(name: str) -> str:
    """The ``.avsc`` text of contract ``name``, e.g. to register it with a schema registry."""
    return _contract(name).text


# -- naive datetimes -----------------------------------------------------------------------
# fastavro silently writes a naive datetime as if it were UTC; a local wall-clock time would
# then be off by hours without any error. Before writing, walk only the parts of a record whose
# schema holds a timestamp (precomputed per contract) and refuse naive datetimes.


def _timestamp_plan(node: Any, named: Mapping[str, Any], seen: frozenset[str]) -> _Plan | None:
    """Where timestamps sit in a schema, as a small tree; None where there are none."""
    if isinstance(node, str):
        return (
            _timestamp_plan(named[node], named, seen | {node})
            if node in named and node not in seen
            else None
        )
    if isinstance(node, list):
        branches = tuple(p for branch in node if (p := _timestamp_plan(branch, named, seen)))
        return ("union", branches) if branches else None
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if node.get("logicalType") in _TIMESTAMPS:
        return ("timestamp", None)
    if kind == "record":
        inner = seen | {node["name"]}
        fields = tuple(
            (f["name"], p)
            for f in node["fields"]
            if (p := _timestamp_plan(f["type"], named, inner))
        )
        return ("record", fields) if fields else None
    if kind in ("array", "map"):
        child = _timestamp_plan(node["items" if kind == "array" else "values"], named, seen)
        return (kind, child) if child else None
    return _timestamp_plan(kind, named, seen) if isinstance(kind, dict | list) else None


def _find_naive(plan: _Plan, value: Any) -> _Path | None:
    """The path to the first naive datetime of ``value`` along ``plan``, or None."""
    kind, arg = plan
    if kind == "timestamp":
        return () if isinstance(value, datetime) and value.utcoffset() is None else None
    if kind == "union":
        return next((p for branch in arg if (p := _find_naive(branch, value)) is not None), None)
    items: Iterable[tuple[str | int, Any, _Plan]]
    if kind == "record" and isinstance(value, Mapping):
        items = ((name, value[name], child) for name, child in arg if name in value)
    elif kind == "array" and isinstance(value, list | tuple):
        items = ((index, item, arg) for index, item in enumerate(value))
    elif kind == "map" and isinstance(value, Mapping):
        items = ((str(key), item, arg) for key, item in value.items())
    else:
        return None
    for key, item, child in items:
        if (path := _find_naive(child, item)) is not None:
            return (key, *path)
    return None


def _dotted(path: _Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# -- encode / decode -----------------------------------------------------------------------


def encode(name: str, record: Mapping[str, Any]) -> bytes:
    """Schemaless Avro binary of ``record`` under the current schema of contract ``name``.

    Fields with a default may be omitted; unknown fields are refused (a misspelt optional field
    would otherwise vanish silently). Timestamps are aware datetimes (any zone) or epoch ms.
    Raises ``CodecError(INVALID_RECORD)`` naming the field when it can be told.
    """
    contract = _contract(name)
    if contract.timestamps and (path := _find_naive(contract.timestamps, record)) is not None:
        where = _dotted(path)
        raise CodecError(
            INVALID_RECORD,
            f"{name}.{where} is a naive datetime; timestamps must be timezone-aware",
            schema=name,
            field=str(path[-1]) if path else None,
        )
    buffer = io.BytesIO()
    try:
        fastavro.schemaless_writer(
            buffer,
            contract.parsed,
            record,
            strict_allow_default=True,
            disable_tuple_notation=True,
        )
    except Exception as exc:  # fastavro raises ValueError, TypeError, KeyError, OverflowError...
        raise _invalid_record(contract, record, exc) from exc
    return buffer.getvalue()


def _invalid_record(contract: _Contract, record: Any, exc: Exception) -> CodecError:
    """Turn a writer failure into a CodecError that names the field, asking the validator."""
    first = _first_validation_error(contract, record)
    if first is not None:
        path = str(first.field) or contract.name
        value = "missing or null" if first.datum is None else _short(first.datum)
        return CodecError(
            INVALID_RECORD,
            f"{path} is {value}, expected {_describe(first.schema)}",
            schema=contract.name,
            field=path.rsplit(".", 1)[-1] or None,
        )
    match = _WRITER_FIELD.search(str(exc))
    return CodecError(
        INVALID_RECORD,
        f"{contract.name}: {type(exc).__name__}: {exc}",
        schema=contract.name,
        field=match.group(1) if match else None,
    )


def _first_validation_error(contract: _Contract, record: Any) -> Any:
    try:
        validate(record, contract.parsed, raise_errors=True)
    except ValidationError as invalid:
        return invalid.errors[0] if invalid.errors else None
    except Exception:  # a diagnostic only: if the validator itself fails, the writer's error stands
        return None
    return None  # valid for the validator (e.g. an unknown field): the writer's error stands


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(node: Any) -> str:
    if isinstance(node, dict):
        if "symbols" in node:
            return f"one of {node['symbols']}"
        return str(node.get("logicalType") or node.get("name") or node.get("type"))
    if isinstance(node, list):
        return " | ".join(_describe(branch) for branch in node)
    return str(node)


def decode(
    name: str,
    data: bytes | bytearray | memoryview | None,
    *,
    writer_schema: AvroSchema | str | None = None,
) -> dict[str, Any]:
    """Read one schemaless record of contract ``name``; timestamps come back as aware UTC.

    ``writer_schema`` (a schema dict, parsed or not, or its JSON text) is the schema the bytes
    were written with, when it is not the current one: fields the writer lacked take their
    defaults, fields the reader lacks are skipped. Raises ``CodecError``: ``UNDECODABLE`` for
    bytes that are not such a record (truncated, garbage, trailing bytes, a ``None`` value),
    ``SCHEMA_MISMATCH`` when the writer schema cannot be resolved to the current one,
    ``BAD_SCHEMA`` for a writer schema that does not parse.
    """
    contract = _contract(name)
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodecError(UNDECODABLE, f"{name}: no bytes but {type(data).__name__}", schema=name)
    if writer_schema is None:
        writer, reader = contract.parsed, None
    else:
        writer, reader = _parse_writer(writer_schema), contract.parsed
    buffer = io.BytesIO(data)
    size = buffer.seek(0, io.SEEK_END)
    buffer.seek(0)
    try:
        record = fastavro.schemaless_reader(buffer, writer, reader)
    except SchemaResolutionError as exc:
        if reader is None:  # without a reader schema this is just bad bytes
            raise CodecError(UNDECODABLE, f"{name}: {exc}", schema=name) from exc
        raise CodecError(SCHEMA_MISMATCH, f"{name}: {exc}", schema=name) from exc
    except Exception as exc:  # EOFError, ValueError, IndexError, UnicodeDecodeError, MemoryError...
        raise CodecError(
            UNDECODABLE, f"{name}: {type(exc).__name__}: {exc}"[:500], schema=name
        ) from exc
    if buffer.tell() != size:
        raise CodecError(
            UNDECODABLE,
            f"{name}: {size - buffer.tell()} bytes left after the record "
            "(another schema, or framed data read as unframed?)",
            schema=name,
        )
    if not isinstance(record, dict):  # a record schema always yields a dict
        raise CodecError(UNDECODABLE, f"{name}: decoded a {type(record).__name__}", schema=name)
    return record


def _parse_writer(writer_schema: AvroSchema | str) -> AvroSchema:
    if isinstance(writer_schema, dict) and "__fastavro_parsed" in writer_schema:
        return writer_schema
    text = (
        writer_schema
        if isinstance(writer_schema, str)
        else json.dumps(writer_schema, sort_keys=True)
    )
    return _parse_text(text)


@lru_cache(maxsize=64)
def _parse_text(text: str) -> AvroSchema:
    try:
        parsed = fastavro.parse_schema(json.loads(text), {})
    except Exception as exc:  # JSONDecodeError, SchemaParseException, UnknownType, ...
        raise CodecError(BAD_SCHEMA, f"writer schema does not parse: {exc}") from exc
    if not isinstance(parsed, dict):
        raise CodecError(BAD_SCHEMA, "writer schema is not a record schema")
    return parsed
