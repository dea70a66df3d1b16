"""What the worker has not yet taken from the events topic, and waiting for it before a stop.

The embedded broker keeps its topics in memory, so an event it acknowledged is on the broker
only until the worker records it in the ledger. ``up`` stops in this order: the doors close
(no new events), the worker drains the events topic, then the broker stops. ``drain`` is the
middle step: it polls the worker group's committed offsets against the end of each events
partition until none is left, or the timeout passes.

The end of a partition is read, not asked for: Tansu's "latest offset" is the base offset of a
partition's last record batch plus one, short of the end when that batch holds several records
(a producer's linger batches them). So the last batch is fetched and its last offset taken.
Must not import handlers or streams.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, TopicPartition

READ_SECONDS = 2.0  # reading the last batch of a partition takes this long at most


class DrainError(RuntimeError):
    """The broker could not be asked where the worker stands (the message says why)."""


@dataclass(frozen=True)
class Backlog:
    """Per partition of ``topic``: (the group's committed offset, the partition's end)."""

    topic: str
    partitions: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def left(self) -> int:
        return sum(max(0, end - done) for done, end in self.partitions.values())

    def where(self) -> str:
        """``memory.events[0] offsets 120–339, …``: the records not taken yet."""
        spans = [
            f"{self.topic}[{p}] offsets {done}–{end - 1}"
            for p, (done, end) in sorted(self.partitions.items())
            if end > done
        ]
        return ", ".join(spans) or "none"


class BacklogReader:
    """Reads the committed offsets of ``group`` and the end of each partition of ``topic``."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._topic = topic
        self._group = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
             "log_level": 0}
        )  # fmt: skip
        # A group of its own for reading the last batches: the worker's is never joined.
        self._reader = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"drain-{uuid.uuid4().hex}",
             "enable.auto.commit": False, "fetch.wait.max.ms": 10, "log_level": 0}
        )  # fmt: skip

    def close(self) -> None:
        self._group.close()
        self._reader.close()

    def __enter__(self) -> BacklogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, timeout: float = 10.0) -> Backlog:
        try:
            listed = self._group.list_topics(self._topic, timeout=timeout).topics[self._topic]
            if listed.error is not None:
                raise DrainError(f"topic {self._topic}: {listed.error}")
            parts = [TopicPartition(self._topic, p) for p in sorted(listed.partitions)]
            committed = self._group.committed(parts, timeout=timeout)
            found: dict[int, tuple[int, int]] = {}
            for tp in committed:
                low, reported = self._group.get_watermark_offsets(
                    TopicPartition(self._topic, tp.partition), timeout=timeout
                )
                done = tp.offset if tp.offset != OFFSET_INVALID else low  # nothing committed
                end = self._end(tp.partition, low, reported)
                found[tp.partition] = (min(done, end), end)
        except KafkaException as exc:
            raise DrainError(f"cannot read {self._topic} on the broker: {exc}") from exc
        return Backlog(self._topic, found)

    def _end(self, partition: int, low: int, reported: int) -> int:
        """One past the partition's last offset: ``reported`` (the broker's latest offset)
        may point just past the first record of the last batch; read that batch."""
        if reported <= low:
            return reported
        self._reader.assign([TopicPartition(self._topic, partition, reported - 1)])
        end = reported
        deadline = time.monotonic() + READ_SECONDS
        seen = False
        while time.monotonic() < deadline:
            # consume() waits out its timeout unless it fills ``num_messages``: short calls.
            messages = self._reader.consume(10_000, timeout=0.05)
            good = [o for m in messages if m.error() is None and (o := m.offset()) is not None]
            if not good:
                if seen:
                    break
                continue
            seen = True
            end = max(end, max(good) + 1)
        self._reader.unassign()
        return end


def drain(
    bootstrap: str,
    group: str,
    topic: str,
    *,
    timeout: float,
    report: Callable[[Backlog, float], None] | None = None,
    every: float = 2.0,
    poll: float = 0.5,
    stopped: Callable[[], bool] = lambda: False,
) -> Backlog:
    """Wait until ``group`` has committed every record of ``topic``, ``timeout`` s at most, or
    until ``stopped()``; return the backlog last seen (empty when drained). ``report`` gets
    the backlog and the seconds elapsed at once, then every ``every`` s, while some is left."""
    started = time.monotonic()
    last_report: float | None = None
    with BacklogReader(bootstrap, group, topic) as reader:
        while True:
            backlog = reader.read()
            now = time.monotonic()
            if not backlog.left:
                return backlog
            if report is not None and (last_report is None or now - last_report >= every):
                report(backlog, now - started)
                last_report = now
            if now - started >= timeout or stopped():
                return backlog
            time.sleep(poll)
