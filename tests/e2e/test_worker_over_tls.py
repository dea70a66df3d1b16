"""The whole path over mutual TLS: ``memstream worker`` configured only by MEMSTREAM_KAFKA_*,
events published with ``EventPublisher`` (aiokafka), a question asked with ``MemoryClient``
(aiokafka) — against Tansu behind a TLS front that requires the CA's client certificate.
Nothing reaches the broker but through TLS (the front is the only address Tansu advertises).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstream.ops.migrate import migrate
from memstream.ops.topics import ensure_topics
from memstream.services.kafka_security import KafkaSecurity
from memstream.services.settings import Topics
from memstream.streams.client import MemoryClient
from memstream.streams.publisher import EventPublisher
from tests.conftest import unique, with_schema
from tests.e2e.ingest_kit import IngestSetup, event
from tests.e2e.processes import Process
from tests.tls_kit import TansuBehindTls, make_pki


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TansuBehindTls, KafkaSecurity]]:
    folder = tmp_path_factory.mktemp("tls")
    pki = make_pki(folder / "pki")
    broker = TansuBehindTls(folder, pki, authentication=False)
    security = KafkaSecurity.from_env(
        {
            "MEMSTREAM_KAFKA_SECURITY_PROTOCOL": "SSL",
            "MEMSTREAM_KAFKA_SSL_CA_FILE": str(pki.ca),
            "MEMSTREAM_KAFKA_SSL_CERT_FILE": str(pki.client_cert),
            "MEMSTREAM_KAFKA_SSL_KEY_FILE": str(pki.client_key),
        }
    )
    yield broker, security
    broker.stop()


def test_worker_publisher_and_client_work_over_mutual_tls(
    tls: tuple[TansuBehindTls, KafkaSecurity], machine_postgres_dsn: str, tmp_path: Path
) -> None:
    broker, security = tls
    topics = Topics(prefix=f"{unique('t')}.")
    ensure_topics(broker.bootstrap, topics.all(), security=security)
    dsn = with_schema(machine_postgres_dsn, unique("ms_"))
    migrate(dsn)
    setup = IngestSetup(broker.bootstrap, dsn, topics, tmp_path, unique("app-"))
    worker = Process(["worker"], setup.env(**security.to_env()))
    try:
        worker.wait_for("memstream ready in", timeout=180)
        tenant = f"tenant-{uuid.uuid4().hex[:8]}"
        events = [
            event(tenant, "customer:C-7", 1, content="Customer C-7 prefers delivery on Fridays"),
            event(tenant, "customer:C-8", 1, content="Customer C-8 pays by bank transfer"),
        ]

        producer_key = setup.keyring.key(tenant, "producer", ["crm"])
        agent_key = setup.keyring.key(tenant)

        async def publish() -> list[tuple[str, str]]:
            async with EventPublisher(
                broker.bootstrap, topics, credential=producer_key, security=security
            ) as publisher:
                outcome = await publisher.publish(events)
            assert not outcome.rejected
            return outcome.sent

        sent = asyncio.run(publish())
        status = setup.wait(sent, timeout=120)
        assert not status.pending and not status.dead, status

        async def ask() -> dict[str, object]:
            async with MemoryClient(
                broker.bootstrap,
                topics,
                timeout=60,
                credential=agent_key,
                security=security,
            ) as client:
                return await client.retrieve(
                    "when does customer C-7 want deliveries?", tenant, force=True
                )

        reply = asyncio.run(ask())
        assert reply["status"] == "ok", reply
        results = reply["results"]
        assert isinstance(results, list) and results
        assert results[0]["memory_key"] == "customer:C-7"
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
    assert broker.front.handshakes >= 3  # the worker's, the publisher's and the client's
