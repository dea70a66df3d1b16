"""The transient topics' generations on Tansu: requests keep flowing through the turns, every
one is answered, and a generation past its grace is deleted (memstream.streams.generations)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest

from memstream.ops.topics import partition_counts
from memstream.services.domain import generations as gens
from memstream.streams.client import MemoryClient
from tests.e2e.ingest_kit import IngestSetup, encoded, event, make_setup
from tests.e2e.processes import Process, guard

PERIOD_S = 10
GRACE_S = 20  # longer than any request waits here, on a loaded machine too
LANES = 4


@pytest.fixture(scope="module")
def stack(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[IngestSetup, Process, str]]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("rotation"))
    worker = setup.worker(
        MEMSTREAM_ROTATE_SECONDS=str(PERIOD_S), MEMSTREAM_ROTATE_GRACE_SECONDS=str(GRACE_S)
    )
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    events = [
        event(tenant, f"order:C-{n % 5}", n, content=f"Customer C-{n % 5} ordered item {n}")
        for n in range(20)
    ]
    setup.produce(encoded(e) for e in events)
    status = setup.wait([(e["tenant_id"], e["event_id"]) for e in events], timeout=120)
    assert not status.pending and not status.dead, status
    yield setup, worker, tenant
    assert worker.terminate() == 0, worker.output[-3000:]


def test_requests_flow_through_generation_turns_and_old_generations_are_deleted(
    stack: tuple[IngestSetup, Process, str],
) -> None:
    setup, worker, tenant = stack
    period_ms = PERIOD_S * 1000
    key = setup.keyring.key(tenant)

    async def run() -> tuple[list[str], set[str], int]:
        statuses: list[str] = []
        topics_used: set[str] = set()
        async with MemoryClient(setup.broker, setup.topics, timeout=guard(30), credential=key) as c:
            first = await c.retrieve("what did C-1 order?", tenant, force=True)
            assert first["rotation_ms"] == period_ms  # told, sealed, by the worker
            statuses.append(first["status"])
            start_gen = gens.generation(int(time.time() * 1000), period_ms)
            until = time.monotonic() + 2.5 * PERIOD_S  # at least two turns while asking

            async def lane(n: int) -> None:
                while time.monotonic() < until:
                    topics_used.add(c._route()[0])
                    reply = await c.retrieve(f"what did C-{n} order?", tenant, force=True)
                    statuses.append(
                        reply["status"] if reply["status"] == "ok" else str(reply["error"])
                    )

            await asyncio.gather(*(lane(n) for n in range(LANES)))
            assert c.late_replies == 0 and c.forged_replies == 0
        return statuses, topics_used, start_gen

    statuses, used, start_gen = asyncio.run(run())
    assert statuses and all(s == "ok" for s in statuses), [s for s in statuses if s != "ok"]
    requests = setup.topics.requests
    assert len(used) >= 3, used  # the configured topic's answer, then generations in turn
    assert gens.named(requests, start_gen) in used
    logged = setup.sql("SELECT count(*) FROM query_log")[0][0]
    assert logged == len(statuses)  # each request answered once, through the turns

    # The first generation asked on is deleted once it is past its grace (the worker's upkeep
    # runs every 5 s), with its replies topic; the current one stays.
    old = {gens.named(requests, start_gen), gens.named(setup.topics.replies, start_gen)}
    deadline = time.monotonic() + guard((PERIOD_S + GRACE_S) * 2 + 15)
    while time.monotonic() < deadline:
        names = set(partition_counts(setup.broker))
        if not old & names:
            break
        time.sleep(1)
    names = set(partition_counts(setup.broker))
    assert not old & names, sorted(n for n in names if ".g" in n)
    now_gen = gens.generation(int(time.time() * 1000), period_ms)
    assert gens.named(requests, now_gen) in names
    assert worker.proc.poll() is None, worker.output[-3000:]
