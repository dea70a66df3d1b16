"""``memstream up`` as a user runs it, and bad configuration ending in one clear line."""

from __future__ import annotations

import json
import re
import socket
import urllib.request
from pathlib import Path

import psutil

from memstream.ops.stack import free_port
from memstream.ops.topics import partition_counts
from memstream.services.adapters import shard_budget as sb
from tests.e2e.processes import Process, run_cli, wait_gone


def _postgres_running_on(data_dir: Path) -> list[psutil.Process]:
    return [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == "postgres" and str(data_dir) in " ".join(p.info["cmdline"] or [])
    ]


def test_up_reports_ready_answers_health_and_stops_clean(data_dir: Path) -> None:
    data_dir = data_dir.resolve()
    port, gateway_port = free_port(), free_port()
    up = Process(
        ["up"],
        {
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_WEB_PORT": str(port),
            "MEMSTREAM_GATEWAY_PORT": str(gateway_port),
            "MEMSTREAM_LOG_LEVEL": "warn",
        },
    )
    try:
        ready = up.wait_for("memstream ready in", timeout=90)
        seconds = float(ready.split("ready in ")[1].split("s")[0])
        assert seconds > 0
        for part in ("broker 127.0.0.1:", "postgres postgresql://", "redis redis://", "vectors "):
            assert part in ready
        # The worker states its open-shard budget, derived from this machine's limits.
        budget = up.wait_for("memstream: vector shards: at most", timeout=10)
        share = f"{sb.MAP_SHARE:.0%}"
        assert re.search(
            rf"at most \d+ open — maps allow \d+ \({share} of vm.max_map_count", budget
        )
        gateway = f"http://127.0.0.1:{gateway_port}"
        assert f"gateway {gateway}" in ready
        assert json.loads((data_dir / "stack.json").read_text())["gateway"] == gateway
        with urllib.request.urlopen(f"{gateway}/healthz", timeout=10) as reply:
            assert json.loads(reply.read())["status"] == "ok"
        broker = re.search(r"broker (127\.0\.0\.1:\d+)", ready)
        assert broker is not None
        # Faust's leader topic has the one partition Faust reads, not Tansu's default four.
        assert partition_counts(broker[1])["memstream-__assignor-__leader"] == 1
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as reply:
            health = json.loads(reply.read())
        assert reply.status == 200
        assert health["status"] == "ok"
        assert health["parts"]["postgres"] == "ok"
        # A user's session against it: publish, ask, audit — found through the data dir.
        # `up` wrote the development tenant's keys, readable by their owner only.
        credentials = data_dir / "credentials.json"
        assert credentials.stat().st_mode & 0o777 == 0o600
        assert set(json.loads(credentials.read_text())["tenants"]["dev"]) == {
            "agent",
            "producer",
            "admin",
        }
        env = {"MEMSTREAM_DATA_DIR": str(data_dir)}
        events = data_dir / "events.jsonl"
        events.write_text(
            "\n".join(
                json.dumps(
                    {
                        "event_id": f"e{i}",
                        "tenant_id": "dev",
                        "memory_key": "spec:X1",
                        "entity_type": "product",
                        "entity_id": "X1",
                        "fact_type": "product_spec",
                        "content": text,
                        "source_system": "catalog",
                        "occurred_at": f"202{i}-01-01T00:00:00Z",
                    }
                )
                for i, text in ((4, "X1 charges over micro-USB"), (5, "X1 charges over USB-C"))
            )
            + "\n"
        )
        published = run_cli(["publish", str(events), "--wait", "--timeout", "120"], env)
        assert "ingested 2 · duplicates 0 · dead-lettered 0" in published.stdout, published
        answered = run_cli(
            ["ask", "does my X1 charge over USB-C?", "--json"],
            env,  # the key's tenant: dev
        )
        reply = json.loads(answered.stdout)
        assert [(r["memory_key"], r["version"]) for r in reply["results"]] == [("spec:X1", 2)]
        # The gateway takes the development tenant's agent key.
        agent = json.loads(credentials.read_text())["tenants"]["dev"]["agent"]
        history = urllib.request.Request(
            f"{gateway}/v1/memories/spec:X1/history", headers={"Authorization": f"Bearer {agent}"}
        )
        with urllib.request.urlopen(history, timeout=10) as page:
            assert [v["version"] for v in json.loads(page.read())["versions"]] == [1, 2]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
            metrics = page.read().decode()
        assert 'memstream_events_ingested_total{outcome="current"} 2.0' in metrics
        assert 'memstream_retrievals_total{status="ok"} 1.0' in metrics
        assert 'memstream_retrieval_latency_ms_count{stage="total"} 1.0' in metrics
        assert 'memstream_cache_requests_total{kind="reply",outcome="miss"}' in metrics
        lag = re.search(r"^memstream_ingest_lag_seconds (\S+)$", metrics, re.M)
        assert lag is not None and 0 < float(lag[1]) < 60, metrics  # published → recorded
        children = up.descendants()
        assert any("tansu" in " ".join(c.cmdline()) for c in children)
        assert _postgres_running_on(data_dir)
    finally:
        code = up.terminate()
    assert code == 0, up.output[-3000:]
    assert not wait_gone(children), "a child of `memstream up` outlived it"
    assert not _postgres_running_on(data_dir), "embedded postgres outlived `memstream up`"
    assert "Traceback" not in up.output
    assert "Batches" not in up.output  # no progress bar of the model's own


