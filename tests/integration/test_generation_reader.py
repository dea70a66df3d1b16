"""The worker's reader of the request generations, on real Tansu: a partition handed from one
worker to another is read on from where the first stopped (memstream.streams.generations)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from memstream.ops.topics import ensure_topics
from memstream.services.domain import generations as gens
from memstream.services.settings import Settings, Topics
from memstream.streams.generations import GenerationReader


async def _until(check: Any, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_partition_handed_over_is_read_on_where_the_last_owner_stopped(
    broker: str,
) -> None:
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=2, reply_partitions=2)
    ensure_topics(broker, topics.all())
    settings = Settings(broker=broker, topics=topics, app_id=f"app-{uuid.uuid4().hex[:8]}")
    settings = settings.with_rotation(True)
    seen: dict[str, list[tuple[str, int, int]]] = {"a": [], "b": []}

    def reader(name: str) -> GenerationReader:
        async def handle(message: Any) -> None:
            seen[name].append((message.topic, message.partition, message.offset))

        return GenerationReader(settings, handle, concurrency=4)

    a, b = reader("a"), reader("b")
    a.own([0, 1])
    running = [asyncio.ensure_future(a.run())]
    await _until(lambda: a.live)  # the current and next generations exist now
    topic = gens.named(topics.requests, gens.generation(int(time.time() * 1000), a.period_ms))
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=0)
    await producer.start()
    try:
        for n in range(40):
            await producer.send_and_wait(topic, b"r", key=str(n).encode(), partition=n % 2)
        await _until(lambda: len(seen["a"]) == 40)
        await a.disown([1])  # a rebalance: partition 1 goes to b; a commits where it stopped
        for n in range(40, 80):
            await producer.send_and_wait(topic, b"r", key=str(n).encode(), partition=n % 2)
        b.own([1])
        running.append(asyncio.ensure_future(b.run()))
        await _until(lambda: len(seen["a"]) + len(seen["b"]) >= 80)
        await asyncio.sleep(1.0)  # nothing read twice turns up late
    finally:
        await producer.stop()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    everything = seen["a"] + seen["b"]
    assert len(everything) == len(set(everything)) == 80  # every request once, none twice
    assert {p for _, p, _ in seen["b"]} == {1} and len(seen["b"]) == 20  # b: only what was new
    assert all(t == topic for t, _, _ in everything)


async def test_a_request_unanswered_when_its_partition_moves_is_read_again_not_skipped(
    broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstream.streams import generations as reader_module

    monkeypatch.setattr(reader_module, "DRAIN_SECONDS", 0.5)
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=1, reply_partitions=1)
    ensure_topics(broker, topics.all())
    settings = Settings(broker=broker, topics=topics, app_id=f"app-{uuid.uuid4().hex[:8]}")
    settings = settings.with_rotation(True)
    stuck = asyncio.Event()  # never set: the first owner never answers record 3
    seen: dict[str, list[int]] = {"a": [], "b": []}

    async def handle_a(message: Any) -> None:
        if message.key == b"3":
            await stuck.wait()
        seen["a"].append(message.offset)

    async def handle_b(message: Any) -> None:
        seen["b"].append(message.offset)

    a = GenerationReader(settings, handle_a, concurrency=4)
    b = GenerationReader(settings, handle_b, concurrency=4)
    a.own([0])
    running = [asyncio.ensure_future(a.run())]
    await _until(lambda: a.live)
    topic = gens.named(topics.requests, gens.generation(int(time.time() * 1000), a.period_ms))
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=0)
    await producer.start()
    try:
        for n in range(6):
            await producer.send_and_wait(topic, b"r", key=str(n).encode(), partition=0)
        await _until(lambda: len(seen["a"]) == 5)  # all but the stuck one
        await a.disown([0])  # waits DRAIN_SECONDS, then commits before the stuck request
        b.own([0])
        running.append(asyncio.ensure_future(b.run()))
        await _until(lambda: 3 in seen["b"])
        await asyncio.sleep(0.5)
    finally:
        await producer.stop()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    assert sorted(seen["a"]) == [0, 1, 2, 4, 5]
    assert seen["b"][0] == 3  # read again from the first unanswered request: not skipped


async def test_a_closed_reader_answers_what_it_was_handed_and_the_next_owner_reads_on_at_once(
    broker: str,
) -> None:
    """A worker that stops closes its reader first (``Worker.on_stop``): the requests it was
    handed are answered, the rest are read by the next owner from where it stopped, right
    away (no group session to wait out), none lost and none answered twice."""
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=2, reply_partitions=2)
    ensure_topics(broker, topics.all())
    settings = Settings(broker=broker, topics=topics, app_id=f"app-{uuid.uuid4().hex[:8]}")
    settings = settings.with_rotation(True)
    started: list[int] = []
    answered: dict[str, list[int]] = {"a": [], "b": []}
    answered_at: dict[int, float] = {}

    def reader(name: str, delay: float) -> GenerationReader:
        async def handle(message: Any) -> None:
            started.append(int(message.key))
            await asyncio.sleep(delay)  # a request being answered when the stop comes
            answered[name].append(int(message.key))
            answered_at[int(message.key)] = time.monotonic()

        return GenerationReader(settings, handle, concurrency=4)

    a, b = reader("a", 0.5), reader("b", 0.0)
    a.own([0, 1])
    running = [asyncio.ensure_future(a.run())]
    await _until(lambda: a.live)
    topic = gens.named(topics.requests, gens.generation(int(time.time() * 1000), a.period_ms))
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=0)
    await producer.start()

    async def send(n: int) -> None:
        await producer.send_and_wait(topic, b"r", key=str(n).encode(), partition=n % 2)

    try:
        for n in range(20):
            await send(n)
        await _until(lambda: len(started) >= 4)  # handed over, not yet answered
        await a.close()
        assert running[0].done()  # run() returned: consumer stopped
        assert sorted(answered["a"]) == sorted(started)  # what it was handed: answered
        assert len(answered["a"]) < 20  # the rest was left to the next owner
        await a.close()  # idempotent
        await asyncio.wait_for(a.disown([0, 1]), 1.0)  # a late revocation does not wait
        for n in range(20, 30):  # sent while no reader owns the partitions
            await send(n)
        b.own([0, 1])  # the group's rebalance hands them over
        running.append(asyncio.ensure_future(b.run()))
        sent = time.monotonic()
        await send(30)
        await _until(lambda: 30 in answered_at, 10.0)
        took = answered_at[30] - sent
        await _until(lambda: len(answered["a"]) + len(answered["b"]) >= 31)
        await asyncio.sleep(1.0)  # nothing answered twice turns up late
    finally:
        await producer.stop()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    everything = answered["a"] + answered["b"]
    assert sorted(everything) == list(range(31))  # none lost, none twice
    assert set(range(20, 31)) <= set(answered["b"])
    assert took < 5.0, f"the request after the hand-over took {took:.1f}s"


async def test_a_reader_closed_before_it_ran_never_reads(broker: str) -> None:
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:8]}.", partitions=1, reply_partitions=1)
    settings = Settings(broker=broker, topics=topics, app_id=f"app-{uuid.uuid4().hex[:8]}")
    settings = settings.with_rotation(True)

    async def handle(message: Any) -> None:
        raise AssertionError("a closed reader handed a request over")

    reader = GenerationReader(settings, handle, concurrency=1)
    reader.own([0])
    await reader.close()
    await reader.close()
    await asyncio.wait_for(reader.run(), 1.0)  # returns at once: nothing started
    assert not reader.live
