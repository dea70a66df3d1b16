"""The rescoring timer's handler on the real stores, with a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from memstream.ops.local import LocalMemstream
from memstream.ops.migrate import migrate
from memstream.services.domain.model import MemoryVersion
from memstream.services.handlers.rescore import Rescorer
from memstream.services.ports import VectorFilter
from memstream.services.settings import Settings
from tests.conftest import MACHINE_REDIS


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


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
        first = await rescorer.run_once()
        # Fresh versions are stored as scored; nothing material to propagate yet.
        assert (first.examined, first.changed) == (2, 0)
        assert (await rescorer.run_once()).examined == 0, "nothing is due again at once"

        clock.now = start + timedelta(days=3)
        again = await rescorer.run_once()
        assert (again.examined, again.changed) == (2, 2)

        def scores() -> dict[str, tuple[float, str, object]]:
            with psycopg.connect(pg_dsn) as conn:
                rows = conn.execute(
                    "SELECT m.memory_key, s.recency, s.effective_status, s.scored_at"
                    " FROM version_scores s JOIN memory_versions m USING (version_id)"
                    " WHERE m.tenant_id = %s",
                    (tenant,),
                ).fetchall()
            return {key: (recency, status, at) for key, recency, status, at in rows}

        now = scores()
        assert now["complaint:1"][:2] == (1.0, "escalated"), "pending > 48 h; open: no decay"
        note_recency = 0.5 ** ((3 * 24 + 1) / (90 * 24))  # notes: 90-day half-life
        assert abs(now["note:1"][0] - note_recency) < 1e-6
        assert now["note:1"][2] == clock.now

        hits = await local.container.index.search(tenant, [1.0] + [0.0] * 383, VectorFilter(), 2)
        payloads = {h.payload["memory_key"]: h.payload for h in hits}
        assert payloads["complaint:1"]["effective_status"] == "escalated"
        assert abs(payloads["note:1"]["recency"] - note_recency) < 1e-9

        # A rule changed at run time is used by the next run, without a restart.
        await local.container.rules.set_rule(tenant, "half_life", "note", 3600.0)
        clock.now = start + timedelta(days=3, minutes=5)
        faster = await rescorer.run_once()
        assert faster.changed >= 1
        assert scores()["note:1"][0] < 1e-6
    finally:
        await local.stop()


async def test_catch_up_runs_bounded_runs_until_nothing_is_due(
    fresh_pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    migrate(fresh_pg_dsn)
    start = datetime.now(UTC).replace(microsecond=0)
    clock = FakeClock(start)
    settings = Settings(data_dir=tmp_path, postgres_dsn=fresh_pg_dsn, redis_url=MACHINE_REDIS)
    local = await LocalMemstream.start(settings, clock=clock)
    try:
        await local.ingest(
            [
                {
                    "event_id": f"n{i}",
                    "tenant_id": tenant,
                    "memory_key": f"note:{i}",
                    "entity_type": "customer",
                    "entity_id": f"C-{i}",
                    "fact_type": "note",
                    "content": f"Note number {i} about evening deliveries",
                    "source_system": "crm",
                    "occurred_at": (start - timedelta(hours=1)).isoformat(),
                }
                for i in range(11)
            ]
        )
        announced = []

        async def announce(version: MemoryVersion, scores: object, at: datetime) -> None:
            announced.append(version.memory_key)

        c = local.container
        rescorer = Rescorer(c.rules, c.index, announce, clock, batch=4)
        clock.now = start + timedelta(days=3)
        report = await rescorer.catch_up(timedelta(minutes=1))
        assert (report.examined, report.changed, report.runs) == (11, 11, 3)
        assert sorted(announced) == sorted(f"note:{i}" for i in range(11))
        assert (await rescorer.catch_up(timedelta(minutes=1))).examined == 0
        # The budget bounds it: one run, then the rest waits for the next tick.
        clock.now = start + timedelta(days=6)
        assert (await rescorer.catch_up(timedelta(0))).examined == 4
    finally:
        await local.stop()
