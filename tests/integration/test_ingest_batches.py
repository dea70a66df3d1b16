"""Recording a batch in one unit of work stores exactly what recording its events one at a time
does, on the real PostgreSQL (15 on the machine, 18 embedded).

Generated batches (seeded) mix new versions, late events, retractions (of known and unknown
memories), several events for one memory, duplicates (in the batch, across batches, and an
event id reused with another memory), invalid and undecodable messages and an event storage
refuses (a NUL character). The same messages go through ``Ingestor.handle_batch`` for one tenant
and one at a time through ``record_event`` for another; versions, ledger and dead letters must
match.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.validation import UNDECODABLE, validate_event
from memstream.services.handlers.ingest import STORAGE_REJECTED, Envelope, Ingestor
from memstream.services.handlers.recording import record_event
from memstream.services.ports import AdapterError, Position, SilentSink

OCCURRED = datetime(2026, 1, 1, tzinfo=UTC)
RECEIVED = datetime(2026, 6, 1, tzinfo=UTC)
KEYS = ("m:a", "m:b", "m:c", "m:d")


@pytest.fixture
async def repo(pg_dsn: str) -> AsyncIterator[PostgresMemoryRepository]:
    repository = await PostgresMemoryRepository.connect(pg_dsn)
    yield repository
    await repository.close()


def _event(rng: random.Random, n: int, op: str = "UPSERT") -> dict[str, Any]:
    raw: dict[str, Any] = {
        "event_id": f"e-{n}",
        "memory_key": rng.choice(KEYS),
        "entity_type": "customer",
        "entity_id": "C-1",
        "fact_type": "note",
        "content": f"note {n} about order {rng.randrange(100)}",
        "source_system": "crm",
        "occurred_at": (OCCURRED + timedelta(hours=rng.randrange(2000))).isoformat(),
    }
    if op == "RETRACT":
        raw["op"] = "RETRACT"
        if rng.random() < 0.5:
            raw.pop("content")
    return raw


def generated_batches(seed: int) -> list[list[dict[str, Any] | bytes]]:
    """Batches of raw events (or undecodable bytes), the tenant left to fill in."""
    rng = random.Random(seed)
    sent: list[dict[str, Any]] = []
    batches: list[list[dict[str, Any] | bytes]] = []
    n = 0
    for _ in range(rng.randrange(3, 6)):
        batch: list[dict[str, Any] | bytes] = []
        for _ in range(rng.randrange(5, 40)):
            n += 1
            roll = rng.random()
            message: dict[str, Any] | bytes
            if roll < 0.50:
                message = _event(rng, n)
            elif roll < 0.65:
                message = _event(rng, n, "RETRACT")
            elif roll < 0.80 and sent:
                message = dict(rng.choice(sent))  # a redelivery, maybe within this batch
                if rng.random() < 0.2:  # the event id reused with another memory
                    message["memory_key"] = rng.choice(KEYS)
            elif roll < 0.88:
                message = {**_event(rng, n), "content": ""}  # invalid: empty content
            elif roll < 0.93:
                message = b"\xff not json"
            elif roll < 0.96:
                message = {**_event(rng, n), "content": "refused \x00 by storage"}
            else:
                message = {**_event(rng, n), "occurred_at": "yesterday"}
            if isinstance(message, dict):
                sent.append(message)
            batch.append(message)
        batches.append(batch)
    return batches


def _decode(value: bytes) -> dict[str, Any]:
    decoded = json.loads(value)
    assert isinstance(decoded, dict)
    return decoded


def _envelopes(
    batches: list[list[dict[str, Any] | bytes]], tenant: str, topic: str
) -> list[list[Envelope]]:
    offset = 0
    out: list[list[Envelope]] = []
    for batch in batches:
        envelopes = []
        for message in batch:
            value = (
                message
                if isinstance(message, bytes)
                else json.dumps({**message, "tenant_id": tenant}).encode()
            )
            at = RECEIVED + timedelta(seconds=offset)
            envelopes.append(Envelope(None, value, Position(topic, 0, offset), received_at=at))
            offset += 1
        out.append(envelopes)
    return out


async def _one_at_a_time(repo: PostgresMemoryRepository, envelope: Envelope) -> str | None:
    """The per-event path: the dead-letter reason, or None when recorded."""
    assert envelope.value is not None and envelope.received_at is not None
    try:
        raw = _decode(envelope.value)
    except ValueError:
        return UNDECODABLE
    try:
        event = validate_event(raw, envelope.received_at)
        await record_event(repo, event, raw, envelope.position, envelope.received_at)
    except InvalidEvent as exc:
        return exc.reason
    except AdapterError:
        return STORAGE_REJECTED
    return None


def _stored(dsn: str, tenant: str, topic: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as conn:
        versions = conn.execute(
            "SELECT m.memory_key, m.version, p.version, m.event_id, m.content, m.status, m.op,"
            " m.valid_from, m.valid_to, m.recorded_at, m.superseded_at, m.is_current,"
            " m.index_dirty, m.indexed_at IS NULL, m.anchors, m.search_text"
            " FROM memory_versions m LEFT JOIN memory_versions p ON p.version_id = m.parent_id"
            " WHERE m.tenant_id = %s ORDER BY m.memory_key, m.version",
            (tenant,),
        ).fetchall()
        ledger = conn.execute(
            'SELECT l.event_id, l.memory_key, l.op, l.outcome, m.memory_key, m.version, l."offset",'
            " l.payload - 'tenant_id' FROM event_ledger l JOIN memory_versions m"
            " USING (version_id) WHERE l.tenant_id = %s ORDER BY l.event_id",
            (tenant,),
        ).fetchall()
        dead = conn.execute(
            'SELECT "offset", reason FROM dead_letters WHERE topic = %s ORDER BY "offset"',
            (topic,),
        ).fetchall()
    return {"versions": versions, "ledger": ledger, "dead": dead}


@pytest.mark.parametrize("seed", range(6))
async def test_a_batch_records_what_one_event_at_a_time_records(
    pg_dsn: str, repo: PostgresMemoryRepository, seed: int
) -> None:
    run = uuid.uuid4().hex[:8]
    batches = generated_batches(seed)
    ingestor = Ingestor(repo, SilentSink(), None, _decode, lambda: RECEIVED)
    batched, single = f"batched-{run}", f"single-{run}"
    for envelopes in _envelopes(batches, batched, f"t-{batched}"):
        await ingestor.handle_batch(envelopes)
    dead: list[tuple[int, str]] = []
    for envelopes in _envelopes(batches, single, f"t-{single}"):
        for envelope in envelopes:
            reason = await _one_at_a_time(repo, envelope)
            if reason is not None:
                dead.append((envelope.position.offset, reason))
    got = _stored(pg_dsn, batched, f"t-{batched}")
    want = _stored(pg_dsn, single, f"t-{single}")
    assert got["versions"] == want["versions"]
    assert got["ledger"] == want["ledger"]
    assert got["dead"] == dead
    assert {r for _, r in dead} >= {UNDECODABLE, "empty_content"}, "the mix lacks invalid events"
    outcomes = {row[3] for row in want["ledger"]}
    assert {"current", "late", "retracted"} <= outcomes, "the mix lacks late events or retractions"


async def test_a_redelivered_batch_records_nothing_twice(
    pg_dsn: str, repo: PostgresMemoryRepository
) -> None:
    """What a batch recorded, delivered again (a worker killed before it acknowledged): all
    duplicates, nothing stored changes. (A dead-lettered RETRACT of a memory that a later event
    created would be recorded on redelivery, one event at a time as in a batch: left out.)"""
    tenant = f"again-{uuid.uuid4().hex[:8]}"
    topic = f"t-{tenant}"
    ingestor = Ingestor(repo, SilentSink(), None, _decode, lambda: RECEIVED)
    envelopes = [e for batch in _envelopes(generated_batches(7), tenant, topic) for e in batch]
    await ingestor.handle_batch(envelopes)
    before = _stored(pg_dsn, tenant, topic)
    recorded = {row[6] for row in before["ledger"]}
    again = await ingestor.handle_batch([e for e in envelopes if e.position.offset in recorded])
    assert _stored(pg_dsn, tenant, topic) == before
    assert len(again.recorded) == len(recorded) > 20
    assert all(r.duplicate for r in again.recorded) and not again.dead


async def test_a_batch_reads_what_placing_its_events_needs_not_the_whole_chain(
    repo: PostgresMemoryRepository,
) -> None:
    """A memory with a long history: the batch's unit of work reads, of its chain, exactly the
    versions ``versioning.neighbours`` names for the batch's events (their moments before,
    between, on and after the stored ones), a handful whatever the chain's length."""
    from memstream.services.domain.versioning import neighbours

    tenant = f"long-{uuid.uuid4().hex[:8]}"
    rng = random.Random(3)
    ingestor = Ingestor(repo, SilentSink(), None, _decode, lambda: RECEIVED)
    history = [{**_event(rng, n), "memory_key": "m:long", "tenant_id": tenant} for n in range(300)]
    envelopes = [
        Envelope(None, json.dumps(raw).encode(), Position("t-long", 0, n), received_at=RECEIVED)
        for n, raw in enumerate(history)
    ]
    for start in range(0, len(envelopes), 64):
        await ingestor.handle_batch(envelopes[start : start + 64])
    whole = await repo.chain(tenant, "m:long")
    assert len(whole) == 300
    moments = [
        OCCURRED - timedelta(days=1),  # before every version
        whole[17].valid_from,  # on a stored start
        OCCURRED + timedelta(hours=999, minutes=30),  # between two
        OCCURRED + timedelta(hours=2500),  # after every version
    ]
    batch = [
        validate_event(
            {**_event(rng, 1000 + n), "memory_key": "m:long", "tenant_id": tenant,
             "occurred_at": at.isoformat()},
            RECEIVED,
        )
        for n, at in enumerate(moments)
    ]  # fmt: skip
    async with repo.locked_batch(batch) as work:
        read = {v.version_id for v in work.chains[(tenant, "m:long")]}
    assert read == neighbours(whole, moments)
    assert len(read) <= 2 + 2 * len(moments)
