"""FaustChangeSink: announces versions on memory.changes and dead letters on the DLQ topic.

Announcements are best effort (Postgres already holds the version / the dead letter), so a
send failure is logged, never raised into the ingest loop.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from schemas.codec import encode
from services.ports import DeadLetter, Recorded

log = logging.getLogger(__name__)


class FaustChangeSink:
    def __init__(self, changes: Any, dlq: Any) -> None:
        self._changes = changes
        self._dlq = dlq

    async def versioned(self, recorded: Recorded) -> None:
        v = recorded.version
        record = {
            "event_id": v.event_id,
            "tenant_id": v.tenant_id,
            "memory_key": v.memory_key,
            "version_id": v.version_id,
            "version": v.version,
            "parent_id": v.parent_id,
            "op": v.op.value,
            "outcome": recorded.outcome,
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
        key = f"{v.tenant_id}|{v.memory_key}".encode()
        try:
            await self._changes.send(key=key, value=encode("MemoryVersioned", record))
        except Exception as exc:
            log.warning("could not announce version %s on memory.changes: %s", v.version_id, exc)

    async def dead_lettered(self, letter: DeadLetter) -> None:
        record = {
            "reason": letter.reason,
            "detail": letter.detail,
            "original": letter.original or b"",
            "original_key": letter.original_key,
            "source_topic": letter.position.topic,
            "source_partition": letter.position.partition,
            "source_offset": letter.position.offset,
            "event_id": letter.event_id,
            "tenant_id": letter.tenant_id,
            "failed_at": datetime.now(UTC),
        }
        try:
            await self._dlq.send(key=letter.original_key, value=encode("DeadLetter", record))
        except Exception as exc:
            log.warning(
                "could not send dead letter for %s to the DLQ topic: %s", letter.position, exc
            )
