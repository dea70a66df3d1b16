"""Migrations on both PostgreSQL versions, topic provisioning and a Kafka round trip on Tansu."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Producer

from memstream.ops.migrate import Migration, MigrationError, applied, available, migrate
from memstream.ops.topics import TopicError, ensure_topics, partition_counts
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
