"""Helpers for the ingest end-to-end tests: events, publishing, waiting, reading the stores."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from confluent_kafka import Producer

from memstream.ops.ingest_status import Status, wait_for
from memstream.ops.migrate import migrate
from memstream.ops.stack import free_port
from memstream.ops.topics import ensure_topics
from memstream.schemas.codec import encode
from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
from memstream.services.domain.validation import validate_event
from memstream.services.ports import VectorFilter
from memstream.services.settings import Settings, Topics
from memstream.streams.records import event_key as message_key
from memstream.streams.records import event_record as to_record
from tests.conftest import unique, with_schema
from tests.e2e.processes import Process, guard
from tests.identity_kit import Keyring

BASE = datetime(2026, 1, 1, tzinfo=UTC)


def event(tenant: str, key: str, n: int, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "event_id": f"{key}#{n}-{uuid.uuid4().hex[:6]}",
        "tenant_id": tenant,
        "memory_key": key,
        "entity_type": "customer",
        "entity_id": key.split(":")[-1],
        "fact_type": "note",
        "content": f"{key} version {n}: customer prefers delivery on day {n}",
        "source_system": "crm",
        "occurred_at": (BASE + timedelta(hours=n)).isoformat(),
    }
    raw.update(extra)
    return raw


def encoded(raw: Mapping[str, Any]) -> tuple[bytes, bytes]:
    valid = validate_event(raw, datetime.now(UTC))
    return message_key(valid), encode("MemoryEvent", to_record(valid))


def produce(
    broker: str,
    topic: str,
    messages: Iterable[tuple[bytes | None, bytes]],
    keyring: Keyring | None = None,
) -> int:
    """Publish ``messages``, each signed with its tenant's producer key when a keyring is
    given (the worker refuses unsigned events)."""
    producer = Producer(
        {"bootstrap.servers": broker, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    )
    count = 0
    for key, value in messages:
        while True:
            try:
                headers = keyring.event_headers(value) if keyring is not None else None
                producer.produce(topic, key=key, value=value, headers=headers)
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
    assert producer.flush(30) == 0
    return count


@dataclass
class IngestSetup:
    broker: str
    dsn: str
    topics: Topics
    data_dir: Path
    app_id: str

    def env(self, **overrides: str) -> dict[str, str]:
        settings = Settings(
            data_dir=self.data_dir,
            broker=self.broker,
            postgres_dsn=self.dsn,
            redis_url="redis://127.0.0.1:6379/0",
            topics=self.topics,
            app_id=self.app_id,
            web_port=0,
            log_level="warn",
        )
        env = settings.to_env()
        env.update(overrides)
        return env

    @property
    def settings(self) -> Settings:
        return Settings(postgres_dsn=self.dsn)

    @functools.cached_property
    def keyring(self) -> Keyring:
        """Keys in this schema, for the worker's service key (this data dir's)."""
        return Keyring(self.dsn, self.data_dir)

    def produce(self, messages: Iterable[tuple[bytes | None, bytes]]) -> int:
        return produce(self.broker, self.topics.events, messages, self.keyring)

    def worker(self, **overrides: str) -> Process:
        process = Process(["worker"], self.env(**overrides))
        process.wait_for("memstream ready in", timeout=120)
        return process

    def wait(self, idents: list[tuple[str, str]], timeout: float = 240) -> Status:
        """Until each event is recorded; ``timeout`` is a hang guard in reference seconds."""
        return wait_for(self.settings, idents, timeout=guard(timeout))

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(query.encode(), params).fetchall()  # type: ignore[arg-type]


def make_setup(broker: str, server_dsn: str, tmp: Path, partitions: int = 4) -> IngestSetup:
    topics = Topics(prefix=f"{unique('t')}.", partitions=partitions)
    ensure_topics(broker, topics.all())
    dsn = with_schema(server_dsn, unique("ms_"))
    migrate(dsn)
    return IngestSetup(broker, dsn, topics, tmp, unique("app-"))


def vector_points(vector_dir: Path, tenant: str) -> dict[str, dict[str, Any]]:
    """Every point of a tenant's Qdrant Edge shard (open it only when no worker holds it)."""

    async def read() -> dict[str, dict[str, Any]]:
        index = QdrantEdgeIndex(vector_dir, 384)
        try:
            total = await index.count(tenant)
            if not total:
                return {}
            hits = await index.search(
                tenant, [1.0] + [0.0] * 383, VectorFilter(current_only=False), limit=total
            )
            assert len(hits) == total == len(await index.point_ids(tenant))
            return {h.id: dict(h.payload) for h in hits}
        finally:
            await index.close()

    return asyncio.run(read())


__all__ = [
    "BASE",
    "IngestSetup",
    "encoded",
    "event",
    "free_port",
    "make_setup",
    "produce",
    "vector_points",
]
