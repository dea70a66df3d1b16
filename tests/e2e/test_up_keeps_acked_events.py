"""``memstream up`` keeps every event it acknowledged: on a clean stop (SIGTERM right after a raw
Kafka producer's acks: the doors close, the worker drains the events topic, then the broker
stops) and on a crash (SIGKILL right after ``memstream publish``, which on the embedded broker
acknowledges only what the ledger holds). Counted in Postgres after the next ``up``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx

from memstream.bench.kit import synthetic_events
from memstream.ops.identity import credential_for
from memstream.ops.ingest_status import wait_for
from memstream.ops.publish import Signers
from memstream.ops.stack import free_port, resolve_settings
from memstream.services.bootstrap import Ident
from memstream.services.domain.validation import validate_event
from memstream.services.settings import Settings
from memstream.streams.producer import EventProducer
from tests.e2e.processes import Process, guard, run_cli

CLEAN_STOP_EVENTS = 2_000
CRASH_EVENTS = 500


def _up(data_dir: Path, gateway_port: int | None = None) -> Process:
    up = Process(
        ["up"],
        {
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_WEB_PORT": str(free_port()),
            "MEMSTREAM_GATEWAY_PORT": str(gateway_port or free_port()),
            "MEMSTREAM_LOG_LEVEL": "warn",
        },
    )
    up.wait_for("memstream ready in", timeout=180)
    return up


def _events(tenant: str, count: int, tag: str) -> list[dict[str, object]]:
    raws = synthetic_events(tenant, count)
    for raw in raws:
        raw["event_id"] = f"{raw['event_id']}-{tag}"
    return raws


def _recorded_after_restart(data_dir: Path, idents: list[Ident]) -> int:
    """Start ``up`` again on the data dir; how many of ``idents`` Postgres holds at once."""
    again = _up(data_dir)
    try:
        settings = resolve_settings(Settings(data_dir=data_dir))
        status = wait_for(settings, idents, timeout=0, until="recorded")
        return len(status.recorded)
    finally:
        assert again.terminate(timeout=120) == 0, again.output[-3000:]


def test_sigterm_right_after_broker_acks_loses_no_event(data_dir: Path) -> None:
    data_dir = data_dir.resolve()
    up = _up(data_dir)
    raws = _events("dev", CLEAN_STOP_EVENTS, "stop")
    idents = [("dev", str(raw["event_id"])) for raw in raws]
    try:
        settings = resolve_settings(Settings(data_dir=data_dir))
        assert settings.broker is not None
        # A producer as a CRM runs it: raw Kafka, acks=all from the broker, nothing more.
        producer = EventProducer(settings.broker, Signers(settings).headers)
        for raw in raws:
            producer.send(settings.topics.events, validate_event(raw, datetime.now(UTC)))
        assert producer.finish(60) == 0, producer.failures[:3]
    finally:
        code = up.terminate(timeout=400)  # SIGTERM right after the last ack
    assert code == 0, up.output[-3000:]
    assert "stopping: the gateway (HTTP, MCP) is closed" in up.output
    assert "drained, every acknowledged event is in the ledger" in up.output, up.output[-3000:]
    assert _recorded_after_restart(data_dir, idents) == CLEAN_STOP_EVENTS


def test_sigkill_right_after_publish_loses_no_acknowledged_event(data_dir: Path) -> None:
    """Both producers of the embedded stack acknowledge in the ledger: ``memstream publish`` and
    ``POST /v1/events`` without ``wait`` (the stack decides)."""
    data_dir = data_dir.resolve()
    gateway_port = free_port()
    up = _up(data_dir, gateway_port)
    raws = _events("dev", CRASH_EVENTS, "crash")
    over_http = _events("dev", 20, "http")
    idents = [("dev", str(raw["event_id"])) for raw in [*raws, *over_http]]
    events = data_dir / "events.jsonl"
    events.write_text("\n".join(json.dumps(raw) for raw in raws) + "\n")
    try:
        published = run_cli(["publish", str(events)], {"MEMSTREAM_DATA_DIR": str(data_dir)})
        producer = credential_for(Settings(data_dir=data_dir), "producer")
        answered = httpx.post(
            f"http://127.0.0.1:{gateway_port}/v1/events",
            json=over_http,
            headers={"Authorization": f"Bearer {producer}"},
            timeout=guard(120),
        )
    finally:
        up.kill()  # SIGKILL right after the acknowledgement: nothing of `up` runs any more
    assert published.returncode == 0, published.stdout + published.stderr
    assert (
        f"acknowledged in the ledger: {CRASH_EVENTS} of {CRASH_EVENTS} recorded" in published.stdout
    ), published.stdout
    assert answered.status_code == 200, answered.text
    assert answered.json()["acknowledged"] == "ledger" and answered.json()["pending"] == []
    assert _recorded_after_restart(data_dir, idents) == CRASH_EVENTS + len(over_http)
