"""A producer keeps delivering to a topic it knew from the start when it first writes to a topic
created later (``memstream.streams.tracked``), on the real embedded broker.

aiokafka's client refreshes metadata for the topics it tracks by name only: the first send to a
new topic (a request generation's) drops every topic it knew from its first answer and never
named, and a batch already queued for one of those waits for a leader no refresh brings back.
"""

from __future__ import annotations

import asyncio
import uuid

from aiokafka import AIOKafkaProducer

from memstream.ops.topics import ensure_topics
from memstream.streams import tracked


async def _queued_then_new_topic(broker: str, *, name_first: bool) -> tuple[bool, set[str]]:
    old, new = f"t{uuid.uuid4().hex[:8]}.replies", f"t{uuid.uuid4().hex[:8]}.replies.g1"
    ensure_topics(broker, {old: 1})
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=1500)
    await producer.start()  # knows `old` from its first metadata, without naming it
    try:
        ensure_topics(broker, {new: 1})  # created after the producer started
        if name_first:
            tracked.track(producer.client, old)
        queued = await producer.send(old, b"reply", partition=0)  # held by linger
        await producer.send(new, b"reply", partition=0)  # unknown: a refresh by name
        try:
            await asyncio.wait_for(asyncio.shield(queued), 8.0)
            delivered = True
        except TimeoutError:
            delivered = False
        return delivered, set(producer.client.cluster.topics())
    finally:
        await asyncio.wait_for(producer.stop(), 30.0)


def test_a_named_topic_stays_known_and_its_queued_batch_is_delivered(broker: str) -> None:
    delivered, known = asyncio.run(_queued_then_new_topic(broker, name_first=True))
    assert delivered
    assert any(t.endswith(".replies") for t in known)


def test_forget_stops_asking_for_deleted_generations(broker: str) -> None:
    async def go() -> set[str]:
        base = f"t{uuid.uuid4().hex[:8]}.requests"
        names = [f"{base}.g{g}" for g in (5, 6, 7)]
        ensure_topics(broker, dict.fromkeys(names, 1))
        producer = AIOKafkaProducer(bootstrap_servers=broker)
        await producer.start()
        try:
            for name in names:
                tracked.track(producer.client, name)
            tracked.forget_generations_before(producer.client, base, 7)
            await producer.client.force_metadata_update()
            return set(producer.client._topics) | set(producer.client.cluster.topics())
        finally:
            await producer.stop()

    seen = asyncio.run(go())
    assert not any(t.endswith((".g5", ".g6")) for t in seen)
    assert any(t.endswith(".g7") for t in seen)
