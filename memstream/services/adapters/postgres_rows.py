"""The rows of the ledger and the versions: the columns read, the statements that write them,
and what a driver error means (``translate``). Shared by the one-event and the batch units of
work (``postgres``, ``postgres_batch``) and by the readers.
Must not import handlers or streams.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import PoolTimeout

from memstream.services.domain.model import Anchor, MemoryEvent, MemoryVersion, Op
from memstream.services.domain.text import searchable
from memstream.services.domain.versioning import Placement
from memstream.services.ports import AdapterError, Position, TransientError

VERSION_COLUMNS = (
    "version_id::text AS version_id, tenant_id, memory_key, version, parent_id::text AS parent_id,"
    " event_id, entity_type, entity_id, entities, fact_type, content, attributes, source_system,"
    " status, op, occurred_at, valid_from, valid_to, recorded_at, superseded_at, is_current"
)
VERSION_SQL = sql.SQL(VERSION_COLUMNS)  # the same columns, composable (psycopg.sql)

_TRANSIENT_SQLSTATES = {"40001", "40P01", "57P01", "57P02", "57P03", "53300"}


def row_to_version(row: Mapping[str, Any]) -> MemoryVersion:
    return MemoryVersion(
        version_id=row["version_id"],
        tenant_id=row["tenant_id"],
        memory_key=row["memory_key"],
        version=row["version"],
        parent_id=row["parent_id"],
        event_id=row["event_id"],
        entity_type=row["entity_type"],
        entity_id=row["entity_id"],
        fact_type=row["fact_type"],
        content=row["content"],
        source_system=row["source_system"],
        status=row["status"],
        op=Op(row["op"]),
        occurred_at=row["occurred_at"],
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        recorded_at=row["recorded_at"],
        superseded_at=row["superseded_at"],
        is_current=row["is_current"],
        entities=tuple(Anchor(a["type"], a["id"]) for a in row["entities"]),
        attributes=dict(row["attributes"]),
    )


def search_text(version: MemoryVersion) -> str:
    """What keyword search sees (``text.searchable``): content, attributes, the key's words."""
    return searchable(version.content, version.attributes, version.memory_key)


def translate(exc: Exception, what: str) -> AdapterError:
    """A psycopg / pool error as a TransientError (retry) or an AdapterError (give up)."""
    if isinstance(exc, PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError):
        return TransientError(f"postgres unavailable while {what}: {exc}")
    if isinstance(exc, psycopg.Error) and exc.sqlstate in _TRANSIENT_SQLSTATES:
        return TransientError(f"postgres transient failure while {what}: {exc}")
    return AdapterError(f"postgres failed while {what}: {exc}")


INSERT_VERSION = (
    "INSERT INTO memory_versions (version_id, tenant_id, memory_key, version, parent_id,"
    " event_id, entity_type, entity_id, entities, anchors, fact_type, content, attributes,"
    " search_text, source_system, status, op, occurred_at, valid_from, valid_to, recorded_at,"
    " superseded_at, is_current) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
    " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
UPDATE_DERIVED = (
    "UPDATE memory_versions SET valid_to = %s, is_current = %s, superseded_at = %s,"
    " index_dirty = true WHERE version_id = %s"
)
# received_at is the version's recorded_at (the transaction time the domain placed the event
# at), not the insert's clock: a batch validates its events before it writes them, and a moment
# must cut the ledger (a replay's --until) where it cuts the versions (known_at).
INSERT_LEDGER = (
    "INSERT INTO event_ledger (tenant_id, event_id, memory_key, op, version_id, outcome, topic,"
    ' "partition", "offset", payload, received_at)'
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
INSERT_TENANT = "INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING"


def version_params(new: MemoryVersion) -> tuple[Any, ...]:
    """The parameters of ``INSERT_VERSION`` for ``new``."""
    return (
        new.version_id,
        new.tenant_id,
        new.memory_key,
        new.version,
        new.parent_id,
        new.event_id,
        new.entity_type,
        new.entity_id,
        json.dumps([{"type": a.type, "id": a.id} for a in new.entities]),
        [f"{a.type}:{a.id}" for a in new.anchors],
        new.fact_type,
        new.content,
        json.dumps(dict(new.attributes)),
        search_text(new),
        new.source_system,
        new.status,
        new.op.value,
        new.occurred_at,
        new.valid_from,
        new.valid_to,
        new.recorded_at,
        new.superseded_at,
        new.is_current,
    )


def derived_params(old: MemoryVersion) -> tuple[Any, ...]:
    """The parameters of ``UPDATE_DERIVED`` for a version whose derived state changed."""
    return (old.valid_to, old.is_current, old.superseded_at, old.version_id)


def ledger_params(
    event: MemoryEvent, raw: Mapping[str, Any], position: Position, placement: Placement
) -> tuple[Any, ...]:
    """The parameters of ``INSERT_LEDGER`` for a recorded event."""
    return (
        event.tenant_id,
        event.event_id,
        event.memory_key,
        event.op.value,
        placement.version.version_id,
        placement.outcome,
        position.topic,
        position.partition,
        position.offset,
        json.dumps(dict(raw), default=str),
        placement.version.recorded_at,
    )
