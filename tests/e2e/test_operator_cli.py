"""The operator's commands against a real worker: dead letters (publish --wait, dlq list / show /
redrive), rules (defaults shown, unknown tenants refused), and a broker that is down."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstream.ops.stack import free_port
from tests.e2e.ingest_kit import IngestSetup, event, make_setup
from tests.e2e.processes import Process, run_cli


@pytest.fixture(scope="module")
def stack(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IngestSetup]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("operator"))
    worker: Process = setup.worker()
    yield setup
    assert worker.terminate() == 0, worker.output[-3000:]


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n", encoding="utf-8")
    return path


def test_dead_letters_fail_publish_wait_and_can_be_listed_shown_and_redriven(
    stack: IngestSetup, tmp_path: Path
) -> None:
    setup = stack
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    good = event(tenant, "note:C-1", 1)
    poisoned = event(tenant, "note:C-2", 1, content="stored \x00 nowhere")  # Postgres refuses NUL
    producer = setup.env(MEMSTREAM_KEY=setup.keyring.key(tenant, "producer", ["crm"]))
    published = run_cli(
        ["publish", str(_write(tmp_path / "e.jsonl", [good, poisoned])), "--wait"], producer
    )
    assert published.returncode == 1, published.stdout + published.stderr
    assert "dead-lettered 1" in published.stdout
    assert "memstream dlq list" in published.stderr

    listed = run_cli(["dlq", "list", "--tenant", tenant, "--json"], setup.env())
    assert listed.returncode == 0, listed.stderr
    (letter,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert letter["event_id"] == poisoned["event_id"] and letter["redriven_at"] is None
    shown = run_cli(["dlq", "show", str(letter["id"])], setup.env())
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["event"]["content"] == poisoned["content"]

    redriven = run_cli(["dlq", "redrive", str(letter["id"])], producer)
    assert redriven.returncode == 0, redriven.stderr
    assert "redrove 1 dead letters" in redriven.stdout
    deadline = time.monotonic() + 60  # the worker dead-letters it again, with its reason
    while True:
        rows = setup.sql(
            "SELECT redriven_at IS NOT NULL FROM dead_letters WHERE event_id = %s ORDER BY id",
            poisoned["event_id"],
        )
        if len(rows) == 2:
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.5)
    assert rows == [(True,), (False,)]
    plain = run_cli(["dlq", "list", "--tenant", tenant], setup.env())
    lines = plain.stdout.splitlines()
    assert len(lines) == 2 and "· redriven" in lines[0] and "· redriven" not in lines[1]


def test_rules_show_the_defaults_and_refuse_an_unknown_tenant(
    stack: IngestSetup, tmp_path: Path
) -> None:
    setup = stack
    tenant = f"acme-{uuid.uuid4().hex[:6]}"
    published = run_cli(
        ["publish", str(_write(tmp_path / "one.jsonl", [event(tenant, "n:1", 1)])), "--wait"],
        setup.env(MEMSTREAM_KEY=setup.keyring.key(tenant, "producer", ["crm"])),
    )
    assert published.returncode == 0, published.stderr
    shown = run_cli(["rules", "show", "--tenant", tenant], setup.env())
    assert shown.returncode == 0, shown.stderr
    assert f"{tenant}: half_life (other) = " in shown.stdout
    assert f"{tenant}: authority (other) = " in shown.stdout

    assert (
        run_cli(
            ["rules", "set", "authority", "forum", "0.1", "--tenant", tenant], setup.env()
        ).returncode
        == 0
    )
    shown = run_cli(["rules", "show", "--tenant", tenant], setup.env())
    assert f"{tenant}: authority forum = 0.1 · override" in shown.stdout

    typo = run_cli(
        ["rules", "set", "authority", "forum", "0.1", "--tenant", tenant[:-1]], setup.env()
    )
    assert typo.returncode == 2, typo.stderr
    assert f"did you mean {tenant!r}?" in typo.stderr and "--create" in typo.stderr
    created = run_cli(
        ["rules", "set", "authority", "forum", "0.1", "--tenant", tenant[:-1], "--create"],
        setup.env(),
    )
    assert created.returncode == 0, created.stderr


def test_publish_with_the_broker_down_is_one_line_within_seconds(
    stack: IngestSetup, tmp_path: Path
) -> None:
    setup = stack
    path = _write(tmp_path / "down.jsonl", [event("t", f"n:{i}", i) for i in range(140)])
    started = time.monotonic()
    result = run_cli(
        ["publish", str(path)],
        setup.env(
            MEMSTREAM_BROKER=f"127.0.0.1:{free_port()}",
            MEMSTREAM_KEY=setup.keyring.key("t", "producer", ["crm"]),
        ),
    )
    assert time.monotonic() - started < 20
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("memstream: broker: cannot reach 127.0.0.1:")
    assert "Fix:" in result.stderr and result.stdout == ""
    asked = run_cli(
        ["ask", "hi"],
        setup.env(
            MEMSTREAM_BROKER=f"127.0.0.1:{free_port()}",
            MEMSTREAM_KEY=setup.keyring.key(f"t-{uuid.uuid4().hex[:6]}"),
        ),
    )
    assert asked.returncode == 2
    assert asked.stderr.count("\n") == 1, asked.stderr
    assert asked.stderr.startswith("memstream: broker: cannot reach the broker at 127.0.0.1:")
