"""A request the worker cannot serve (its PostgreSQL is gone) gets an error reply, never silence,
and /health says the worker is degraded while it cannot serve."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from memstream.ops.migrate import migrate
from memstream.ops.stack import EmbeddedStack, free_port
from memstream.ops.topics import ensure_topics
from memstream.services.settings import Settings, Topics
from memstream.streams.client import MemoryClient
from tests.conftest import MACHINE_REDIS, unique
from tests.e2e.ingest_kit import IngestSetup, encoded, event
from tests.e2e.processes import guard


def _health(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_request_during_a_postgres_outage_gets_an_error_reply(
    broker: str, data_dir: Path, tmp_path: Path, tenant: str
) -> None:
    database = Settings(data_dir=data_dir, broker=broker, redis_url=MACHINE_REDIS)
    stack = EmbeddedStack(database, write_runtime=False)
    dsn = stack.start().postgres_dsn
    assert dsn is not None
    migrate(dsn)
    topics = Topics(prefix=f"{unique('t')}.")
    ensure_topics(broker, topics.all())
    setup = IngestSetup(broker, dsn, topics, tmp_path / "worker", unique("app-"))
    port = free_port()
    worker = setup.worker(MEMSTREAM_WEB_PORT=str(port))
    events = [event(tenant, f"a:{i}", 1) for i in range(5)]
    key = setup.keyring.key(tenant)

    async def _ask(query: str) -> dict[str, Any]:
        async with MemoryClient(broker, topics, timeout=guard(30), credential=key) as client:
            return await client.retrieve(query, tenant, force=True)

    def ask(query: str) -> dict[str, Any]:
        return asyncio.run(_ask(query))

    try:
        setup.produce(encoded(e) for e in events)
        assert not setup.wait([(tenant, e["event_id"]) for e in events], timeout=120).pending
        assert ask("what does the customer prefer?")["status"] == "ok"
        assert _health(port)[0] == 200
        stack.stop()  # the database goes away under the running worker
        started = time.monotonic()
        reply = ask("what did the customer prefer on day 3?")
        assert reply["status"] == "error", reply
        assert reply["error"]["code"] == "unavailable", reply
        assert time.monotonic() - started < 25
        status, health = _health(port)
        assert status == 503 and health["status"] == "degraded", health
        assert health["parts"]["requests"].startswith("failing: 1 requests"), health
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
        stack.stop()
