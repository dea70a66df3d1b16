"""The wire mapping: domain objects ↔ the Avro records of ``memstream/schemas/*.avsc``.

One place for every record memstream writes (``MemoryEvent``, ``MemoryVersioned``,
``ScoreChanged``, ``DeadLetter``) and for the message key (``tenant|memory_key``: one memory's
events stay in one partition, in order). Used by the CLI, the demo, the benches and the sinks;
``schemas.codec`` turns these records into bytes. Imports the domain and the ports only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memstream.services.domain.model import MemoryEvent, MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.ports import DeadLetter


def message_key(tenant_id: str, memory_key: str) -> bytes:
    return f"{tenant_id}|{memory_key}".encode()


def event_key(event: MemoryEvent) -> bytes:
    return message_key(event.tenant_id, event.memory_key)


def event_record(event: MemoryEvent) -> dict[str, Any]:
    """A validated event as the Avro ``memstream.MemoryEvent`` record."""
    return {
        "event_id": event.event_id,
        "tenant_id": event.tenant_id,
        "memory_key": event.memory_key,
        "entity_type": event.entity_type,
        "entity_id": event.entity_id,
        "entities": [{"type": a.type, "id": a.id} for a in event.entities],
        "fact_type": event.fact_type,
        "content": event.content,
        "attributes": dict(event.attributes),
        "source_system": event.source_system,
        "status": event.status,
        "occurred_at": event.occurred_at,
        "op": event.op.value,
    }


def versioned_record(v: MemoryVersion, outcome: str) -> dict[str, Any]:
    """A recorded version as the ``memstream.MemoryVersioned`` change record."""
    return {
        "event_id": v.event_id,
        "tenant_id": v.tenant_id,
        "memory_key": v.memory_key,
        "version_id": v.version_id,
        "version": v.version,
        "parent_id": v.parent_id,
        "op": v.op.value,
        "outcome": outcome,
        "is_current": v.is_current,
        "valid_from": v.valid_from,
        "valid_to": v.valid_to,
        "recorded_at": v.recorded_at,
        "fact_type": v.fact_type,
        "entity_type": v.entity_type,
        "entity_id": v.entity_id,
        "source_system": v.source_system,
        "status": v.status,
    }


def score_record(version: MemoryVersion, scores: TimeScores, at: datetime) -> dict[str, Any]:
    """New time scores of a version as the ``memstream.ScoreChanged`` record."""
    return {
        "tenant_id": version.tenant_id,
        "memory_key": version.memory_key,
        "version_id": version.version_id,
        "recency": scores.recency,
        "state": scores.state,
        "effective_status": scores.effective_status,
        "scored_at": at,
    }


def dead_letter_record(letter: DeadLetter, failed_at: datetime) -> dict[str, Any]:
    """A dead letter as the ``memstream.DeadLetter`` record (original bytes unchanged)."""
    return {
        "reason": letter.reason,
        "detail": letter.detail,
        "original": letter.original or b"",
        "original_key": letter.original_key,
        "source_topic": letter.position.topic,
        "source_partition": letter.position.partition,
        "source_offset": letter.position.offset,
        "event_id": letter.event_id,
        "tenant_id": letter.tenant_id,
        "failed_at": failed_at,
    }
