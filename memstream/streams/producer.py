"""EventProducer: MemoryEvents to the broker with the idempotent librdkafka producer.

The one produce / poll / flush loop (``memstream publish``, the demo, the benches): each event
encoded as its Avro record (``schemas.records``), keyed ``tenant|memory_key``, acks from every
replica, a full local queue drained rather than failed. ``finish`` waits for the broker and
says how many events it did not take. Needs only confluent-kafka (the client install).
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer

from memstream.schemas.codec import encode
from memstream.services.domain.model import MemoryEvent
from memstream.streams.records import event_key, event_record


class EventProducer:
    def __init__(self, broker: str) -> None:
        self._producer = Producer(
            {
                "bootstrap.servers": broker,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "log_level": 3,
            }
        )
        self.failures: list[str] = []

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures.append(str(error))

    def send(self, topic: str, event: MemoryEvent) -> None:
        value = encode("MemoryEvent", event_record(event))
        while True:
            try:
                self._producer.produce(
                    topic, key=event_key(event), value=value, on_delivery=self._delivered
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.1)
        self._producer.poll(0)

    def finish(self, timeout: float) -> int:
        """Wait up to ``timeout`` s for the broker's acks; the events it did not take."""
        return int(self._producer.flush(timeout)) + len(self.failures)
