"""``memstream ask`` and the CLI's manners, as a user runs them against a real worker.

``ask --batch`` answers every line of a file with one poisoned line; ``ask`` prints the request
id ``audit`` needs and takes a date as midnight UTC; mistyped commands and flags get a
suggestion and exit 2; a reader that goes away (``| head``) ends the command quietly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ingest_kit import IngestSetup, encoded, event, make_setup
from tests.e2e.processes import ROOT, Process, guard, memstream_env, run_cli


@pytest.fixture(scope="module")
def stack(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[IngestSetup, str]]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("ask-cli"))
    worker: Process = setup.worker()
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    events = [event(tenant, f"order:C-{n}", n, content=f"C-{n} ordered a kettle") for n in range(5)]
    setup.produce(encoded(e) for e in events)
    status = setup.wait([(e["tenant_id"], e["event_id"]) for e in events], timeout=120)
    assert not status.pending and not status.dead, status
    yield setup, tenant
    assert worker.terminate() == 0, worker.output[-3000:]


def env(setup: IngestSetup, tenant: str, **extra: str) -> dict[str, str]:
    return setup.env(MEMSTREAM_KEY=setup.keyring.key(tenant), **extra)


def test_a_batch_with_one_poisoned_line_returns_every_other_reply(
    stack: Any, tmp_path: Path
) -> None:
    setup, tenant = stack
    lines = [
        json.dumps({"request_id": f"r{n}", "tenant_id": tenant, "query": "what did C-1 order?"})
        for n in range(6)
    ]
    lines.insert(2, '{"request_id": "broken", "tenant_id": ')  # not JSON
    lines.insert(4, json.dumps({"request_id": "bad-date", "tenant_id": tenant, "query": "q",
                                "as_of": "yesterday"}))  # fmt: skip
    lines.insert(6, json.dumps({"request_id": "nul", "tenant_id": f"{tenant}\x00", "query": "q"}))
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli(
        ["ask", "--batch", str(batch), "--concurrency", "3", "--timeout", "30"], env(setup, tenant)
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(replies) == len(lines)
    ids = [r["request_id"] for r in replies]
    assert ids == ["r0", "r1", None, "r2", "bad-date", "r3", "nul", "r4", "r5"]
    by_id = {r["request_id"]: r for r in replies}
    for n in range(6):
        assert by_id[f"r{n}"]["status"] in ("ok", "skipped"), by_id[f"r{n}"]
    assert replies[2]["error"]["code"] == "bad_line"
    assert by_id["bad-date"]["error"]["code"] == "bad_line"
    assert by_id["nul"]["error"]["code"] == "forbidden"  # answered by the worker
    assert "3 of 9 requests failed" in result.stderr


def test_ask_prints_the_request_id_and_takes_a_date(stack: Any) -> None:
    setup, tenant = stack
    result = run_cli(
        ["ask", "what did C-1 order?", "--tenant", tenant, "--as-of", "2026-06-01", "--force"],
        env(setup, tenant),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert " · request " in first
    request_id = first.rsplit(" ", 1)[1]
    audit = run_cli(["audit", request_id, "--json"], env(setup, tenant))
    assert audit.returncode == 0, audit.stderr
    logged = json.loads(audit.stdout.splitlines()[0])
    assert logged["request"]["as_of"].startswith("2026-06-01T00:00:00")


def test_a_skipped_question_says_how_to_force(stack: Any) -> None:
    setup, tenant = stack
    result = run_cli(["ask", "tell me a joke", "--tenant", tenant], env(setup, tenant))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("skipped · gate skip: "), result.stdout
    assert "ask again with --force" in result.stdout


def test_usage_errors_exit_2_with_a_suggestion(stack: Any) -> None:
    setup, tenant = stack
    flag = run_cli(["ask", "hello", "--tenat", tenant], env(setup, tenant))
    assert flag.returncode == 2
    assert "did you mean --tenant?" in flag.stderr
    command = run_cli(["aks", "hello"], env(setup, tenant))
    assert command.returncode == 2
    assert "did you mean 'ask'?" in command.stderr
    value = run_cli(
        ["ask", "hello", "--tenant", tenant, "--as-of", "yesterday"], env(setup, tenant)
    )
    assert value.returncode == 2, value.stderr
    assert value.stderr.count("\n") == 1 and "memstream: ask: --as-of" in value.stderr


def test_a_closed_pipe_ends_quietly(stack: Any) -> None:
    setup, tenant = stack
    versions = [event(tenant, "log:C-9", n, content=f"note {n} " + "x" * 400) for n in range(300)]
    setup.produce(encoded(e) for e in versions)  # a history longer than a pipe holds
    status = setup.wait([(e["tenant_id"], e["event_id"]) for e in versions], timeout=240)
    assert not status.pending and not status.dead, status
    pipeline = subprocess.run(
        f"{sys.executable} -m memstream.cli history log:C-9 --tenant {tenant} --json | head -c 1",
        shell=True,
        env=memstream_env(env(setup, tenant)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=guard(120),
        check=False,
    )
    assert pipeline.stdout == "{"
    assert "Traceback" not in pipeline.stderr and "BrokenPipe" not in pipeline.stderr


def test_a_second_worker_on_the_same_qdrant_edge_dir_refuses_in_one_line(stack: Any) -> None:
    setup, tenant = stack
    second = Process(["worker"], env(setup, tenant))
    assert second.proc.wait(120) == 2, second.output
    time.sleep(0.2)
    lines = [line for line in second.lines if line.strip()]
    assert len(lines) == 1, second.output
    assert lines[0].startswith("memstream: vectors (Qdrant Edge): another worker already serves")
    assert "MEMSTREAM_QDRANT_URL" in lines[0]
    # The first worker still answers.
    result = run_cli(
        ["ask", "kettle?", "--tenant", tenant, "--force", "--json"], env(setup, tenant)
    )
    assert json.loads(result.stdout)["status"] == "ok", result.stderr
