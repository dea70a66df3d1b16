"""One memory ingested, superseded and retracted: `history --as-of` (valid time) and
`--known-at` (transaction time) at every moment between those events."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstream.ops.local import LocalMemstream
from memstream.services.settings import Settings
from tests.e2e.processes import run_cli


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_history_as_of_and_known_at_between_every_event(
    pg_dsn: str, tmp_path: Path, tenant: str
) -> None:
    base = datetime.now(UTC).replace(microsecond=0) - timedelta(days=30)
    valid = [base + timedelta(days=d) for d in (1, 10, 20)]  # occurred_at of v1, v2, retract
    known = [base + timedelta(days=d) for d in (2, 11, 21)]  # when memstream recorded each
    clock = Clock(known[0])
    settings = Settings(
        data_dir=tmp_path, postgres_dsn=pg_dsn, redis_url="redis://127.0.0.1:6379/0"
    )

    def event(n: int, op: str, content: str) -> dict[str, object]:
        return {
            "event_id": f"e{n}",
            "tenant_id": tenant,
            "memory_key": "spec:X1",
            "entity_type": "product",
            "entity_id": "X1",
            "fact_type": "product_spec",
            "content": content,
            "source_system": "catalog",
            "op": op,
            "occurred_at": valid[n].isoformat(),
        }

    async def ingest() -> None:
        local = await LocalMemstream.start(settings, clock=clock)
        try:
            for n, (op, text) in enumerate(
                [
                    ("UPSERT", "X1 charges over micro-USB"),
                    ("UPSERT", "X1 charges over USB-C"),
                    ("RETRACT", ""),
                ]
            ):
                clock.now = known[n]
                await local.ingest([event(n, op, text)])
        finally:
            await local.stop()

    asyncio.run(ingest())
    env = {
        "MEMSTREAM_POSTGRES_DSN": pg_dsn,
        "MEMSTREAM_BROKER": "127.0.0.1:1",
        "MEMSTREAM_REDIS_URL": "redis://127.0.0.1:6379/0",
        "MEMSTREAM_DATA_DIR": str(tmp_path),
    }

    def history(*flags: str) -> list[dict[str, object]] | None:
        result = run_cli(["history", "spec:X1", "--tenant", tenant, "--json", *flags], env)
        if result.returncode == 1 and "no memory" in result.stderr:
            return None
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    def at(moment: datetime) -> str:
        return moment.isoformat()

    # Transaction time: what memstream believed at each moment.
    assert history("--known-at", at(known[0] - timedelta(hours=1))) is None
    believed = history("--known-at", at(known[0] + timedelta(hours=1)))
    assert believed is not None
    assert [(v["version"], v["is_current"]) for v in believed] == [(1, True)]
    believed = history("--known-at", at(known[1] + timedelta(hours=1)))
    assert believed is not None
    assert [(v["version"], v["is_current"]) for v in believed] == [(1, False), (2, True)]
    assert believed[0]["valid_to"] == at(valid[1])
    believed = history("--known-at", at(known[2] + timedelta(hours=1)))
    assert believed is not None
    assert [(v["version"], v["is_current"], v["op"]) for v in believed] == [
        (1, False, "UPSERT"),
        (2, False, "UPSERT"),
        (3, False, "RETRACT"),
    ]

    # Valid time: what was true at each moment (as known now).
    assert history("--as-of", at(valid[0] - timedelta(hours=1))) is None
    for moment, expected in (
        (valid[0] + timedelta(hours=1), 1),
        (valid[1] + timedelta(hours=1), 2),
    ):
        versions = history("--as-of", at(moment))
        assert versions is not None and [v["version"] for v in versions] == [expected]
    assert history("--as-of", at(valid[2] + timedelta(hours=1))) is None  # retracted then

    # Both: true on day 15 as known on day 5 → v1 (v2 was not recorded yet).
    both = history(
        "--as-of", at(base + timedelta(days=15)), "--known-at", at(base + timedelta(days=5))
    )
    assert both is not None and [v["version"] for v in both] == [1]
