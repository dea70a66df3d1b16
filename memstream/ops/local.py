"""LocalMemstream: memstream's real write and read paths in one process, without a broker.

The same handlers, adapters and composition root as a worker (Postgres, Qdrant Edge, Redis, the
model), fed directly: events go through ``Ingestor.handle_batch`` exactly as the ingest agent
feeds them, requests through ``Retriever.retrieve``. For benchmarks and comparisons that must
measure memstream's answers, not the transport. Use ``memstream up`` for the real service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from memstream.schemas.codec import encode
from memstream.services import bootstrap
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.ingest import BatchReport, Envelope
from memstream.services.ports import Position, SilentSink
from memstream.services.settings import Settings
from memstream.streams.records import event_key, event_record


class LocalMemstream:
    def __init__(self, container: bootstrap.Container) -> None:
        self.container = container
        self._offset = 0

    @classmethod
    async def start(cls, settings: Settings, **build: Any) -> LocalMemstream:
        """``settings`` must have resolved endpoints (postgres_dsn, redis_url)."""
        return cls(await bootstrap.build(settings, SilentSink(), **build))

    async def ingest(self, events: Sequence[Mapping[str, Any]], batch: int = 256) -> BatchReport:
        """Validate, encode and ingest ``events`` in order; returns once all are indexed."""
        total = BatchReport()
        now = datetime.now(UTC)
        envelopes = []
        for raw in events:
            event = validate_event(raw, now)
            envelopes.append(
                Envelope(
                    event_key(event),
                    encode("MemoryEvent", event_record(event)),
                    Position("local", 0, self._offset),
                )
            )
            self._offset += 1
        for start in range(0, len(envelopes), batch):
            report = await self.container.ingestor.handle_batch(envelopes[start : start + batch])
            total.recorded.extend(report.recorded)
            total.dead.extend(report.dead)
        await self.container.indexer.drain()
        return total

    async def retrieve(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await self.container.retriever.retrieve(request)

    async def stop(self) -> None:
        await self.container.close()