def _one_clear_error(result: object, *fragments: str) -> None:
    code = result.returncode
    stderr = result.stderr
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("memstream:")]
    assert len(lines) == 1, stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_unreachable_dsn_is_one_clear_error(tmp_path: Path) -> None:
    result = run_cli(
        ["up"],
        {
            "MEMSTREAM_DATA_DIR": str(tmp_path),
            "MEMSTREAM_WEB_PORT": str(free_port()),
            "MEMSTREAM_POSTGRES_DSN": "postgresql://nobody@127.0.0.1:1/none",
        },
    )
    _one_clear_error(result, "postgres", "Fix:", "MEMSTREAM_POSTGRES_DSN")


def test_taken_port_is_one_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            ["up"], {"MEMSTREAM_DATA_DIR": str(tmp_path), "MEMSTREAM_WEB_PORT": str(port)}
        )
    _one_clear_error(result, f"port {port}", "already in use", "MEMSTREAM_WEB_PORT")


def test_missing_model_path_is_one_clear_error(tmp_path: Path) -> None:
    result = run_cli(
        ["up"],
        {
            "MEMSTREAM_DATA_DIR": str(tmp_path),
            "MEMSTREAM_WEB_PORT": str(free_port()),
            "MEMSTREAM_MODEL_PATH": str(tmp_path / "no-model"),
        },
    )
    _one_clear_error(result, "embedding model", "MEMSTREAM_MODEL_PATH")


def test_bad_setting_is_one_clear_error(tmp_path: Path) -> None:
    result = run_cli(["up"], {"MEMSTREAM_DATA_DIR": str(tmp_path), "MEMSTREAM_PARTITIONS": "x"})
    _one_clear_error(result, "MEMSTREAM_PARTITIONS")


def test_help_lists_every_command() -> None:
    result = run_cli(["--help"], {})
    assert result.returncode == 0
    for command in ("up", "worker", "health", "publish", "history"):
        assert f"    {command}" in result.stdout


def test_ask_and_publish_without_a_credential_are_one_clear_line(tmp_path: Path) -> None:
    env = {
        "MEMSTREAM_DATA_DIR": str(tmp_path),
        "MEMSTREAM_BROKER": "127.0.0.1:1",
        "MEMSTREAM_POSTGRES_DSN": "postgresql://nobody@127.0.0.1:1/none",
        "MEMSTREAM_REDIS_URL": "redis://127.0.0.1:1",
    }
    events = tmp_path / "events.jsonl"
    events.write_text(
        json.dumps(
            {
                "event_id": "e1",
                "tenant_id": "dev",
                "entity_type": "product",
                "entity_id": "X1",
                "fact_type": "note",
                "content": "x",
                "source_system": "crm",
                "occurred_at": "2024-01-01T00:00:00Z",
            }
        )
        + "\n"
    )
    for args in (["ask", "what did I buy?"], ["publish", str(events)]):
        result = run_cli(args, env)
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        lines = [line for line in result.stderr.splitlines() if line.startswith("memstream:")]
        assert len(lines) == 1, result.stderr
        assert "credential" in lines[0] and "MEMSTREAM_KEY" in lines[0], lines[0]
