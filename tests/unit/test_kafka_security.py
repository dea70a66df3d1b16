"""KafkaSecurity: MEMSTREAM_KAFKA_* parsed and checked, and mapped to each client library.

The mappings are checked against what each library does with them: the aiokafka options are
the keyword arguments its clients take, Faust's credentials go through Faust's own
``credentials_to_aiokafka_auth`` (what its consumer, producer and admin are built with), and
the librdkafka entries are accepted by a confluent-kafka ``Producer``.
"""

from __future__ import annotations

import inspect
import ssl
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Producer
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memstream.services.kafka_security import (
    KAFKA_ENVIRONMENT,
    KafkaSecurity,
    KafkaSecurityError,
    resolve,
)
from memstream.services.settings import Settings, SettingsError
from memstream.streams.app import broker_credentials
from memstream.streams.client import MemoryClient
from memstream.streams.producer import EventProducer
from tests.tls_kit import Pki, make_pki

PROTOCOL = "MEMSTREAM_KAFKA_SECURITY_PROTOCOL"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def sasl_ssl(pki: Pki, **extra: str) -> dict[str, str]:
    env = {
        PROTOCOL: "SASL_SSL",
        "MEMSTREAM_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
        "MEMSTREAM_KAFKA_SASL_USERNAME": "memstream-svc",
        "MEMSTREAM_KAFKA_SASL_PASSWORD": "s3cret pass",
        "MEMSTREAM_KAFKA_SSL_CA_FILE": str(pki.ca),
    }
    env.update(extra)
    return env


def test_nothing_set_is_plaintext_for_every_library() -> None:
    security = KafkaSecurity.from_env({})
    assert security == KafkaSecurity()
    assert security.aiokafka_options() == {"security_protocol": "PLAINTEXT"}
    assert security.librdkafka_config() == {"security.protocol": "plaintext"}
    assert broker_credentials(security) is None
    assert security.to_env() == {}


def test_sasl_ssl_scram_maps_to_each_library(pki: Pki) -> None:
    security = KafkaSecurity.from_env(sasl_ssl(pki))
    options = security.aiokafka_options()
    context = options.pop("ssl_context")
    assert options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "memstream-svc",
        "sasl_plain_password": "s3cret pass",
    }
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert security.librdkafka_config() == {
        "security.protocol": "sasl_ssl",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": str(pki.ca),
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "memstream-svc",
        "sasl.password": "s3cret pass",
    }
    faust = dict(credentials_to_aiokafka_auth(broker_credentials(security)))
    faust_context = faust.pop("ssl_context")
    assert faust == options  # the worker's clients get what the client library gets
    assert faust_context.verify_mode == ssl.CERT_REQUIRED and faust_context.check_hostname


def test_mutual_tls_loads_the_client_certificate(pki: Pki) -> None:
    env = {
        PROTOCOL: "SSL",
        "MEMSTREAM_KAFKA_SSL_CA_FILE": str(pki.ca),
        "MEMSTREAM_KAFKA_SSL_CERT_FILE": str(pki.client_cert),
        "MEMSTREAM_KAFKA_SSL_KEY_FILE": str(pki.client_key),
    }
    security = KafkaSecurity.from_env(env)
    assert security.librdkafka_config() == {
        "security.protocol": "ssl",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": str(pki.ca),
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key),
    }
    options = security.aiokafka_options()
    assert set(options) == {"security_protocol", "ssl_context"}
    faust = credentials_to_aiokafka_auth(broker_credentials(security))
    assert faust["security_protocol"] == "SSL" and "sasl_mechanism" not in faust


def test_without_a_ca_file_the_system_store_is_used(pki: Pki) -> None:
    env = sasl_ssl(pki)
    del env["MEMSTREAM_KAFKA_SSL_CA_FILE"]
    security = KafkaSecurity.from_env(env)
    assert security.librdkafka_config()["ssl.ca.location"] == "probe"
    Producer({"bootstrap.servers": "127.0.0.1:1", **security.librdkafka_config()})
    assert security.ssl_context().verify_mode == ssl.CERT_REQUIRED


