"""Topic provisioning: every topic memstream uses, created with its partition count if missing.

Tansu gives an auto-created topic 4 partitions whatever Faust expects, so nothing is left to
auto-creation. An existing topic with a different partition count is reported, not altered.
Must not import handlers or streams.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from memstream.services.kafka_security import KafkaSecurity, resolve


class TopicError(RuntimeError):
    pass


def _admin(bootstrap: str, security: KafkaSecurity | None) -> AdminClient:
    """``security`` None: ``MEMSTREAM_KAFKA_*``, as ``Settings.kafka`` reads them."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 0}
    return AdminClient(config | resolve(security).librdkafka_config())


def ensure_topics(
    bootstrap: str,
    topics: dict[str, int],
    timeout: float = 10.0,
    *,
    strict: bool = True,
    security: KafkaSecurity | None = None,
) -> list[str]:
    """Create the missing topics; return the names created now. ``strict``: an existing topic
    with another partition count is an error (else it is left as it is)."""
    admin = _admin(bootstrap, security)
    existing = admin.list_topics(timeout=timeout).topics
    wrong = {
        name: len(existing[name].partitions)
        for name, partitions in topics.items()
        if strict and name in existing and len(existing[name].partitions) != partitions
    }
    if wrong:
        raise TopicError(
            "topics exist with other partition counts than configured: "
            + ", ".join(f"{n} has {p}, expected {topics[n]}" for n, p in wrong.items())
        )
    missing = [NewTopic(n, p, 1) for n, p in topics.items() if n not in existing]
    created: list[str] = []
    if not missing:
        return created
    for name, future in admin.create_topics(missing, operation_timeout=timeout).items():
        try:
            future.result(timeout)
            created.append(name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicError(f"cannot create topic {name}: {exc}") from exc
    return created


def partition_counts(
    bootstrap: str, timeout: float = 10.0, *, security: KafkaSecurity | None = None
) -> dict[str, int]:
    admin = _admin(bootstrap, security)
    return {n: len(t.partitions) for n, t in admin.list_topics(timeout=timeout).topics.items()}
