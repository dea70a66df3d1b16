"""A request read again gets no second reply, on the real worker over Tansu.

A consumer reads a record again when its committed offset is behind what it answered: a worker
that stops before its commit, a rebalance while requests are in flight. Here the request
generations' reader's offsets are set back to the start after a worker answered every request
and stopped; the next worker reads each request again and answers none of them twice (the
nonce's claim remembers where its record was read: without that, 11 of 11 were answered again
with "token replayed"), while a new request is answered.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from memstream.streams.client import MemoryClient
from tests.e2e.ingest_kit import IngestSetup, make_setup
from tests.e2e.processes import Process, guard

REQUESTS = 12
# Requests after a client's first go to the generations of the requests topic (read by the
# generations' reader, whose offsets can be set from outside: its group has no members).
WORKER = {"MEMSTREAM_LOG_LEVEL": "info", "MEMSTREAM_ROTATE_SECONDS": "600"}


async def _ask(setup: IngestSetup, key: str, tenant: str, n: int) -> list[dict[str, object]]:
    async with MemoryClient(setup.broker, setup.topics, timeout=guard(60), credential=key) as c:
        replies = [await c.retrieve(f"what did C-{i} order?", tenant, force=True) for i in range(n)]
        assert c.late_replies == 0
    return replies


def _partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]


def _wait_lines(process: Process, fragment: str, count: int, seconds: float) -> int:
    """Until ``process`` has printed ``fragment`` ``count`` times (or ``seconds`` passed)."""
    deadline = time.monotonic() + seconds
    while process.output.count(fragment) < count and time.monotonic() < deadline:
        time.sleep(0.5)
    return process.output.count(fragment)


async def _rewind(setup: IngestSetup) -> int:
    """Set the offsets of the request generations' reader back to 0; the records there."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=setup.broker,
        group_id=f"{setup.app_id}.generations",  # the reader's: offsets only, never joined
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        prefix = f"{setup.topics.requests}.g"
        names = sorted(t for t in await consumer.topics() if t.startswith(prefix))
        parts = [tp for name in names for tp in _partitions(consumer, name)]
        assert parts, f"no request generations ({prefix}*)"
        consumer.assign(parts)
        ends = await consumer.end_offsets(parts)
        await consumer.commit({tp: 0 for tp in parts})
        assert all([await consumer.committed(tp) == 0 for tp in parts])
        return sum(ends.values())
    finally:
        await consumer.stop()


async def _replies(setup: IngestSetup, request_ids: set[str], stop: asyncio.Event) -> int:
    """How many records keyed by ``request_ids`` arrive on the replies topic or its
    generations from now until ``stop`` is set."""
    base = setup.topics.replies
    consumer = AIOKafkaConsumer(bootstrap_servers=setup.broker, enable_auto_commit=False)
    await consumer.start()
    try:
        names = [t for t in await consumer.topics() if t == base or t.startswith(f"{base}.g")]
        parts = [tp for name in sorted(names) for tp in _partitions(consumer, name)]
        assert len(names) >= 2, names  # the configured topic and its generations
        consumer.assign(parts)
        await consumer.seek_to_end(*parts)
        for tp in parts:
            await consumer.position(tp)
        seen = 0
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            seen += sum(
                1 for ms in batches.values() for m in ms if (m.key or b"").decode() in request_ids
            )
        return seen
    finally:
        await consumer.stop()


def test_requests_read_again_by_the_next_worker_are_not_answered_twice(
    broker: str, machine_postgres_dsn: str, tmp_path: Path
) -> None:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path)
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    key = setup.keyring.key(tenant)
    first = setup.worker(**WORKER)
    try:
        replies = asyncio.run(_ask(setup, key, tenant, REQUESTS))
    finally:
        assert first.terminate() == 0, first.output[-3000:]
    ids = {str(r["request_id"]) for r in replies}
    assert len(ids) == REQUESTS and all(r["status"] in ("ok", "skipped") for r in replies)
    rewound = asyncio.run(_rewind(setup))  # the client's first request went to the base topic
    assert rewound == REQUESTS - 1, rewound

    async def watch_and_restart() -> tuple[int, int, str]:
        stop = asyncio.Event()
        watching = asyncio.create_task(_replies(setup, ids, stop))
        await asyncio.sleep(1.0)
        second = await asyncio.to_thread(setup.worker, **WORKER)
        try:
            await asyncio.to_thread(_wait_lines, second, "read again", rewound, guard(60))
            fresh = await _ask(setup, key, tenant, 1)  # the worker answers what is new
            assert fresh[0]["status"] in ("ok", "skipped"), fresh
            await asyncio.sleep(3.0)  # a second reply to any request would arrive meanwhile
        finally:
            stop.set()
            assert await asyncio.to_thread(second.terminate) == 0, second.output[-3000:]
        return await watching, second.output.count("read again"), second.output

    answered_again, read_again, output = asyncio.run(watch_and_restart())
    assert answered_again == 0, f"{answered_again} of {rewound} requests answered twice"
    assert read_again == rewound, output[-3000:]  # each was read again, and said so
    rows = setup.sql(
        "SELECT request_id, count(*) FROM query_log WHERE request_id = ANY(%s) GROUP BY 1",
        sorted(ids),
    )
    assert {str(r[0]): r[1] for r in rows} == {i: 1 for i in ids}