def test_sasl_plaintext_scram_and_the_default_mechanism() -> None:
    env = {
        PROTOCOL: "sasl_plaintext",
        "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
        "MEMSTREAM_KAFKA_SASL_PASSWORD": "p",
    }
    security = KafkaSecurity.from_env(env)
    assert security.aiokafka_options() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
    }
    assert security.librdkafka_config()["sasl.mechanism"] == "SCRAM-SHA-512"
    faust = credentials_to_aiokafka_auth(broker_credentials(security))
    assert faust["security_protocol"] == "SASL_PLAINTEXT" and faust["ssl_context"] is None


def test_each_library_accepts_the_mapping(pki: Pki) -> None:
    """The option names are the libraries' own: aiokafka's signatures take them, and
    librdkafka accepts every entry (it refuses an unknown or misspelled property)."""
    security = KafkaSecurity.from_env(sasl_ssl(pki))
    for client in (AIOKafkaProducer, AIOKafkaConsumer):
        accepted = inspect.signature(client.__init__).parameters
        assert set(security.aiokafka_options()) <= set(accepted), client
    Producer({"bootstrap.servers": "127.0.0.1:1", **security.librdkafka_config()})


def test_a_password_file_is_read_and_travels_as_its_path(pki: Pki, tmp_path: Path) -> None:
    secret = tmp_path / "kafka-password"
    secret.write_text("from-a-secret\n")
    env = sasl_ssl(pki, MEMSTREAM_KAFKA_SASL_PASSWORD_FILE=str(secret))
    del env["MEMSTREAM_KAFKA_SASL_PASSWORD"]
    security = KafkaSecurity.from_env(env)
    assert security.password == "from-a-secret"  # the file's newline is not the password's
    child = security.to_env()
    assert child["MEMSTREAM_KAFKA_SASL_PASSWORD_FILE"] == str(secret)
    assert "MEMSTREAM_KAFKA_SASL_PASSWORD" not in child
    assert KafkaSecurity.from_env(child) == security


def test_settings_carry_the_security_to_child_processes(pki: Pki) -> None:
    env = sasl_ssl(pki, MEMSTREAM_BROKER="kafka-1:9094,kafka-2:9094")
    settings = Settings.from_env(env)
    assert settings.kafka == KafkaSecurity.from_env(env)
    assert Settings.from_env(settings.to_env()) == settings


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({PROTOCOL: "TLS"}, "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        ({PROTOCOL: "SASL_SSL", "MEMSTREAM_KAFKA_SASL_PASSWORD": "p"}, "SASL_USERNAME"),
        ({PROTOCOL: "SASL_SSL", "MEMSTREAM_KAFKA_SASL_USERNAME": "u"}, "SASL_PASSWORD_FILE"),
        (
            {
                PROTOCOL: "SASL_PLAINTEXT",
                "MEMSTREAM_KAFKA_SASL_MECHANISM": "PLAIN",
                "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
                "MEMSTREAM_KAFKA_SASL_PASSWORD": "p",
            },
            "clear text",
        ),
        (
            {
                PROTOCOL: "SASL_SSL",
                "MEMSTREAM_KAFKA_SASL_MECHANISM": "GSSAPI",
                "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
                "MEMSTREAM_KAFKA_SASL_PASSWORD": "p",
            },
            "SCRAM-SHA-512, SCRAM-SHA-256, PLAIN",
        ),
        ({"MEMSTREAM_KAFKA_SASL_USERNAME": "u"}, "sends no credentials"),
        ({PROTOCOL: "SSL", "MEMSTREAM_KAFKA_SASL_PASSWORD": "p"}, "sends no credentials"),
        ({"MEMSTREAM_KAFKA_SSL_CA_FILE": "/etc/ssl/ca.pem"}, "does not use TLS"),
        ({PROTOCOL: "SSL", "MEMSTREAM_KAFKA_SSL_CA_FILE": "/nonexistent/ca.pem"}, "no such"),
        (
            {
                PROTOCOL: "SASL_SSL",
                "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
                "MEMSTREAM_KAFKA_SASL_PASSWORD_FILE": "/nonexistent/password",
            },
            "cannot be read",
        ),
    ],
)
def test_bad_combinations_fail_at_start_naming_the_variable(
    env: dict[str, str], fragment: str
) -> None:
    with pytest.raises(KafkaSecurityError, match=fragment) as caught:
        KafkaSecurity.from_env(env)
    assert "MEMSTREAM_KAFKA_" in str(caught.value)
    with pytest.raises(SettingsError, match=fragment):  # the same through Settings
        Settings.from_env({"MEMSTREAM_BROKER": "kafka:9094", **env})


