"""Every Kafka client memstream runs, over TLS and SASL, against a real broker.

The broker is the bundled Tansu behind a TLS front of the test's own (``tests.tls_kit``: the
bundled build cannot serve TLS itself), which requires a client certificate signed by the
test's CA: librdkafka (topic provisioning, the health check, ``EventProducer``), aiokafka
(``KafkaTopicReader``; ``MemoryClient`` and ``EventPublisher`` in the e2e test) and Faust's
producer each connect with nothing but ``KafkaSecurity``'s mapping, verify the broker's
certificate and present their own. A wrong CA, a missing client certificate and a plaintext
client are refused.

SASL: Tansu started with ``--authentication`` offers SCRAM-SHA-256/512 only (no PLAIN) and, on
its memory and s3 engines (the only ones built in), keeps no SCRAM credentials (its
``upsert_user_scram_credential`` does nothing), so no user can log in. What can be shown here:
with the SCRAM settings each client runs the SCRAM exchange with the configured mechanism and
user over TLS, and the broker refuses the unknown user; without SASL settings the broker
refuses every request. A successful SCRAM login needs a broker that stores users (Apache
Kafka: docker-compose.yml's SASL_SSL listener), which cannot be started here.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from memstream.ops.health import check_broker
from memstream.ops.parts import StackError
from memstream.ops.topics import ensure_topics
from memstream.services.adapters.kafka_reader import KafkaTopicReader
from memstream.services.kafka_security import KafkaSecurity
from memstream.services.ports import OffsetRange
from memstream.services.settings import Settings
from memstream.streams.app import create_app
from memstream.streams.producer import EventProducer
from tests.conftest import unique
from tests.tls_kit import Pki, TansuBehindTls, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TansuBehindTls]:
    broker = TansuBehindTls(tmp_path_factory.mktemp("tansu"), pki, authentication=False)
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TansuBehindTls]:
    broker = TansuBehindTls(tmp_path_factory.mktemp("tansu"), pki, authentication=True)
    yield broker
    broker.stop()


def mutual_tls(pki: Pki) -> KafkaSecurity:
    return KafkaSecurity.from_env(
        {
            "MEMSTREAM_KAFKA_SECURITY_PROTOCOL": "SSL",
            "MEMSTREAM_KAFKA_SSL_CA_FILE": str(pki.ca),
            "MEMSTREAM_KAFKA_SSL_CERT_FILE": str(pki.client_cert),
            "MEMSTREAM_KAFKA_SSL_KEY_FILE": str(pki.client_key),
        }
    )


def test_librdkafka_aiokafka_and_faust_clients_speak_mutual_tls(
    tls_broker: TansuBehindTls, pki: Pki
) -> None:
    security = mutual_tls(pki)
    topic = unique("tls.")
    before = tls_broker.front.handshakes
    assert check_broker(tls_broker.bootstrap, security=security).startswith("ok")
    assert ensure_topics(tls_broker.bootstrap, {topic: 1}, security=security) == [topic]

    producer = EventProducer(tls_broker.bootstrap, security=security)  # librdkafka
    for n in range(3):
        producer.send_raw(topic, f"k{n}".encode(), f"librdkafka {n}".encode())
    assert producer.finish(30) == 0

    settings = replace(Settings(broker=tls_broker.bootstrap, web_port=0), kafka=security)
    app = create_app(settings)  # Faust's producer, built from its broker_credentials

    async def faust_send() -> None:
        await app.producer.start()
        try:
            await app.producer.send_and_wait(
                topic, b"faust", b"faust 3", partition=0, timestamp=None, headers=None
            )
        finally:
            await app.producer.stop()

    asyncio.run(faust_send())

    async def read_back() -> list[bytes]:
        reader = KafkaTopicReader(tls_broker.bootstrap, topic, security)  # aiokafka
        await reader.open([0])
        try:
            reader.read([OffsetRange(0, 0, 3)])
            values: list[bytes] = []
            while batch := await reader.next_batch(10):
                values += [r.value for r in batch.get(0, [])]
            return values
        finally:
            await reader.stop()

    assert asyncio.run(read_back()) == [
        b"librdkafka 0",
        b"librdkafka 1",
        b"librdkafka 2",
        b"faust 3",
    ]
    assert tls_broker.front.handshakes > before  # every byte went through the TLS front


def test_a_broker_certificate_from_another_ca_is_refused(
    tls_broker: TansuBehindTls, pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = make_pki(tmp_path, "some other CA")
    wrong = replace(mutual_tls(pki), ca_file=other.ca)
    with pytest.raises(StackError, match="cannot reach Kafka"):
        check_broker(tls_broker.bootstrap, timeout=3, security=wrong)
    with caplog.at_level(logging.ERROR, logger="aiokafka"):
        assert aiokafka_start(tls_broker.bootstrap, wrong) == "KafkaConnectionError"
    assert "CERTIFICATE_VERIFY_FAILED" in caplog.text


def test_without_a_client_certificate_or_tls_the_front_refuses(
    tls_broker: TansuBehindTls, pki: Pki
) -> None:
    no_cert = KafkaSecurity(protocol="SSL", ca_file=pki.ca)
    assert aiokafka_start(tls_broker.bootstrap, no_cert) != "ok"
    assert aiokafka_start(tls_broker.bootstrap, KafkaSecurity()) != "ok"
    assert aiokafka_start(tls_broker.bootstrap, mutual_tls(pki)) == "ok"


def aiokafka_failure(bootstrap: str, security: KafkaSecurity) -> list[str]:
    """The functions on the traceback of an aiokafka producer's failed start."""

    async def start() -> list[str]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **security.aiokafka_options())
        try:
            await asyncio.wait_for(producer.start(), 8)
        except Exception as exc:
            return [frame.name for frame in traceback.extract_tb(exc.__traceback__)]
        finally:
            await producer.stop()
        return []

    return asyncio.run(start())


