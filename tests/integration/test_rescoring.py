"""The rescoring timer's handler on the real stores, with a fake clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstream.ops.local import LocalMemstream
from memstream.ops.migrate import migrate
from memstream.services.domain.decay import DEFAULT_DECAY
from memstream.services.domain.decay import recency as recency_at
from memstream.services.domain.model import MemoryVersion
from memstream.services.handlers.rescore import Rescorer
from memstream.services.ports import AdapterError, VectorFilter
from memstream.services.settings import Settings
from tests.conftest import MACHINE_REDIS


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def _started(dsn: str, tmp_path: Path) -> tuple[LocalMemstream, FakeClock]:
    """A migrated database and the worker's composition on it, on a fake clock (now)."""
    migrate(dsn)
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    settings = Settings(data_dir=tmp_path, postgres_dsn=dsn, redis_url=MACHINE_REDIS)
    return await LocalMemstream.start(settings, clock=clock), clock


def open_complaint(tenant: str, n: int, occurred: datetime) -> dict[str, object]:
    return {
        "event_id": f"c{n}",
        "tenant_id": tenant,
        "memory_key": f"complaint:{n}",
        "entity_type": "customer",
        "entity_id": f"C-{n}",
        "fact_type": "complaint",
        "content": f"Complaint number {n}",
        "source_system": "ticketing",
        "status": "open",
        "occurred_at": occurred.isoformat(),
    }


