"""Erasure as an operator runs it, on the real stack: a worker consuming Tansu, ``memstream
forget`` / ``history`` / ``replay`` as processes, and a ``forget`` killed with SIGKILL.

While a worker holds the tenant's Qdrant Edge shard, ``forget`` commits the erasure in Postgres
and hands the rest to the worker as an ``op: ERASE`` event. Afterwards neither re-publishing the
original events nor replaying the ledger or the topic brings the subject back, and a replayed
copy verifies identical to the live store.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from memstream.schemas.envelope import Credential
from memstream.services.adapters.qdrant_edge import shard_dir_name
from memstream.streams.client import MemoryClient
from tests.conftest import drop_schema, unique
from tests.e2e.ingest_kit import IngestSetup, make_setup
from tests.e2e.processes import ROOT, guard, memstream_env, run_cli
from tests.integration.erasure_kit import Subject, avro, event, needles, pg_dump, raw_count

TIMEOUT = 240
REDIS = "redis://127.0.0.1:6379/0"


@dataclass
class Live:
    setup: IngestSetup
    server: str
    tenant: str
    subjects: tuple[Subject, Subject]
    messages: list[tuple[bytes, bytes]]
    schemas: list[str] = field(default_factory=list)

    def cli(self, *args: str) -> tuple[int, str]:
        done = run_cli(list(args), self.setup.env(), timeout=TIMEOUT)
        return done.returncode, done.stdout + done.stderr

    def shard(self) -> Any:
        return self.setup.data_dir / "vectors" / shard_dir_name(self.tenant)

    def wait_completed(self, timeout: float = 90) -> list[tuple[Any, ...]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.setup.sql(
                "SELECT erasure_id, completed_at FROM erasure_log WHERE tenant_id = %s", self.tenant
            )
            if rows and all(r[1] is not None for r in rows):
                return rows
            time.sleep(0.5)
        raise AssertionError(f"erasures of {self.tenant} not completed: {rows}")


def ask(setup: IngestSetup, query: str, tenant: str) -> dict[str, Any]:
    key = setup.keyring.key(tenant)

    async def go() -> dict[str, Any]:
        async with MemoryClient(
            setup.broker, setup.topics, timeout=guard(30), credential=key
        ) as client:
            return await client.retrieve(query, tenant, force=True, limit=10)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def live(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("erasure"), 1)
    tenant = unique("tenant-")
    subjects = (Subject(tenant), Subject(tenant))
    raws = [*subjects[0].events(), *subjects[1].events()[:3]]
    messages = [avro(r) for r in raws]
    setup.produce(messages)
    admin = setup.keyring.key(tenant, "admin")
    worker = setup.worker()
    state = Live(setup, machine_postgres_dsn, tenant, subjects, messages)
    try:
        status = setup.wait([(tenant, r["event_id"]) for r in raws])
        assert not status.pending and not status.dead, status
        for s in subjects:
            reply = ask(setup, f"where does {s.canary} live?", tenant)
            assert s.canary in json.dumps(reply["results"], default=str)
        code, output = state.cli(
            "forget", "--tenant", tenant, "--entity", subjects[0].entity,
            "--reason", "request 114", "--key", admin, "--json",
        )  # fmt: skip
        assert code == 0, output
        [line] = [x for x in output.splitlines() if x.startswith("{")]
        result = json.loads(line)
        assert result["counts"]["versions"] == 3 and result["pending"], result
        assert result["handed_to_worker"], result  # the worker holds the shard
        # A producer's credential may publish, not erase: refused, dead-lettered, nothing erased.
        rogue = event(tenant, "", "rogue", entity=subjects[1].entity, op="ERASE", fact_type="x")
        setup.produce([avro(rogue)])
        assert setup.wait([(tenant, rogue["event_id"])]).dead
        try:
            state.wait_completed()
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{worker.output[-3000:]}") from None
        # Every original event published again, then a marker to know the worker read them.
        marker = event(tenant, unique("marker-"), "marker note", entity="customer:M")
        setup.produce([*messages[:5], avro(marker)])
        assert not setup.wait([(tenant, marker["event_id"])]).pending
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
    yield state
    for name in [*re.findall(r"search_path=(\w+)", setup.dsn), *state.schemas]:
        drop_schema(machine_postgres_dsn, name)


def test_forget_through_the_worker_leaves_nothing_and_redelivery_brings_nothing_back(
    live: Live,
) -> None:
    s, other = live.subjects
    [(requested_by, reason)] = live.setup.sql(
        "SELECT requested_by, reason FROM erasure_log WHERE tenant_id = %s", live.tenant
    )
    admin = Credential.parse(live.setup.keyring.key(live.tenant, "admin"))
    assert (requested_by, reason) == (admin.key_id, "request 114")
    dump = pg_dump(live.setup.dsn)
    for needle in needles(s):
        assert dump.count(needle) == 0, needle
        assert raw_count(live.shard(), needle) == 0, needle
    assert dump.count(other.canary.encode()) > 0  # the other subject is all there
    assert live.setup.sql(
        "SELECT count(*) FROM memory_versions WHERE tenant_id = %s AND erased_at IS NULL"
        " AND content LIKE %s", live.tenant, f"%{other.canary}%"
    ) == [(3,)]  # fmt: skip
    code, output = live.cli("history", s.profile, "--tenant", live.tenant, "--json")
    assert code == 0, output
    versions = [json.loads(line) for line in output.strip().splitlines()]
    assert [v["erased"]["reason"] for v in versions] == ["request 114", "request 114"]
    assert all(v["content"] == "" and len(v["erased"]["content_sha256"]) == 64 for v in versions)
    code, output = live.cli("history", s.profile, "--tenant", live.tenant)
    assert code == 0 and "[erased " in output and s.canary not in output, output


@pytest.mark.parametrize("source", ["ledger", "topic"])
def test_a_replayed_copy_has_no_subject_and_verifies_identical(live: Live, source: str) -> None:
    name = unique("er_")
    live.schemas.append(name)
    extra = ["--from-topic"] if source == "topic" else []
    code, output = live.cli("replay", *extra, "--into-schema", name, "--no-vectors")
    assert code == 0, output
    s = live.subjects[0]
    rows = live.setup.sql(
        f"SELECT count(*) FROM {name}.memory_versions WHERE content LIKE %s"
        " OR entity_id = %s", f"%{s.canary}%", s.id
    )  # fmt: skip
    assert rows == [(0,)]
    ledger = live.setup.sql(f"SELECT count(*) FROM {name}.event_ledger WHERE payload::text"
                            " LIKE %s", f"%{s.canary}%")  # fmt: skip
    assert ledger == [(0,)]
    code, output = live.cli("replay", "--verify", "--into-schema", name)
    assert code == 0 and "identical" in output, output


def test_a_forget_killed_mid_transaction_leaves_nothing_half_done(live: Live) -> None:
    s = live.subjects[1]
    env = memstream_env(live.setup.env())
    before = live.setup.sql("SELECT version_id, content FROM memory_versions ORDER BY 1")
    with psycopg.connect(live.setup.dsn) as blocker:
        # The erasure's last statements wait behind this lock, its first ones already done.
        blocker.execute("LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE")
        proc = subprocess.Popen(
            [sys.executable, "-m", "memstream.cli", "forget", "--tenant", live.tenant,
             "--entity", s.entity, "--actor", "admin-key-1"],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            waiting = live.setup.sql(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE %s", "DELETE FROM dead_letters%"
            )  # fmt: skip
            if waiting[0][0]:
                break
            time.sleep(0.2)
        else:
            proc.kill()
            raise AssertionError("forget never reached the dead letters")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        blocker.rollback()
    time.sleep(1.0)
    assert live.setup.sql("SELECT version_id, content FROM memory_versions ORDER BY 1") == before
    assert live.setup.sql("SELECT count(*) FROM erasure_log WHERE tenant_id = %s", live.tenant) == [
        (1,)
    ]

    code, output = live.cli("forget", "--tenant", live.tenant, "--entity", s.entity)
    assert code == 0 and "completed 1 erasure" in output, output
    dump = pg_dump(live.setup.dsn)
    for needle in needles(s):
        assert dump.count(needle) == 0
        assert raw_count(live.shard(), needle) == 0
    code, output = live.cli("forget", "--tenant", live.tenant, "--entity", s.entity)
    assert code == 0 and "nothing to erase" in output, output
