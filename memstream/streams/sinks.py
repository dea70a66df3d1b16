"""FaustChangeSink: announces versions on memory.changes and dead letters on the DLQ topic.

Versions go out as one ``MemoryChanges`` message per batch and tenant (key: the tenant id, so a
tenant's changes stay in order in one partition), with the ``memstream-schema`` header that
tells it from an older worker's single ``MemoryVersioned``. Announcements are best effort
(Postgres already holds the version / the dead letter), so a send failure is logged, never
raised into the ingest loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memstream.schemas.changes import CHANGES_HEADER, MAX_CHANGES, encode_changes
from memstream.schemas.codec import encode
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.ports import DeadLetter, OutboundReply, Recorded
from memstream.streams import tracked
from memstream.streams.records import (
    dead_letter_record,
    message_key,
    score_record,
    versioned_record,
)

log = logging.getLogger(__name__)


def dead_letter_bytes(letter: DeadLetter) -> bytes:
    """A dead letter as the Avro ``memstream.DeadLetter`` record (original bytes unchanged)."""
    return encode("DeadLetter", dead_letter_record(letter, datetime.now(UTC)))


def _named(topic: Any) -> None:
    """Name a Faust topic to its app's producer before writing to it (``streams.tracked``)."""
    tracked.track(tracked.producer_client(topic.app), topic.get_topic_name())


class FaustChangeSink:
    def __init__(self, changes: Any, dlq: Any, scores: Any = None) -> None:
        self._changes = changes
        self._dlq = dlq
        self._scores = scores

    async def announce(self, recorded: Sequence[Recorded]) -> None:
        by_tenant: dict[str, list[dict[str, Any]]] = {}
        for rec in recorded:
            record = versioned_record(rec.version, rec.outcome)
            by_tenant.setdefault(rec.version.tenant_id, []).append(record)
        for tenant_id, records in by_tenant.items():
            for start in range(0, len(records), MAX_CHANGES):
                chunk = records[start : start + MAX_CHANGES]
                try:
                    value, schema = encode_changes(tenant_id, chunk)
                    _named(self._changes)
                    await self._changes.send(
                        key=tenant_id.encode(), value=value, headers=[(CHANGES_HEADER, schema)]
                    )
                except Exception as exc:
                    log.warning(
                        "could not announce %d versions of tenant %r on memory.changes: %s",
                        len(chunk), tenant_id, exc,
                    )  # fmt: skip

    async def scored(self, version: MemoryVersion, scores: TimeScores, at: datetime) -> None:
        record = score_record(version, scores, at)
        key = message_key(version.tenant_id, version.memory_key)
        try:
            _named(self._scores)
            await self._scores.send(key=key, value=encode("ScoreChanged", record))
        except Exception as exc:
            log.warning("could not announce scores of %s: %s", version.version_id, exc)

    async def dead_lettered(self, letter: DeadLetter) -> None:
        try:
            _named(self._dlq)
            await self._dlq.send(key=letter.original_key, value=dead_letter_bytes(letter))
        except Exception as exc:
            log.warning(
                "could not send dead letter for %s to the DLQ topic: %s", letter.position, exc
            )


def _undelivered(delivery: asyncio.Future[Any], where: str) -> None:
    if not delivery.cancelled() and delivery.exception() is not None:
        log.warning("a reply to %s was not delivered: %r", where, delivery.exception())


class FaustReplySink:
    """Sends replies with the worker's producer to the address the client gave."""

    def __init__(self, app: Any, requests_dlq: Any) -> None:
        self._app = app
        self._dlq = requests_dlq

    async def reply(self, reply: OutboundReply) -> None:
        # send() returns a future of the delivery; replies are fire-and-forget on purpose:
        # a client that misses one times out with a clear error. A reply the producer could
        # not deliver is logged (the client's timeout alone would not say the worker answered).
        tracked.track(tracked.producer_client(self._app), reply.topic)
        delivery = await self._app.producer.send(
            reply.topic, reply.key, reply.value, reply.partition, None, list(reply.headers)
        )
        if isinstance(delivery, asyncio.Future):
            where = f"{reply.topic}/{reply.partition}"
            delivery.add_done_callback(lambda done: _undelivered(done, where))

    async def dead_letter_request(self, letter: DeadLetter) -> None:
        try:
            _named(self._dlq)
            await self._dlq.send(key=letter.original_key, value=dead_letter_bytes(letter))
        except Exception as exc:
            log.warning("could not send request %s to the requests DLQ: %s", letter.position, exc)
