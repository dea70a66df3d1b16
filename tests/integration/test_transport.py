"""The worker's fetch pace on a real aiokafka consumer against Tansu."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer

from streams.transport import FetchPace


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
