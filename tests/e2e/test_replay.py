"""``memstream replay``: rebuilding derived state from the Postgres ledger, end to end.

A live history (two tenants, supersessions, a late event, a RETRACT, a memory without a key) is
ingested once per PostgreSQL through ``LocalMemstream`` (the real write path, the bundled model,
Qdrant Edge, the machine's Redis); every replay then runs as the user runs it, as a
``memstream replay`` subprocess, and is checked against the live chains and checksums.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstream.ops.local import LocalMemstream
from memstream.ops.migrate import migrate
from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.adapters.postgres_ledger import schema_dsn
from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
from memstream.services.domain.versioning import known_at
from memstream.services.settings import Settings
from tests.conftest import MACHINE_REDIS, drop_schema, unique, with_schema
from tests.e2e.ingest_kit import BASE
from tests.e2e.processes import Process, run_cli

QUESTIONS = (
    "Which delivery day does customer C-3 prefer?",
    "What did the warranty note about the X1 phone say?",
    "customer complaint about the coffee grinder",
)
TIMEOUT = 240


def _event(tenant: str, key: str | None, n: int, content: str, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "event_id": f"{key or 'nokey'}#{n}-{uuid.uuid4().hex[:6]}",
        "tenant_id": tenant,
        "entity_type": "customer",
        "entity_id": f"C-{n % 9}",
        "fact_type": "note",
        "content": content,
        "source_system": "crm",
        "occurred_at": (BASE + timedelta(hours=n)).isoformat(),
    }
    if key is not None:
        raw["memory_key"] = key
    raw.update(extra)
    return raw


ITEMS = ["XR-500 headphones", "X1 phone", "trail shoes", "coffee grinder", "standing desk"]


def history(tenant: str, other: str) -> list[list[dict[str, Any]]]:
    """Three ingest rounds (so that received_at spreads): first versions, then supersessions
    and a late event, then a RETRACT and more news."""
    first = [
        _event(
            tenant,
            f"pref:C-{i}",
            i,
            f"Customer C-{i} prefers delivery on day {i % 7}; asked about the {ITEMS[i % 5]}",
            entity_id=f"C-{i}",
        )
        for i in range(20)
    ]
    first += [
        _event(other, f"note:{i}", i, f"Tenant two, note {i}: {ITEMS[i % 5]}") for i in range(15)
    ]
    first.append(_event(tenant, None, 3, "A one-off remark about the rain jacket colour"))
    second = [
        _event(
            tenant,
            f"pref:C-{i % 20}",
            100 + i,
            f"Customer C-{i % 20} now prefers day {(i + 3) % 7}; warranty on the {ITEMS[i % 5]}"
            " was extended",
            entity_id=f"C-{i % 20}",
        )
        for i in range(40)
    ]
    second.append(_event(tenant, "pref:C-5", -50, "Late: an old preference of C-5 for day 6"))
    second += [_event(other, f"note:{i}", 100 + i, f"Tenant two, update {i}") for i in range(10)]
    complaint = {"fact_type": "complaint", "entity_id": "C-3"}
    third = [
        _event(tenant, "pref:C-7", 300, "", op="RETRACT"),
        _event(tenant, "complaint:C-3", 310, "C-3 says the coffee grinder is loud", **complaint),
        _event(tenant, "complaint:C-3", 320, "C-3's grinder complaint was resolved", **complaint),
    ]
    third += [_event(tenant, f"pref:C-{i}", 400 + i, f"C-{i} moved to weekends") for i in range(8)]
    return [first, second, third]


@dataclass
class Live:
    server: str
    dsn: str
    settings: Settings
    tenants: tuple[str, str]
    answers: dict[str, list[tuple[str, int]]]
    total: int
    copies: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return self.settings.to_env()

    def cli(self, *args: str) -> tuple[int, str]:
        done = run_cli(["replay", *args], self.env, timeout=TIMEOUT)
        return done.returncode, done.stdout + done.stderr

    def copy_name(self) -> str:
        self.copies.append(unique("rp_"))
        return self.copies[-1]

    def sql(self, dsn: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(dsn) as conn:
            return conn.execute(query.encode(), params).fetchall()


def ranked(reply: dict[str, Any]) -> list[tuple[str, int]]:
    assert reply["status"] == "ok", reply
    return [(r["memory_key"], r["version"]) for r in reply["results"]]


async def _ask(settings: Settings, tenant: str, *, fresh: bool) -> dict[str, list[tuple[str, int]]]:
    local = await LocalMemstream.start(settings)
    try:
        if fresh:
            await local.container.cache.invalidate_tenant(tenant)
        answers = {}
        for question in QUESTIONS:
            reply = await local.retrieve(
                {"request_id": uuid.uuid4().hex, "tenant_id": tenant, "query": question,
                 "limit": 8, "force": True}
            )  # fmt: skip
            assert "cache_hit" not in reply["latency_ms"], reply["latency_ms"]
            answers[question] = ranked(reply)
        return answers
    finally:
        await local.stop()


@pytest.fixture(scope="module")
def live(postgres_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    schema = unique("ms_")
    dsn = with_schema(postgres_server, schema)
    migrate(dsn)
    data_dir = tmp_path_factory.mktemp("replay")
    settings = Settings(data_dir=data_dir, postgres_dsn=dsn, redis_url=MACHINE_REDIS, web_port=0)
    tenants = (unique("tenant-"), unique("tenant-"))

    async def ingest() -> dict[str, list[tuple[str, int]]]:
        local = await LocalMemstream.start(settings)
        try:
            for batch in history(*tenants):
                report = await local.ingest(batch, batch=16)
                assert not report.dead, report.dead
        finally:
            await local.stop()
        return await _ask(settings, tenants[0], fresh=True)

    total = sum(len(batch) for batch in history(*tenants))
    state = Live(postgres_server, dsn, settings, tenants, asyncio.run(ingest()), total)
    yield state
    for name in [schema, *state.copies]:
        drop_schema(postgres_server, name)


def verified(live: Live, *args: str) -> dict[str, str]:
    """``replay --verify …`` must report identical state; returns the sha256 per tenant."""
    code, output = live.cli("--verify", *args)
    assert code == 0, output
    found = dict(re.findall(r"tenant (\S+) · identical · sha256 ([0-9a-f]{64})", output))
    assert set(found) >= set(live.tenants[: 1 if "--tenant" in args else 2]), output
    return found


@pytest.fixture(scope="module")
def reference(live: Live) -> dict[str, str]:
    """An uninterrupted replay of the whole ledger (with vectors), verified: its checksums."""
    name = live.copy_name()
    code, output = live.cli("--into-schema", name)
    assert code == 0, output
    assert f"replay: {live.total} events replayed into" in output, output
    return verified(live, "--into-schema", name)


def test_full_replay_reproduces_every_tenant_checksum_for_checksum(
    live: Live, reference: dict[str, str]
) -> None:
    name = live.copies[0]
    copy = schema_dsn(live.server, name)
    ledger = (
        'SELECT tenant_id, event_id, received_at, topic, "partition", "offset", outcome,'
        " version_id, payload FROM event_ledger ORDER BY 1, 2"
    )
    assert live.sql(copy, ledger) == live.sql(live.dsn, ledger)
    versions = (
        "SELECT m.version_id, version, parent_id, valid_from, valid_to, is_current, {} FROM"
        " memory_versions m JOIN event_ledger l USING (tenant_id, event_id) ORDER BY 1"
    )
    # The copy's transaction time is the ledger's received_at of each event.
    assert live.sql(copy, versions.format("m.recorded_at")) == live.sql(
        live.dsn, versions.format("l.received_at")
    )
    outcomes = dict(live.sql(copy, "SELECT outcome, count(*) FROM event_ledger GROUP BY 1"))
    assert outcomes.keys() == {"current", "late", "retracted"}, outcomes
    # Vectors: one point per UPSERT version, in a root of the copy's own.
    assert (live.settings.data_dir / f"replay-{name}").is_dir()
    assert set(reference) == set(live.tenants)
    # Replaying again is a no-op that still verifies identical.
    code, output = live.cli("--into-schema", name)
    assert code == 0 and "replay: 0 events to replay" in output, output
    assert verified(live, "--into-schema", name) == reference


def test_index_rebuild_restores_a_dropped_shard_and_the_same_answers(live: Live) -> None:
    tenant = live.tenants[0]

    async def drop() -> None:
        index = QdrantEdgeIndex(live.settings.vector_root, 384)
        await index.drop_tenant(tenant)
        assert await index.count(tenant) == 0
        await index.close()

    asyncio.run(drop())
    code, output = live.cli("--index", "--verify")
    assert code == 1 and "DIFFERENT" in output and "only in postgres" in output, output
    code, output = live.cli("--index", "--tenant", tenant)
    assert code == 0 and "versions indexed" in output, output
    verified(live, "--index")
    assert asyncio.run(_ask(live.settings, tenant, fresh=True)) == live.answers


def test_index_rebuild_refuses_while_a_stack_holds_the_shards(live: Live, tmp_path: Path) -> None:
    (tmp_path / "stack.json").write_text(json.dumps({"pid": os.getpid(), "postgres_dsn": live.dsn}))
    env = {**live.env, "MEMSTREAM_DATA_DIR": str(tmp_path)}
    done = run_cli(["replay", "--index"], env, timeout=TIMEOUT)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "holds the Qdrant Edge shards" in lines[0], done.stderr


def _received(live: Live) -> list[datetime]:
    return [r[0] for r in live.sql(live.dsn, "SELECT received_at FROM event_ledger ORDER BY 1")]


def test_replay_stopped_at_until_then_resumed_ends_identical(
    live: Live, reference: dict[str, str]
) -> None:
    name = live.copy_name()
    middle = _received(live)[60]
    code, output = live.cli("--into-schema", name, "--until", middle.isoformat())
    assert code == 0 and "61 events replayed" in output, output
    code, output = live.cli("--into-schema", name)
    assert code == 0 and "resuming: 61 events already in the copy" in output, output
    assert f"{live.total - 61} events replayed" in output, output
    assert verified(live, "--into-schema", name) == reference


def test_replay_killed_midway_then_restarted_ends_identical(
    live: Live, reference: dict[str, str]
) -> None:
    name = live.copy_name()
    copy = schema_dsn(live.server, name)
    process = Process(["replay", "--into-schema", name, "--batch", "2"], live.env)
    deadline = time.monotonic() + TIMEOUT
    count = 0
    while time.monotonic() < deadline and process.proc.poll() is None:
        try:
            count = live.sql(copy, "SELECT count(*) FROM event_ledger")[0][0]
        except psycopg.Error:  # not created / migrated yet
            count = 0
        if count >= 20:
            break
        time.sleep(0.02)
    process.kill()
    left = live.sql(copy, "SELECT count(*) FROM event_ledger")[0][0]
    pending = live.sql(
        copy, "SELECT count(*) FROM memory_versions WHERE op = 'UPSERT' AND indexed_at IS NULL"
    )[0][0]
    # Killed while recording, or once every event was recorded, while indexing.
    assert left >= 20 and (left < live.total or pending > 0), process.output
    code, output = live.cli("--into-schema", name)
    assert code == 0 and f"resuming: {left} events already in the copy" in output, output
    assert verified(live, "--into-schema", name) == reference


def test_until_reproduces_what_was_known_then(live: Live) -> None:
    name = live.copy_name()
    moment = _received(live)[70]  # inside the second round: supersessions half known
    code, output = live.cli("--into-schema", name, "--until", moment.isoformat(), "--no-vectors")
    assert code == 0, output

    async def chains() -> tuple[int, int]:
        source = await PostgresMemoryRepository.connect(live.dsn)
        copy = await PostgresMemoryRepository.connect(schema_dsn(live.server, name))
        compared = changed = 0
        try:
            keys = live.sql(live.dsn, "SELECT DISTINCT tenant_id, memory_key FROM memory_versions")
            for tenant, key in keys:
                now = await source.chain(tenant, key)
                then = known_at(now, moment)
                replayed = await copy.chain(tenant, key)
                fields = [
                    [(v.version_id, v.version, v.parent_id, v.valid_from, v.valid_to,
                      v.is_current, v.op, v.content) for v in chain]
                    for chain in (then, replayed)
                ]  # fmt: skip
                assert fields[0] == fields[1], (tenant, key)
                compared += 1
                changed += [v.is_current for v in now] != [v.is_current for v in then]
        finally:
            await source.close()
            await copy.close()
        return compared, changed

    compared, changed = asyncio.run(chains())
    assert compared == 37 and changed > 5, (compared, changed)
    verified(live, "--into-schema", name)  # the copy's own --until, from replay_meta
