"""EventProducer: MemoryEvents to the broker with the idempotent librdkafka producer.

The one produce / poll / flush loop (``memstream publish``, the demo, the benches): each event
encoded as its Avro record (``streams.records``), keyed ``tenant|memory_key``, signed by the
``headers`` callback when one is given, acks from every
replica, a full local queue drained rather than failed. ``finish`` waits for the broker and
says how many events it did not take. Needs only confluent-kafka (the client install).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaException, Producer

from memstream.schemas.codec import encode
from memstream.services.domain.model import MemoryEvent
from memstream.services.kafka_security import KafkaSecurity, resolve
from memstream.streams.records import event_key, event_record

# (tenant_id, encoded value, event_id) → the record's headers (the producer's signed token).
Headers = Callable[[str, bytes, str], Sequence[tuple[str, bytes]]]
kafka_log = logging.getLogger("memstream.kafka")


class EventProducer:
    def __init__(
        self,
        broker: str,
        headers: Headers | None = None,
        *,
        security: KafkaSecurity | None = None,
    ) -> None:
        """``security`` None: ``MEMSTREAM_KAFKA_*`` (``memstream.services.kafka_security``)."""
        self._headers = headers
        if kafka_log.level == logging.NOTSET:  # silent unless a caller set a level
            kafka_log.setLevel(logging.CRITICAL)
        self._producer = Producer(
            {
                "bootstrap.servers": broker,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                # librdkafka's own log (a line per failed connection attempt) goes to our
                # logger, which shows warnings only: the user gets one line from the caller.
                "logger": kafka_log,
                "log_level": 3,
                **resolve(security).librdkafka_config(),
            }
        )
        self.failures: list[str] = []

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures.append(str(error))

    def unreachable(self, timeout: float) -> str | None:
        """None when the broker answers within ``timeout`` s, else why not."""
        try:
            self._producer.list_topics(timeout=timeout)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            return str(error.str()) if hasattr(error, "str") else str(error)
        return None

    def send(self, topic: str, event: MemoryEvent) -> None:
        value = encode("MemoryEvent", event_record(event))
        headers: Sequence[tuple[str, bytes]] = ()
        if self._headers is not None:
            headers = self._headers(event.tenant_id, value, event.event_id)
        self.send_raw(topic, event_key(event), value, headers)

    def send_raw(
        self, topic: str, key: bytes, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        """An already encoded record (an ``op: ERASE`` hand-off is no ``MemoryEvent``)."""
        listed: list[tuple[str, str | bytes | None]] | None = list(headers) or None
        while True:
            try:
                self._producer.produce(
                    topic,
                    key=key,
                    value=value,
                    headers=listed,
                    on_delivery=self._delivered,
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.1)
        self._producer.poll(0)

    def finish(self, timeout: float) -> int:
        """Wait up to ``timeout`` s for the broker's acks; the events it did not take."""
        return int(self._producer.flush(timeout)) + len(self.failures)
