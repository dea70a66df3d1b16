"""FaustChangeSink: announces versions on memory.changes and dead letters on the DLQ topic.

Announcements are best effort (Postgres already holds the version / the dead letter), so a
send failure is logged, never raised into the ingest loop.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from memstream.schemas.codec import encode
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.ports import DeadLetter, OutboundReply, Recorded

log = logging.getLogger(__name__)


def dead_letter_bytes(letter: DeadLetter) -> bytes:
    """A dead letter as the Avro ``memstream.DeadLetter`` record (original bytes unchanged)."""
    return encode(
        "DeadLetter",
        {
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
        },
    )


class FaustChangeSink:
    def __init__(self, changes: Any, dlq: Any, scores: Any = None) -> None:
        self._changes = changes
        self._dlq = dlq
        self._scores = scores

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

    async def scored(self, version: MemoryVersion, scores: TimeScores, at: datetime) -> None:
        record = {
            "tenant_id": version.tenant_id,
            "memory_key": version.memory_key,
            "version_id": version.version_id,
            "recency": scores.recency,
            "state": scores.state,
            "effective_status": scores.effective_status,
            "scored_at": at,
        }
        key = f"{version.tenant_id}|{version.memory_key}".encode()
        try:
            await self._scores.send(key=key, value=encode("ScoreChanged", record))
        except Exception as exc:
            log.warning("could not announce scores of %s: %s", version.version_id, exc)

    async def dead_lettered(self, letter: DeadLetter) -> None:
        try:
            await self._dlq.send(key=letter.original_key, value=dead_letter_bytes(letter))
        except Exception as exc:
            log.warning(
                "could not send dead letter for %s to the DLQ topic: %s", letter.position, exc
            )


class FaustReplySink:
    """Sends replies with the worker's producer to the address the client gave."""

    def __init__(self, app: Any, requests_dlq: Any) -> None:
        self._app = app
        self._dlq = requests_dlq

    async def reply(self, reply: OutboundReply) -> None:
        # send() returns a future of the delivery; replies are fire-and-forget on purpose:
        # a client that misses one times out with a clear error.
        await self._app.producer.send(
            reply.topic, reply.key, reply.value, reply.partition, None, list(reply.headers)
        )

    async def dead_letter_request(self, letter: DeadLetter) -> None:
        try:
            await self._dlq.send(key=letter.original_key, value=dead_letter_bytes(letter))
        except Exception as exc:
            log.warning("could not send request %s to the requests DLQ: %s", letter.position, exc)
