"""Migrations on both PostgreSQL versions, topic provisioning and a Kafka round trip on Tansu."""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from datetime import UTC, datetime

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Producer

from memstream.ops.migrate import Migration, MigrationError, applied, available, migrate
from memstream.ops.topics import TopicError, ensure_topics, partition_counts
from memstream.services.domain.text import searchable
from memstream.services.settings import Topics


def test_migrations_apply_once_and_are_recorded(fresh_pg_dsn: str) -> None:
    versions = [m.version for m in available()]
    assert migrate(fresh_pg_dsn) == versions
    assert migrate(fresh_pg_dsn) == []  # idempotent
    assert applied(fresh_pg_dsn) == versions
    with psycopg.connect(fresh_pg_dsn) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
            )
        }
    assert {
        "event_ledger",
        "memory_versions",
        "dead_letters",
        "tenants",
        "schema_migrations",
    } <= tables


def test_an_edited_migration_is_refused(fresh_pg_dsn: str) -> None:
    migrate(fresh_pg_dsn)
    first = available()[0]
    edited = Migration(first.version, first.name, first.sql + "\n-- edited")
    with psycopg.connect(fresh_pg_dsn) as conn:
        stored = conn.execute(
            "SELECT checksum FROM schema_migrations WHERE version = %s", (first.version,)
        ).fetchone()
    assert stored is not None and stored[0] == first.checksum != edited.checksum
    with psycopg.connect(fresh_pg_dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE schema_migrations SET checksum = 'x' WHERE version = %s", (first.version,)
        )
    with pytest.raises(MigrationError, match="changed after it was applied"):
        migrate(fresh_pg_dsn)


def test_migration_0013_gives_earlier_versions_their_key_words(fresh_pg_dsn: str) -> None:
    # Versions written before 0013 have search_text without the key's words; the migration's
    # SQL must compute the words exactly as text.key_words does, and leave erased versions empty.
    migrate(fresh_pg_dsn)
    backfill = next(m for m in available() if m.version == 13).sql
    rng = random.Random(13)
    alphabet = "abcdefghijXYZ_-:|/.0123 é订单K"
    keys = [
        "customer:C-1|contact_preference",
        "D1:3",
        "Order:ORDER:order",
        "café:menu",
        "",
        *("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(300)),
    ]
    rows = [
        (str(uuid.uuid4()), key, f"content {n}", {"colour": "red"} if n % 2 else {})
        for n, key in enumerate(keys)
    ]
    erased = str(uuid.uuid4())
    with psycopg.connect(fresh_pg_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO tenants (tenant_id) VALUES ('t')")
        for version_id, key, content, attributes in [*rows, (erased, "order:9", "", {})]:
            conn.execute(
                "INSERT INTO memory_versions (version_id, tenant_id, memory_key, version, event_id,"
                " entity_type, entity_id, anchors, fact_type, content, attributes, search_text,"
                " source_system, status, op, occurred_at, valid_from, recorded_at, is_current,"
                " erased_at) VALUES (%s, 't', %s, 1, %s, 'customer', 'C-1', '{}', 'note', %s, %s,"
                " %s, 'crm', 'active', 'UPSERT', now(), now(), now(), true, %s)",
                (
                    version_id,
                    key,
                    version_id,
                    content,
                    json.dumps(attributes),
                    searchable(content, attributes, ""),  # as written before 0013
                    None if version_id != erased else datetime.now(UTC),
                ),
            )
        conn.execute(backfill)
        found = dict(conn.execute("SELECT version_id::text, search_text FROM memory_versions"))
    for version_id, key, content, attributes in rows:
        assert found[version_id] == searchable(content, attributes, key), key
    assert found[erased] == ""


def test_topics_are_created_with_their_partitions(broker: str) -> None:
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=3, reply_partitions=2)
    created = ensure_topics(broker, topics.all())
    assert sorted(created) == sorted(topics.all())
    counts = partition_counts(broker)
    assert {name: counts[name] for name in topics.all()} == topics.all()
    assert ensure_topics(broker, topics.all()) == []  # nothing to do the second time


def test_a_topic_with_other_partitions_is_reported(broker: str) -> None:
    name = f"t{uuid.uuid4().hex[:8]}.events"
    ensure_topics(broker, {name: 2})
    with pytest.raises(TopicError, match=f"{name} has 2, expected 5"):
        ensure_topics(broker, {name: 5})
    assert ensure_topics(broker, {name: 5}, strict=False) == []  # left as it is
    assert partition_counts(broker)[name] == 2


def test_produce_consume_round_trip_with_a_consumer_group(broker: str) -> None:
    topic = f"t{uuid.uuid4().hex[:8]}.roundtrip"
    ensure_topics(broker, {topic: 3})
    producer = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "acks": "all"})
    sent = {f"k{i}".encode(): f"v{i}".encode() for i in range(30)}
    for key, value in sent.items():
        producer.produce(topic, key=key, value=value)
    assert producer.flush(10) == 0

    async def consume() -> dict[bytes, bytes]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker,
            group_id=f"g-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10_000,
        )
        await consumer.start()
        got: dict[bytes, bytes] = {}
        try:
            async with asyncio.timeout(30):
                while len(got) < len(sent):
                    for messages in (await consumer.getmany(timeout_ms=500)).values():
                        got.update({m.key: m.value for m in messages})
            await consumer.commit()
            committed = [await consumer.committed(tp) for tp in consumer.assignment()]
            assert sum(c or 0 for c in committed) == len(sent)
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(consume()) == sent
