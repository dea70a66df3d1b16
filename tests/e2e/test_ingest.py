"""The write path end to end on the real stack: Tansu → worker → Postgres + Qdrant Edge."""

from __future__ import annotations

import asyncio
import json
import random
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from memstream.ops.stack import free_port
from memstream.schemas.changes import CHANGES_HEADER, read_changes
from memstream.schemas.codec import decode, encode
from memstream.services.domain.validation import validate_event
from memstream.streams.records import event_record as to_record
from tests.e2e.ingest_kit import (
    BASE,
    IngestSetup,
    encoded,
    event,
    make_setup,
    vector_points,
)


@pytest.fixture
def setup(broker: str, machine_postgres_dsn: str, tmp_path: Path) -> IngestSetup:
    return make_setup(broker, machine_postgres_dsn, tmp_path)


async def _consume_all(
    broker: str, topic: str, expected: int, weigh: Callable[[Any], int] = lambda m: 1
) -> list[Any]:
    """Messages of ``topic`` from the start until they weigh ``expected`` (one each, or e.g.
    the changes a memory.changes message carries)."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=broker,
        auto_offset_reset="earliest",
        group_id=None,
        enable_auto_commit=False,
    )
    await consumer.start()
    got: list[Any] = []
    try:
        async with asyncio.timeout(30):
            while sum(map(weigh, got)) < expected:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(messages)
    finally:
        await consumer.stop()
    return got


def test_events_become_versions_points_changes_and_dead_letters(
    setup: IngestSetup, tenant: str
) -> None:
    key = "pref:C-1"
    v1 = event(tenant, key, 10)
    v2 = event(tenant, key, 20)
    late = event(tenant, key, 5)
    gone = event(tenant, "forum:7", 1, fact_type="forum_post", source_system="forum")
    retract = event(tenant, "forum:7", 2, op="RETRACT", content="")
    unknown = event(tenant, "nope", 1, op="RETRACT", content="")
    empty = encode("MemoryEvent", {**encoded_record(event(tenant, "e", 1)), "content": ""})
    good = [v1, v2, late, gone, retract]
    messages = [encoded(e) for e in good] + [encoded(unknown), (b"k", empty), (b"k", b"\x00junk")]
    worker = setup.worker()
    try:
        setup.produce(messages)
        status = setup.wait([(tenant, e["event_id"]) for e in [*good, unknown]])
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
    assert status.ingested == {(tenant, e["event_id"]) for e in good}
    assert status.dead == {(tenant, unknown["event_id"]): "retract_unknown_memory"}

    chain = setup.sql(
        "SELECT version, event_id, is_current, valid_from, valid_to FROM memory_versions"
        " WHERE tenant_id = %s AND memory_key = %s ORDER BY version",
        tenant,
        key,
    )
    assert [(r[0], r[1], r[2]) for r in chain] == [
        (1, v1["event_id"], False),
        (2, v2["event_id"], True),
        (3, late["event_id"], False),
    ]
    by_version = {r[0]: r for r in chain}
    assert by_version[3][4] == by_version[1][3], "the late version ends where v1 begins"
    outcomes = dict(
        setup.sql("SELECT event_id, outcome FROM event_ledger WHERE tenant_id = %s", tenant)
    )
    assert outcomes[late["event_id"]] == "late" and outcomes[retract["event_id"]] == "retracted"

    reasons = sorted(
        r[0]
        for r in setup.sql("SELECT reason FROM dead_letters WHERE topic = %s", setup.topics.events)
    )
    assert reasons == ["empty_content", "retract_unknown_memory", "undecodable"]
    originals = {
        r[0]
        for r in setup.sql(
            "SELECT original FROM dead_letters WHERE topic = %s", setup.topics.events
        )
    }
    assert b"\x00junk" in {bytes(o) for o in originals}

    points = vector_points(setup.data_dir / "vectors", tenant)
    assert len(points) == 4, "one point per UPSERT version, none for the tombstone"
    current = {p["memory_key"]: p for p in points.values() if p["is_current"]}
    assert set(current) == {key}, "the retracted forum post is no longer current anywhere"
    assert current[key]["version"] == 2

    def changes_of(message: Any) -> list[dict[str, Any]]:
        return read_changes(message.value, dict(message.headers))

    def mine_in(message: Any) -> int:
        return sum(c["tenant_id"] == tenant for c in changes_of(message))

    changes = asyncio.run(
        _consume_all(setup.broker, setup.topics.changes, len(good), weigh=mine_in)
    )
    mine = [m for m in changes if mine_in(m)]
    # MemoryChanges messages (one per ingested batch and tenant), keyed by the tenant.
    assert all(dict(m.headers)[CHANGES_HEADER] == b"MemoryChanges" for m in mine)
    assert all(m.key == tenant.encode() for m in mine)
    announced = [c for m in mine for c in changes_of(m)]
    assert sorted(c["event_id"] for c in announced) == sorted(e["event_id"] for e in good)
    dlq = asyncio.run(_consume_all(setup.broker, setup.topics.events_dlq, 3))
    letters = [decode("DeadLetter", m.value) for m in dlq]
    assert {letter["reason"] for letter in letters} == set(reasons)
    assert all(letter["source_topic"] == setup.topics.events for letter in letters)


def encoded_record(raw: dict[str, Any]) -> dict[str, Any]:
    return to_record(validate_event(raw, datetime.now(UTC)))


def _malformed(tenant: str, rng: random.Random, n: int) -> tuple[bytes, str]:
    """The n-th malformed message and the reason it must be dead-lettered with."""
    good = encoded_record(event(tenant, f"bad:{n}", 1))
    kind = n % 6
    if kind == 0:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 60))), "undecodable"
    if kind == 1:
        return encode("MemoryEvent", {**good, "content": "   "}), "empty_content"
    if kind == 2:
        return encode("MemoryEvent", {**good, "entity_id": ""}), "missing_field"
    if kind == 3:
        far = datetime.now(UTC) + timedelta(days=400)
        return encode("MemoryEvent", {**good, "occurred_at": far}), "absurd_timestamp"
    if kind == 4:
        return encode("MemoryEvent", {**good, "content": "x" * 40_000}), "content_too_large"
    return encode("MemoryEvent", {**good, "op": "RETRACT", "content": ""}), "retract_unknown_memory"


def test_fuzz_malformed_messages_between_valid_ones(setup: IngestSetup, tenant: str) -> None:
    rng = random.Random(7)
    valid = [event(tenant, f"ok:{i}", 1) for i in range(150)]
    bad = [_malformed(tenant, rng, n) for n in range(1_200)]
    messages: list[tuple[bytes | None, bytes]] = [encoded(e) for e in valid]
    messages += [(f"bad|{n}".encode(), value) for n, (value, _) in enumerate(bad)]
    rng.shuffle(messages)
    worker = setup.worker()
    try:
        setup.produce(messages)
        status = setup.wait([(tenant, e["event_id"]) for e in valid])
        assert not status.pending
        expected = sorted(reason for _, reason in bad)
        deadline = datetime.now(UTC) + timedelta(seconds=120)
        while datetime.now(UTC) < deadline:
            rows = setup.sql(
                "SELECT reason FROM dead_letters WHERE topic = %s", setup.topics.events
            )
            if len(rows) >= len(bad):
                break
            asyncio.run(asyncio.sleep(0.5))
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
    assert sorted(r[0] for r in rows) == expected
    assert setup.sql("SELECT count(*) FROM event_ledger WHERE tenant_id = %s", tenant) == [(150,)]
    assert "Traceback" not in worker.output


def test_kill_9_mid_stream_loses_and_duplicates_nothing(setup: IngestSetup, tenant: str) -> None:
    memories, versions = 1_000, 5
    events = [
        event(tenant, f"m:{m}", v, content=f"memory {m} version {v}")
        for v in range(1, versions + 1)
        for m in range(memories)
    ]
    setup.produce(encoded(e) for e in events)
    first = setup.worker()
    deadline = datetime.now(UTC) + timedelta(seconds=180)
    while datetime.now(UTC) < deadline:
        done = setup.sql("SELECT count(*) FROM event_ledger WHERE tenant_id = %s", tenant)[0][0]
        if done >= 800:
            break
        asyncio.run(asyncio.sleep(0.2))
    first.kill()
    assert 0 < done < len(events), "the kill must land mid-stream"
    second = setup.worker()
    try:
        status = setup.wait([(tenant, e["event_id"]) for e in events], timeout=400)
    finally:
        assert second.terminate() == 0, second.output[-3000:]
    assert not status.pending and not status.dead
    assert setup.sql(
        "SELECT count(*), count(DISTINCT event_id) FROM event_ledger WHERE tenant_id = %s", tenant
    ) == [(len(events), len(events))]
    chains = setup.sql(
        "SELECT memory_key, array_agg(version ORDER BY version),"
        " array_agg(is_current ORDER BY version), bool_and(parent_id IS NOT NULL OR version = 1)"
        " FROM memory_versions WHERE tenant_id = %s GROUP BY memory_key",
        tenant,
    )
    assert len(chains) == memories
    for key, numbers, current, parents in chains:
        assert numbers == list(range(1, versions + 1)), key
        assert current == [False] * (versions - 1) + [True], key
        assert parents, key
    version_ids = {
        str(r[0])
        for r in setup.sql("SELECT version_id FROM memory_versions WHERE tenant_id = %s", tenant)
    }
    points = vector_points(setup.data_dir / "vectors", tenant)
    assert set(points) == version_ids, "exactly one vector point per version"
    assert sum(1 for p in points.values() if p["is_current"]) == memories


def test_two_workers_share_partitions_and_keep_per_memory_order(
    setup: IngestSetup, tenant: str, tmp_path: Path
) -> None:
    ports = [free_port(), free_port()]
    workers = [
        setup.worker(
            MEMSTREAM_WEB_PORT=str(ports[i]), MEMSTREAM_VECTOR_DIR=str(tmp_path / f"vectors-{i}")
        )
        for i in range(2)
    ]
    try:
        events = [event(tenant, f"o:{m}", v) for v in range(1, 11) for m in range(40)]
        setup.produce(encoded(e) for e in events)
        status = setup.wait([(tenant, e["event_id"]) for e in events])
        assigned = []
        for port in ports:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as reply:
                assigned.append(int(json.loads(reply.read())["parts"]["partitions_assigned"]))
    finally:
        for w in workers:
            assert w.terminate() == 0, w.output[-3000:]
    assert not status.pending and not status.dead
    assert all(n > 0 for n in assigned), f"each worker must own partitions: {assigned}"
    assert setup.sql(
        "SELECT count(*) FROM event_ledger WHERE tenant_id = %s AND outcome = 'late'", tenant
    ) == [(0,)], "an out-of-order arrival means per-memory order broke"
    rows = setup.sql(
        "SELECT memory_key, array_agg(valid_from ORDER BY version) FROM memory_versions"
        " WHERE tenant_id = %s GROUP BY memory_key",
        tenant,
    )
    for key, starts in rows:
        assert starts == sorted(starts), key
        assert starts[0] == BASE + timedelta(hours=1)
