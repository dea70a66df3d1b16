"""KafkaTopicReader: explicit offset ranges of one topic, read with aiokafka (``replay
--from-topic``). No consumer group, nothing committed; a range the broker no longer holds is
refused in one line. Implements ``services.ports.TopicReader``. Must not import handlers or
streams.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import OffsetOutOfRangeError

from memstream.services.kafka_security import KafkaSecurity
from memstream.services.ports import OffsetRange, Refused, TopicRecord

IDLE_END_S = 3.0  # an open range ends when the partition gives nothing for this long
STALL_S = 30.0  # a bounded range that stops giving records is an error after this long


class KafkaTopicReader:
    """Reads explicit offset ranges of one topic (no consumer group, nothing committed)."""

    def __init__(self, broker: str, topic: str, security: KafkaSecurity | None = None) -> None:
        """``security``: the connection's TLS/SASL (``Settings.kafka``; None: plaintext)."""
        security = security or KafkaSecurity()
        self._topic = topic
        self._ranges: dict[int, OffsetRange] = {}
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=broker,
            group_id=None,
            client_id=f"memstream-replay-{uuid.uuid4().hex[:8]}",
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=200,
            max_partition_fetch_bytes=4 * 1024 * 1024,
            **security.aiokafka_options(),
        )
        self._open: set[int] = set()
        self._last_seen = time.monotonic()

    async def open(self, partitions: Sequence[int]) -> None:
        """Connect; refuse, in one line, a topic or a partition the broker does not have."""
        await self._consumer.start()
        known = self._consumer.partitions_for_topic(self._topic)
        problem = None
        if known is None:
            problem = Refused(
                "replay", f"the broker has no topic {self._topic}",
                "name the topic the events were published to (--topic), or replay from the "
                "ledger (without --from-topic)",
            )  # fmt: skip
        elif missing := sorted(set(partitions) - set(known)):
            problem = Refused(
                "replay", f"topic {self._topic} has no partition {missing[0]}",
                f"its partitions are {', '.join(map(str, sorted(known)))}",
            )  # fmt: skip
        if problem is not None:
            await self.stop()
            raise problem

    def read(self, ranges: Sequence[OffsetRange]) -> None:
        """Read these ranges from now on (``next_batch``)."""
        self._ranges = {r.partition: r for r in ranges}
        parts = [TopicPartition(self._topic, p) for p in self._ranges]
        self._consumer.assign(parts)
        for tp in parts:
            self._consumer.seek(tp, self._ranges[tp.partition].first)
        self._open = set(self._ranges)
        self._last_seen = time.monotonic()

    async def stop(self) -> None:
        try:
            await self._consumer.stop()
        except asyncio.CancelledError:
            # aiokafka cancels its own committed-offsets task on a stop right after a start,
            # and that cancellation escapes stop(); only a cancellation of ours goes on.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise

    async def next_batch(self, size: int) -> dict[int, list[TopicRecord]]:
        """The next records of the open ranges by partition; {} once every range is read."""
        while self._open:
            try:
                got = await self._consumer.getmany(
                    *[TopicPartition(self._topic, p) for p in self._open],
                    timeout_ms=500,
                    max_records=size,
                )
            except OffsetOutOfRangeError as exc:
                raise Refused(
                    "replay", f"the broker no longer holds those offsets of {self._topic} ({exc})",
                    "replay from the ledger (without --from-topic): Tansu keeps nothing across a "
                    "restart",
                ) from None  # fmt: skip
            batch: dict[int, list[TopicRecord]] = {}
            for tp, messages in got.items():
                wanted = self._ranges[tp.partition]
                keep = [m for m in messages if wanted.last is None or m.offset <= wanted.last]
                if keep:
                    batch[tp.partition] = [
                        TopicRecord(m.key, m.value, m.offset, m.timestamp) for m in keep
                    ]
                if wanted.last is not None and messages and messages[-1].offset >= wanted.last:
                    self._close(tp.partition)
            if batch:
                self._last_seen = time.monotonic()
                return batch
            self._close_idle()
        return {}

    def _close(self, partition: int) -> None:
        self._open.discard(partition)
        self._consumer.pause(TopicPartition(self._topic, partition))

    def _close_idle(self) -> None:
        idle = time.monotonic() - self._last_seen
        for partition in list(self._open):
            wanted = self._ranges[partition]
            if wanted.last is None and idle >= IDLE_END_S:
                self._close(partition)  # an open range ends where the partition does
            elif wanted.last is not None and idle >= STALL_S:
                position = self._consumer.highwater(TopicPartition(self._topic, partition))
                raise Refused(
                    "replay", f"partition {partition} of {self._topic} gave no record for "
                    f"{STALL_S:.0f} s before offset {wanted.last} (high watermark {position})",
                    "the broker no longer holds them (Tansu keeps nothing across a restart): "
                    "replay from the ledger (without --from-topic)",
                )  # fmt: skip