def test_file_errors_are_found_before_any_connection(pki: Pki, tmp_path: Path) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate")
    with pytest.raises(KafkaSecurityError, match="not a PEM CA"):
        KafkaSecurity.from_env({PROTOCOL: "SSL", "MEMSTREAM_KAFKA_SSL_CA_FILE": str(not_pem)})
    with pytest.raises(KafkaSecurityError, match="both"):
        KafkaSecurity.from_env(
            {PROTOCOL: "SSL", "MEMSTREAM_KAFKA_SSL_CERT_FILE": str(pki.client_cert)}
        )
    other = make_pki(tmp_path / "other", "other CA")
    with pytest.raises(KafkaSecurityError, match="not a matching"):
        KafkaSecurity.from_env(
            {
                PROTOCOL: "SSL",
                "MEMSTREAM_KAFKA_SSL_CERT_FILE": str(pki.client_cert),
                "MEMSTREAM_KAFKA_SSL_KEY_FILE": str(other.client_key),
            }
        )
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(KafkaSecurityError, match="is empty"):
        KafkaSecurity.from_env(
            {
                PROTOCOL: "SASL_SSL",
                "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
                "MEMSTREAM_KAFKA_SASL_PASSWORD_FILE": str(empty),
            }
        )
    with pytest.raises(KafkaSecurityError, match="not both"):
        KafkaSecurity.from_env(
            {
                PROTOCOL: "SASL_SSL",
                "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
                "MEMSTREAM_KAFKA_SASL_PASSWORD": "p",
                "MEMSTREAM_KAFKA_SASL_PASSWORD_FILE": str(empty),
            }
        )


def test_the_embedded_broker_takes_no_security_settings(pki: Pki) -> None:
    with pytest.raises(SettingsError, match="needs MEMSTREAM_BROKER"):
        Settings.from_env(sasl_ssl(pki))


@settings(max_examples=60, deadline=None)
@given(password=st.text(min_size=8, max_size=40).filter(lambda p: p.strip() == p))
def test_the_password_is_in_no_repr_and_no_error(password: str) -> None:
    """Whatever the password, it appears in no repr of the value or of the settings, and
    in no error message (a missing username, PLAIN in clear text)."""
    env = {
        PROTOCOL: "SASL_SSL",
        "MEMSTREAM_BROKER": "kafka:9094",
        "MEMSTREAM_KAFKA_SASL_USERNAME": "u",
        "MEMSTREAM_KAFKA_SASL_PASSWORD": password,
    }
    security = KafkaSecurity.from_env(env)
    assert security.password == password
    # A password that is a piece of the settings' own text ("redis_ur") says nothing: skip it.
    other = {**env, "MEMSTREAM_KAFKA_SASL_PASSWORD": "-" * 8}
    plain = (repr(KafkaSecurity.from_env(other)), repr(Settings.from_env(other)))
    assume(not any(password in text for text in plain))
    for text in (repr(security), str(security), repr(Settings.from_env(env))):
        assert password not in text
    for bad in (
        {**env, "MEMSTREAM_KAFKA_SASL_USERNAME": ""},
        {**env, PROTOCOL: "SASL_PLAINTEXT", "MEMSTREAM_KAFKA_SASL_MECHANISM": "PLAIN"},
        {**env, PROTOCOL: "SSL"},
    ):
        with pytest.raises(KafkaSecurityError) as caught:
            KafkaSecurity.from_env(bad)
        with pytest.raises(KafkaSecurityError) as placeholder:
            KafkaSecurity.from_env({**bad, "MEMSTREAM_KAFKA_SASL_PASSWORD": "-" * 8})
        assert password not in str(caught.value) or password in str(placeholder.value)


