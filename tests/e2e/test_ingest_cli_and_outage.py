"""`memstream publish --wait` / `history` as a user runs them, and a Postgres outage waited out."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstream.ops.migrate import migrate
from memstream.ops.stack import EmbeddedStack
from memstream.ops.topics import ensure_topics
from memstream.services.settings import Settings, Topics
from tests.conftest import MACHINE_REDIS, unique
from tests.e2e.ingest_kit import BASE, IngestSetup, encoded, event, make_setup
from tests.e2e.processes import run_cli


@pytest.fixture
def setup(broker: str, machine_postgres_dsn: str, tmp_path: Path) -> IngestSetup:
    return make_setup(broker, machine_postgres_dsn, tmp_path)


def test_publish_wait_and_history(setup: IngestSetup, tenant: str, tmp_path: Path) -> None:
    lines = [
        json.dumps(event(tenant, "spec:X1", 1, content="X1 charges over micro-USB")),
        json.dumps(event(tenant, "spec:X1", 2, content="X1 charges over USB-C")),
        "{not json",
        json.dumps(event(tenant, "spec:X1", 3, content="")),
        json.dumps(event(tenant, "ghost", 1, op="RETRACT", content="")),
        json.dumps(event(tenant, "spec:X2", 1, op="DELETE")),
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    worker = setup.worker()
    before = datetime.now(UTC).isoformat()
    try:
        producer = setup.env(MEMSTREAM_KEY=setup.keyring.key(tenant, "producer", ["crm"]))
        first = run_cli(["publish", str(path), "--wait", "--timeout", "120"], producer)
        again = run_cli(["publish", str(path), "--wait", "--timeout", "120"], producer)
        history = run_cli(["history", "spec:X1", "--tenant", tenant, "--json"], setup.env())
        table = run_cli(["history", "spec:X1", "--tenant", tenant], setup.env())
        missing = run_cli(["history", "nothing", "--tenant", tenant], setup.env())
        between = (BASE + timedelta(hours=1, minutes=30)).isoformat()
        as_of = run_cli(
            ["history", "spec:X1", "--tenant", tenant, "--json", "--as-of", between], setup.env()
        )
        unknown_then = run_cli(
            ["history", "spec:X1", "--tenant", tenant, "--known-at", before], setup.env()
        )
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
    assert first.returncode == 1, "rejected lines make the exit status non-zero"
    assert f"{path}:3: not sent: not JSON" in first.stderr
    assert f"{path}:4: not sent: empty_content" in first.stderr
    assert f"{path}:6: not sent: unknown_op" in first.stderr
    assert "sent 3 events" in first.stdout
    assert "ingested 2 · duplicates 0 · dead-lettered 1 (retract_unknown_memory: 1)" in first.stdout
    assert "ingested 0 · duplicates 2 · dead-lettered 1" in again.stdout
    versions = [json.loads(line) for line in history.stdout.splitlines()]
    assert [(v["version"], v["is_current"]) for v in versions] == [(1, False), (2, True)]
    assert versions[0]["valid_to"] == versions[1]["valid_from"]
    assert "USB-C" in table.stdout and table.returncode == 0
    assert missing.returncode == 1 and "no memory 'nothing'" in missing.stderr
    assert [json.loads(line)["version"] for line in as_of.stdout.splitlines()] == [1]
    assert unknown_then.returncode == 1 and "known at" in unknown_then.stderr


def test_postgres_outage_is_waited_out_without_loss(
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
    before = [event(tenant, f"a:{i}", 1) for i in range(40)]
    during = [event(tenant, f"b:{i}", 1) for i in range(40)]
    worker = setup.worker()
    try:
        setup.produce(encoded(e) for e in before)
        assert not setup.wait([(tenant, e["event_id"]) for e in before], timeout=120).pending
        stack.stop()  # the database goes away under the running worker
        setup.produce(encoded(e) for e in during)
        time.sleep(8)
        assert worker.proc.poll() is None, "the worker must wait, not die"
        stack = EmbeddedStack(database, write_runtime=False)
        assert stack.start().postgres_dsn == dsn
        status = setup.wait([(tenant, e["event_id"]) for e in before + during], timeout=180)
    finally:
        assert worker.terminate() == 0, worker.output[-3000:]
        stack.stop()
    assert not status.pending
    assert not status.dead, "an outage is never a reason to dead-letter"
    assert "retrying" in worker.output
