"""Fetch pacing of the worker and the client, on real aiokafka consumers against Tansu."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from memstream.ops.topics import ensure_topics
from memstream.schemas import envelope
from memstream.services.settings import Topics
from memstream.streams.client import (
    IDLE_FETCH_WAIT_MS,
    PENDING_FETCH_WAIT_MS,
    MemoryClient,
    RetrievalTimeout,
)
from memstream.streams.transport import FetchPace


async def test_the_fetch_wait_is_short_while_requests_flow_then_idle_again(broker: str) -> None:
    pace = FetchPace(idle_ms=10, active_ms=2, active_for_s=0.3)
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, group_id=None)
    pace.attach(consumer)  # before start: aiokafka builds its fetcher with the idle wait
    await consumer.start()
    try:
        fetcher = consumer._fetcher
        assert fetcher._fetch_max_wait_ms == 10 and pace.current_ms == 10
        pace.activity()
        assert fetcher._fetch_max_wait_ms == 2
        for _ in range(3):  # requests keep coming: it stays short
            await asyncio.sleep(0.2)
            pace.activity()
        assert fetcher._fetch_max_wait_ms == 2
        await asyncio.sleep(0.5)  # quiet for longer than active_for_s
        assert fetcher._fetch_max_wait_ms == 10 and pace.current_ms == 10
        pace.activity()
        assert fetcher._fetch_max_wait_ms == 2
    finally:
        await consumer.stop()
    assert FetchPace(idle_ms=5, active_ms=8).active_ms == 5  # never longer than idle


async def test_a_pace_with_a_dormant_wait_polls_slowly_until_the_first_request_and_after_a_pause(
    broker: str,
) -> None:
    # The request generations' reader: nothing asked yet (a worker that only ingests) or
    # nothing asked for a while, and it polls at the dormant wait, not a hundred times a second.
    pace = FetchPace(idle_ms=10, active_ms=2, active_for_s=0.2, dormant_ms=100, dormant_after_s=0.6)
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, group_id=None)
    pace.attach(consumer)
    await consumer.start()
    try:
        fetcher = consumer._fetcher
        assert fetcher._fetch_max_wait_ms == 100  # no request yet
        pace.activity()
        assert fetcher._fetch_max_wait_ms == 2
        await asyncio.sleep(0.35)  # quiet past active_for_s, not past dormant_after_s
        assert fetcher._fetch_max_wait_ms == 10
        await asyncio.sleep(0.45)  # quiet past dormant_after_s
        assert fetcher._fetch_max_wait_ms == 100 and pace.current_ms == 100
        pace.activity()
        assert fetcher._fetch_max_wait_ms == 2
        pace.stalled()  # a learned floor still wins over the active wait
        assert fetcher._fetch_max_wait_ms > 2
    finally:
        await consumer.stop()
    dormant = FetchPace(idle_ms=50, dormant_ms=20, active_for_s=5, dormant_after_s=1)
    assert (dormant.dormant_ms, dormant.dormant_after_s) == (50, 5)  # never below idle's


async def test_the_client_polls_fast_only_while_a_request_awaits_its_reply(broker: str) -> None:
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=1, reply_partitions=1)
    ensure_topics(broker, topics.all())
    key = str(envelope.Credential.new(envelope.new_key_id(), b"\x09" * 32))
    async with MemoryClient(broker, topics, timeout=0.5, credential=key) as client:  # no worker
        fetcher = client._consumer._fetcher  # type: ignore[union-attr]
        assert fetcher._fetch_max_wait_ms == IDLE_FETCH_WAIT_MS
        asking = asyncio.ensure_future(client.retrieve("where is my order?", "acme"))
        await asyncio.sleep(0.2)
        assert fetcher._fetch_max_wait_ms == PENDING_FETCH_WAIT_MS
        with pytest.raises(RetrievalTimeout) as caught:
            await asking
        assert caught.value.sent  # the broker took it; no worker answered
        assert fetcher._fetch_max_wait_ms == IDLE_FETCH_WAIT_MS


async def test_a_client_whose_reply_fetches_stall_waits_longer_and_reads_again(
    broker: str,
) -> None:
    # Tansu walks a partition's batches to find a fetch's offset and answers empty when that
    # takes longer than the fetch's wait: at the end of 12,000 single-record batches a 2 ms
    # wait never sees a new record (memstream.streams.stalls). The client must notice — the
    # broker's high watermark is past its position — and wait longer, not lose every reply.
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=1, reply_partitions=1)
    ensure_topics(broker, topics.all())
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=0)
    await producer.start()
    try:
        for _ in range(12_000):  # one batch each, as the worker sends replies
            await producer.send_and_wait(topics.replies, b"x", key=b"old", partition=0)
        key = str(envelope.Credential.new(envelope.new_key_id(), b"\x09" * 32))
        async with MemoryClient(broker, topics, timeout=12, credential=key) as client:
            assert client._floor_ms == 0
            asking = asyncio.ensure_future(client.retrieve("where is my order?", "acme"))
            for _ in range(40):  # replies to others keep arriving while ours is awaited
                await producer.send_and_wait(topics.replies, b"x", key=b"other", partition=0)
                await asyncio.sleep(0.2)
                if client.late_replies >= 3:
                    break
            assert client.fetch_stalls >= 1  # the stall was seen (the wait was raised)
            assert client.late_replies >= 3  # and records are read again
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError, RetrievalTimeout):
                await asking
    finally:
        await producer.stop()
