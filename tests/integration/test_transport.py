"""Fetch pacing of the worker and the client, on real aiokafka consumers against Tansu."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer

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
        with pytest.raises(RetrievalTimeout):
            await asking
        assert fetcher._fetch_max_wait_ms == IDLE_FETCH_WAIT_MS