def aiokafka_start(bootstrap: str, security: KafkaSecurity) -> str:
    """'ok', or the name of the error that stopped an aiokafka producer from starting."""

    async def start() -> str:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, request_timeout_ms=4000, **security.aiokafka_options()
        )
        try:
            await asyncio.wait_for(producer.start(), 8)
            return "ok"
        except Exception as exc:
            cause = exc.__cause__ or exc.__context__ or exc
            return type(cause).__name__ if cause is not exc else type(exc).__name__
        finally:
            await producer.stop()

    return asyncio.run(start())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
def test_scram_settings_run_the_scram_exchange_with_the_broker(
    sasl_broker: TansuBehindTls, pki: Pki, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    security = replace(
        mutual_tls(pki),
        protocol="SASL_SSL",
        mechanism=mechanism,
        username="memstream-svc",
        password="not-stored-by-this-broker",
    )
    security.check()
    librdkafka = logging.getLogger("test.librdkafka")
    admin = AdminClient(
        {"bootstrap.servers": sasl_broker.bootstrap, "logger": librdkafka, "log_level": 3}
        | security.librdkafka_config()
    )
    with caplog.at_level(logging.ERROR), pytest.raises(KafkaException):
        admin.list_topics(timeout=4)
    admin.poll(0.5)  # serve the logs librdkafka queued
    # librdkafka ran the broker's SCRAM exchange over TLS, and the broker answered that it
    # has no such user (this Tansu stores none): the settings took effect on the wire.
    assert "SASL SCRAM authentication failed: broker responded with unknown-user" in caplog.text
    # aiokafka too ran the SCRAM exchange to its last step, where Tansu's refusal (``e=``
    # where aiokafka expects the server's signature ``v=``) fails inside its authenticator.
    assert "authenticator_scram" in aiokafka_failure(sasl_broker.bootstrap, security)


def test_a_broker_that_requires_sasl_refuses_a_client_without_it(
    sasl_broker: TansuBehindTls, pki: Pki
) -> None:
    assert aiokafka_start(sasl_broker.bootstrap, mutual_tls(pki)) != "ok"
    with pytest.raises(StackError):
        check_broker(sasl_broker.bootstrap, timeout=3, security=mutual_tls(pki))
