from pathlib import Path

import pytest

from memstream.services.settings import ENVIRONMENT, Settings, SettingsError


def test_unset_means_every_embedded_default() -> None:
    settings = Settings.from_env({})
    assert settings.broker is None
    assert settings.postgres_dsn is None
    assert settings.redis_url is None
    assert settings.qdrant_url is None
    assert settings.data_dir == Path(".memstream")
    assert settings.vector_root == Path(".memstream/vectors")
    assert settings.topics.events == "memory.events"
    assert settings.topics.all()["memory.events.dlq"] == 1
    assert settings.encoder == "onnx"
    assert settings.model_cache_dir == Path("~/.cache/memstream/models").expanduser()


def test_external_parts_are_picked_when_set() -> None:
    settings = Settings.from_env(
        {
            "MEMSTREAM_BROKER": "kafka-1:9092,kafka-2:9092",
            "MEMSTREAM_POSTGRES_DSN": "postgresql://postgres@127.0.0.1:5432/test",
            "MEMSTREAM_REDIS_URL": "redis://127.0.0.1:6379/0",
            "MEMSTREAM_QDRANT_URL": "http://qdrant:6333",
            "MEMSTREAM_DATA_DIR": "/srv/memstream",
            "MEMSTREAM_TOPIC_PREFIX": "acme.",
            "MEMSTREAM_PARTITIONS": "12",
        }
    )
    assert settings.broker == "kafka-1:9092,kafka-2:9092"
    assert settings.postgres_dsn == "postgresql://postgres@127.0.0.1:5432/test"
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.qdrant_url == "http://qdrant:6333"
    assert settings.topics.all() == {
        "acme.events": 12,
        "acme.events.dlq": 1,
        "acme.changes": 12,
        "acme.requests": 12,
        "acme.requests.dlq": 1,
        "acme.replies": 4,
        "acme.scores": 12,
    }


def test_round_trip_through_the_environment() -> None:
    settings = Settings.from_env({"MEMSTREAM_BROKER": "b:1", "MEMSTREAM_WEB_PORT": "0"})
    assert Settings.from_env(settings.to_env()) == settings


def test_resolved_endpoints_never_override_what_was_set() -> None:
    settings = Settings.from_env({"MEMSTREAM_POSTGRES_DSN": "postgresql://x/y"})
    resolved = settings.with_endpoints(broker="127.0.0.1:1", postgres_dsn="other", redis_url="r")
    assert resolved.postgres_dsn == "postgresql://x/y"
    assert resolved.broker == "127.0.0.1:1"


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("MEMSTREAM_PARTITIONS", "many", "not an integer"),
        ("MEMSTREAM_PARTITIONS", "0", "out of range"),
        ("MEMSTREAM_ROTATE_SECONDS", "5", "0 \\(off\\) or ≥ 10"),
        ("MEMSTREAM_WEB_PORT", "70000", "out of range"),
        ("MEMSTREAM_LOG_LEVEL", "loud", "MEMSTREAM_LOG_LEVEL"),
        ("MEMSTREAM_ENCODER", "tensorrt", "onnx, onnx-int8, torch"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str, fragment: str) -> None:
    with pytest.raises(SettingsError, match=fragment) as caught:
        Settings.from_env({name: value})
    assert name in str(caught.value)


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for name, _, _ in ENVIRONMENT:
        assert f"`{name}`" in readme, f"{name} is missing from the README's settings table"


def test_every_variable_read_is_listed_and_round_trips() -> None:
    listed = {name for name, _, _ in ENVIRONMENT}
    resolved = Settings(
        broker="b:9092",
        postgres_dsn="dbname=x",
        redis_url="redis://r",
        rescore_seconds=7,
        fetch_wait_ms=3,
        encoder="onnx-int8",
        model_cache=Path("/srv/models"),
    )
    env = resolved.to_env()
    assert set(env) <= listed, set(env) - listed
    assert Settings.from_env(env) == resolved


def test_rotation_is_on_with_the_embedded_broker_and_off_with_kafka_unless_set() -> None:
    unset = Settings.from_env({})
    assert unset.rotate_seconds is None and unset.rotate_ms == 0
    assert unset.with_rotation(embedded_broker=True).rotate_ms == 60_000
    assert unset.with_rotation(embedded_broker=False).rotate_ms == 0
    off = Settings.from_env({"MEMSTREAM_ROTATE_SECONDS": "0"})
    assert off.with_rotation(embedded_broker=True).rotate_ms == 0  # an explicit choice stays
    on = Settings.from_env({"MEMSTREAM_ROTATE_SECONDS": "30"})
    assert on.with_rotation(embedded_broker=False).rotate_ms == 30_000
    again = Settings.from_env(on.to_env())  # a worker process gets the same
    assert again.rotate_seconds == 30 and again.rotate_grace_seconds == 960