def test_client_libraries_read_the_environment_when_given_no_security(
    monkeypatch: pytest.MonkeyPatch, pki: Pki
) -> None:
    """An agent's process configures ``MemoryClient`` / ``EventProducer`` by environment, as
    it does ``MEMSTREAM_KEY``; a bad value fails when the client is built."""
    for name, value in sasl_ssl(pki).items():
        monkeypatch.setenv(name, value)
    assert resolve(None) == KafkaSecurity.from_env(sasl_ssl(pki))
    explicit = KafkaSecurity()
    assert resolve(explicit) is explicit
    monkeypatch.setenv(PROTOCOL, "SASL_PLAINTEXT")
    monkeypatch.setenv("MEMSTREAM_KAFKA_SASL_MECHANISM", "PLAIN")
    monkeypatch.delenv("MEMSTREAM_KAFKA_SSL_CA_FILE")
    with pytest.raises(KafkaSecurityError, match="clear text"):
        MemoryClient("127.0.0.1:1")
    with pytest.raises(KafkaSecurityError, match="clear text"):
        EventProducer("127.0.0.1:1")


def test_every_variable_is_in_the_command_line_help() -> None:
    from memstream.cli import _parser

    text = _parser().format_help()
    for name, _ in KAFKA_ENVIRONMENT:
        assert name in text


def test_docker_compose_worker_settings_match_the_listener_it_connects_to(
    pki: Pki, tmp_path: Path
) -> None:
    """docker-compose.yml (not run here) gives the worker only settings memstream reads, and
    they name the protocol and mechanism of the broker listener on MEMSTREAM_BROKER's port."""
    import yaml

    from memstream.services.settings import ENVIRONMENT

    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    kafka = compose["services"]["kafka"]["environment"]
    worker = compose["services"]["worker"]["environment"]
    known = {name for name, _, _ in ENVIRONMENT} | {name for name, _ in KAFKA_ENVIRONMENT}
    assert {k for k in worker if k.startswith("MEMSTREAM_")} <= known
    port = worker["MEMSTREAM_BROKER"].rsplit(":", 1)[1]
    listeners = dict(
        reversed(item.split("://")) for item in kafka["KAFKA_LISTENERS"].split(",")
    )  # ":9096" → "WORKER"
    name = listeners[f":{port}"]
    protocol_map = kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    protocols = dict(item.split(":") for item in protocol_map.split(","))
    assert worker["MEMSTREAM_KAFKA_SECURITY_PROTOCOL"] == protocols[name]
    assert worker["MEMSTREAM_KAFKA_SASL_MECHANISM"] in kafka["KAFKA_SASL_ENABLED_MECHANISMS"]
    password = tmp_path / "password"
    password.write_text("worker-secret\n")
    env = dict(worker)  # the container's files, replaced by this test's own
    env["MEMSTREAM_KAFKA_SASL_PASSWORD_FILE"] = str(password)
    env["MEMSTREAM_KAFKA_SSL_CA_FILE"] = str(pki.ca)
    security = Settings.from_env(env).kafka
    assert security.protocol == "SASL_SSL" and security.username == "memstream-worker"