async def test_rescoring_moves_recency_and_state_as_the_rules_say(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    pg_dsn = fresh_pg_dsn  # a schema of its own: the timer scans every tenant's versions
    migrate(pg_dsn)
    start = datetime.now(UTC).replace(microsecond=0)
    clock = FakeClock(start)
    settings = Settings(
        data_dir=tmp_path,
        postgres_dsn=pg_dsn,
        redis_url="redis://127.0.0.1:6379/0",
        rescore_seconds=60,
    )
    local = await LocalMemstream.start(settings, clock=clock)
    try:
        await local.ingest(
            [
                {
                    "event_id": "c1",
                    "tenant_id": tenant,
                    "memory_key": "complaint:1",
                    "entity_type": "customer",
                    "entity_id": "C-1",
                    "fact_type": "complaint",
                    "content": "Parcel arrived damaged",
                    "source_system": "ticketing",
                    "status": "pending",
                    "occurred_at": (start - timedelta(hours=1)).isoformat(),
                },
                {
                    "event_id": "n1",
                    "tenant_id": tenant,
                    "memory_key": "note:1",
                    "entity_type": "customer",
                    "entity_id": "C-1",
                    "fact_type": "note",
                    "content": "Prefers evening deliveries",
                    "source_system": "crm",
                    "occurred_at": (start - timedelta(hours=1)).isoformat(),
                },
            ]
        )
        rescorer = local.container.rescorer
        # Nothing is due: a fresh complaint escalates only after 48 h, a note never changes.
        assert (await rescorer.run_once()).examined == 0

        clock.now = start + timedelta(days=3)
        again = await rescorer.run_once()
        assert (again.examined, again.changed) == (1, 1), "the complaint only: it escalated"
        assert (await rescorer.run_once()).examined == 0, "nothing is due again at once"

        with psycopg.connect(pg_dsn) as conn:
            rows = conn.execute(
                "SELECT m.memory_key, s.recency, s.effective_status, s.scored_at"
                " FROM version_scores s JOIN memory_versions m USING (version_id)"
                " WHERE m.tenant_id = %s",
                (tenant,),
            ).fetchall()
        assert [r[:3] for r in rows] == [("complaint:1", 1.0, "escalated")]
        assert rows[0][3] == clock.now

        # The state lives in Postgres (every query computes it): the vector store holds what
        # the indexer wrote, its built points not copied out of their index by a payload write.
        hits = await local.container.index.search(tenant, [1.0] + [0.0] * 383, VectorFilter(), 2)
        payloads = {h.payload["memory_key"]: h.payload for h in hits}
        assert payloads["complaint:1"]["status"] == "pending"
        assert not any("effective_status" in p for p in payloads.values())
    finally:
        await local.stop()


async def test_a_reply_shows_the_recency_of_its_now_however_long_ago_it_was_rescored(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    """Recency is computed by the query from the version's time and the tenant's half-lives:
    the reply at a given ``now`` is the same whether the version was scored a year ago, just
    now or never, and a half-life changed at run time is used at once."""
    local, clock = await _started(fresh_pg_dsn, tmp_path)
    start = clock.now
    occurred = start - timedelta(hours=1)
    try:
        await local.ingest(
            [
                {
                    "event_id": "r1",
                    "tenant_id": tenant,
                    "memory_key": "complaint:9",
                    "entity_type": "customer",
                    "entity_id": "C-9",
                    "fact_type": "complaint",
                    "content": "Parcel arrived damaged, refund issued",
                    "source_system": "ticketing",
                    "status": "resolved",
                    "occurred_at": occurred.isoformat(),
                }
            ]
        )
        await local.container.rescorer.run_once()  # scored "long ago": at the start

        async def recency() -> float:
            reply = await local.retrieve(
                {"request_id": uuid.uuid4().hex, "tenant_id": tenant, "limit": 3,
                 "query": "which parcel arrived damaged?", "force": True}
            )  # fmt: skip
            (result,) = [r for r in reply["results"] if r["memory_key"] == "complaint:9"]
            return float(result["scores"]["recency"])

        clock.now = start + timedelta(days=400)
        age = clock.now - occurred
        expected = recency_at(occurred, clock.now, DEFAULT_DECAY.half_life("complaint"))
        assert expected == pytest.approx(0.5 ** (age / timedelta(days=7)), rel=1e-9)
        assert await recency() == pytest.approx(expected, rel=1e-9)
        await local.container.rescorer.run_once()  # rescored now: the reply does not move
        assert await recency() == pytest.approx(expected, rel=1e-9)

        clock.now = start + timedelta(days=3)
        faster = recency_at(occurred, clock.now, timedelta(hours=1))
        await local.container.rules.set_rule(tenant, "half_life", "complaint", 3600.0)
        assert await recency() == pytest.approx(faster, rel=1e-9), "the tenant's override"
    finally:
        await local.stop()


async def test_catch_up_runs_bounded_runs_until_nothing_is_due(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    local, clock = await _started(fresh_pg_dsn, tmp_path)
    start = clock.now
    try:

        def event(kind: str, i: int, at: datetime) -> dict[str, str]:
            return {
                "event_id": f"{kind}{i}@{at.isoformat()}",
                "tenant_id": tenant,
                "memory_key": f"{kind}:{i}@{at.isoformat()}",
                "entity_type": "customer",
                "entity_id": f"C-{i}",
                "fact_type": kind,
                "content": f"{kind} number {i} about evening deliveries",
                "source_system": "crm",
                "status": "pending" if kind == "complaint" else "active",
                "occurred_at": (at - timedelta(hours=1)).isoformat(),
            }

        later = start + timedelta(hours=13)  # occurred 12 h from now: escalates at 60 h
        await local.ingest(
            [event("complaint", i, start) for i in range(11)]
            + [event("note", i, start) for i in range(20)]
            + [event("complaint", i, later) for i in range(6)]
        )
        announced = []

        async def announce(version: MemoryVersion, scores: object, at: datetime) -> None:
            announced.append(version.memory_key)

        rescorer = Rescorer(local.container.rules, announce, clock, batch=4)
        clock.now = start + timedelta(hours=50)
        report = await rescorer.catch_up(timedelta(minutes=1))
        assert (report.examined, report.changed, report.runs) == (11, 11, 3)
        assert sorted(announced) == sorted(f"complaint:{i}@{start.isoformat()}" for i in range(11))
        assert (await rescorer.catch_up(timedelta(minutes=1))).examined == 0
        # The budget bounds it: one run, then the rest waits for the next tick.
        clock.now = start + timedelta(days=6)
        assert (await rescorer.catch_up(timedelta(0))).examined == 4
    finally:
        await local.stop()


async def test_a_pass_reads_each_due_version_once_page_by_page(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    """A pass goes on from where its last page ended (in the order of the transition's time,
    ties by version): every due version is read once however small the pages, what an earlier
    page scored is never read again in the pass, and what fell due behind the cursor meanwhile
    is read by the next pass."""
    from memstream.services.ports import SilentSink

    local, clock = await _started(fresh_pg_dsn, tmp_path)
    start = clock.now

    def complaint(n: int, hours_ago: int) -> dict[str, object]:
        return open_complaint(tenant, n, start - timedelta(hours=hours_ago))

    try:
        # Eight open complaints, two pairs of them at the same moment.
        await local.ingest([complaint(n, h) for n, h in enumerate([90, 80, 80, 70, 60, 60, 50, 1])])
        clock.now = start + timedelta(days=3)
        rescorer = Rescorer(local.container.rules, SilentSink().scored, clock, batch=3)
        pages = [(await rescorer.run_once()).examined for _ in range(3)]
        assert pages == [3, 3, 2], "every complaint once, the last page ends the pass"
        with psycopg.connect(fresh_pg_dsn) as conn:
            scored = conn.execute(
                "SELECT count(*), count(DISTINCT version_id) FROM version_scores"
            ).fetchone()
        assert scored == (8, 8)
        assert (await rescorer.run_once()).examined == 0, "a new pass: nothing is due"

        # A page into the next pass, a complaint older than its cursor falls due.
        await local.ingest([complaint(n, h) for n, h in [(8, 95), (9, 94), (10, 93), (11, 30)]])
        clock.now += timedelta(days=1)
        first = await rescorer.run_once()
        assert first.examined == 3  # three of the four recorded since the last pass
        await local.ingest([complaint(12, 99)])  # behind the cursor now
        assert (await rescorer.run_once()).examined == 1  # c11: the pass ends
        assert (await rescorer.run_once()).examined == 1  # the next pass: c12
        assert (await rescorer.run_once()).examined == 0
    finally:
        await local.stop()


async def test_a_pass_after_a_complete_one_reads_only_what_fell_due_or_was_recorded_since(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    """Once a pass has ended, the next reads the transitions passed since it began and the
    versions recorded since — a backfilled complaint already past its escalation included —
    not the store's other open matters; a full pass an hour on reads everything again (what
    only a full pass sees: a due version recorded long before, here one whose scores were
    removed behind the rescorer's back)."""
    from memstream.services.handlers.rescore import FULL_PASS_EVERY

    local, clock = await _started(fresh_pg_dsn, tmp_path)
    start = clock.now

    def complaint(n: int, occurred: datetime) -> dict[str, object]:
        return open_complaint(tenant, n, occurred)

    announced: list[str] = []

    async def announce(version: MemoryVersion, scores: object, at: datetime) -> None:
        announced.append(version.memory_key)

    try:
        # c0-c3 escalated long ago; c4 escalates 30 minutes after the ingest.
        old = [complaint(n, start - timedelta(days=30 + n)) for n in range(4)]
        await local.ingest([*old, complaint(4, start - timedelta(hours=47, minutes=30))])
        rescorer = Rescorer(local.container.rules, announce, clock, batch=100)
        clock.now = start + timedelta(minutes=20)  # the versions above committed long since
        assert (await rescorer.run_once()).examined == 4, "the first pass reads the store"
        with psycopg.connect(fresh_pg_dsn, autocommit=True) as conn:
            # c0's scores removed: due again, but recorded before and long past its moment.
            conn.execute(
                "DELETE FROM version_scores WHERE version_id ="
                " (SELECT version_id FROM memory_versions WHERE memory_key = 'complaint:0'"
                " AND tenant_id = %s)",
                (tenant,),
            )
        clock.now = start + timedelta(minutes=50)
        # A backfill, recorded now: a complaint escalated a year ago.
        await local.ingest([complaint(5, start - timedelta(days=365))])
        announced.clear()
        report = await rescorer.run_once()
        assert sorted(announced) == ["complaint:4", "complaint:5"], (
            "c4's escalation passed since, c5 was recorded since; not c0"
        )
        assert report.examined == 2
        assert (await rescorer.run_once()).examined == 0

        clock.now = start + timedelta(minutes=20) + FULL_PASS_EVERY + timedelta(minutes=1)
        announced.clear()
        assert (await rescorer.run_once()).examined == 1, "the full pass finds c0"
        assert announced == ["complaint:0"]
    finally:
        await local.stop()


class SaveFails:
    """The real rules repository, whose next ``save`` fails, once asked to, as a lost
    connection would."""

    def __init__(self, rules: Any) -> None:
        self._rules, self.fail_next = rules, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rules, name)

    async def save(self, items: Any, now: datetime) -> set[str]:
        if self.fail_next:
            self.fail_next = False
            raise AdapterError("the connection was lost while saving")
        return set(await self._rules.save(items, now))


async def test_after_a_failed_run_the_next_pass_reads_everything(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    """A run whose scores were not saved may leave due versions behind the floors of an
    incremental pass: the next pass is a full one."""
    from memstream.services.ports import SilentSink

    local, clock = await _started(fresh_pg_dsn, tmp_path)
    start = clock.now

    def complaint(n: int) -> dict[str, object]:
        return open_complaint(tenant, n, start - timedelta(days=30))

    try:
        await local.ingest([complaint(1)])
        rules = SaveFails(local.container.rules)
        rescorer = Rescorer(rules, SilentSink().scored, clock)
        clock.now = start + timedelta(minutes=20)
        assert (await rescorer.run_once()).examined == 1, "the first pass: a full one"
        with psycopg.connect(fresh_pg_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM version_scores")  # c1 due again, behind every floor
        clock.now = start + timedelta(minutes=30)
        assert (await rescorer.run_once()).examined == 0, "an incremental pass: c1 unseen"
        rules.fail_next = True
        clock.now = start + timedelta(minutes=40)
        with pytest.raises(AdapterError):
            await rescorer.run_once()
        assert (await rescorer.run_once()).examined == 1, "after the failure, a full pass"
    finally:
        await local.stop()
