"""The drain's view of the events topic on the bundled Tansu: the end of a partition whose last
batch holds several records (the broker's "latest offset" stops at that batch's first record),
a group's committed offsets, what is left and where, and the wait with its timeout."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition

from memstream.ops.drain import Backlog, BacklogReader, drain
from memstream.ops.topics import ensure_topics
from tests.conftest import unique


def _commit(broker: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": broker, "group.id": group, "log_level": 0})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def test_backlog_reads_the_true_end_and_the_group_position(broker: str) -> None:
    topic, group = unique("drain-"), unique("group-")
    ensure_topics(broker, {topic: 2})
    # Ten records in one batch on partition 0 (a long linger), three single batches on 1.
    batched = Producer({"bootstrap.servers": broker, "linger.ms": 200, "log_level": 0})
    for n in range(10):
        batched.produce(topic, value=b"%d" % n, partition=0)
    assert batched.flush(10) == 0
    single = Producer({"bootstrap.servers": broker, "linger.ms": 0, "log_level": 0})
    for n in range(3):
        single.produce(topic, value=b"%d" % n, partition=1)
        assert single.flush(10) == 0

    with BacklogReader(broker, group, topic) as reader:
        fresh = reader.read()
        assert fresh.partitions == {0: (0, 10), 1: (0, 3)}  # nothing committed: all left
        assert fresh.left == 13
        _commit(broker, group, topic, {0: 7, 1: 3})
        later = reader.read()
    assert later.left == 3
    assert later.where() == f"{topic}[0] offsets 7–9"


def test_drain_waits_for_the_group_and_reports_a_timeout(broker: str) -> None:
    topic, group = unique("drain-"), unique("group-")
    ensure_topics(broker, {topic: 1})
    producer = Producer({"bootstrap.servers": broker, "linger.ms": 100, "log_level": 0})
    for n in range(5):
        producer.produce(topic, value=b"%d" % n, partition=0)
    assert producer.flush(10) == 0
    _commit(broker, group, topic, {0: 2})
    seen: list[int] = []

    def report(backlog: Backlog, elapsed: float) -> None:
        seen.append(backlog.left)

    left = drain(broker, group, topic, timeout=1.0, report=report, every=0.1, poll=0.1)
    assert left.left == 3 and left.where() == f"{topic}[0] offsets 2–4"
    assert seen and seen[0] == 3, "a progress line while events are left"

    _commit(broker, group, topic, {0: 5})
    assert drain(broker, group, topic, timeout=10.0).left == 0
    stopped = drain(broker, unique("group-"), topic, timeout=60.0, stopped=lambda: True)
    assert stopped.left == 5, "a second signal ends the wait at once, with what was left"
