"""``memstream demo`` as a newcomer runs it, and the consistency of its question set.

The end-to-end test runs the real command (embedded stack, worker subprocess, Kafka
request/reply) with no MEMSTREAM_* endpoints, and checks what the README promises: every
question answered, memstream right on all of them, plain vector search visibly not, the time
printed, and nothing left running afterwards.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import psutil

from memstream.ops.demo_data import ACME, GLOBEX, history, questions
from memstream.services.domain.validation import validate_event
from tests.e2e.processes import run_cli

NOW = datetime.now(UTC)
MARK = "DEMO_TEST_MARK"  # inherited by every process the demo starts


def _left_behind(data_dir: Path, mark: str) -> list[str]:
    """Processes that name the demo's data dir, work in it, or carry the test's mark in their
    environment (redis-server and postgres overwrite their environment with their titles, but
    work in the data dir; tansu and the worker inherit the mark)."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            inside = proc.cwd().startswith(str(data_dir))
            marked = proc.environ().get(MARK) == mark
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if str(data_dir) in cmdline or inside or marked:
            found.append(f"{proc.info['pid']} {proc.info['name']}: {cmdline[:120]}")
    return found


def test_demo_answers_every_question_and_leaves_nothing_running() -> None:
    mark = uuid.uuid4().hex
    # Wide enough that no question or summary is wrapped; no MEMSTREAM_* endpoint: embedded.
    result = run_cli(["demo"], {MARK: mark, "COLUMNS": "220"}, timeout=280)
    out = result.stdout + result.stderr
    wrong = "\n".join(panel for panel in out.split("╭") if "✗ memstream" in panel)
    assert result.returncode == 0, wrong or out[-6000:]
    assert "Traceback" not in out
    for q in questions(NOW):
        assert q.query in out, f"question not printed: {q.query}"
    summary = re.search(
        r"plain vector search: (\d+)/(\d+) wrong · memstream: (\d+)/(\d+) wrong", out
    )
    assert summary, out[-3000:]
    plain_wrong, total, ours_wrong, total_again = map(int, summary.groups())
    assert total == total_again == len(questions(NOW))
    assert ours_wrong == 0, out[-6000:]
    assert plain_wrong >= 3, out[-6000:]
    assert re.search(r"demo finished in \d+\.\ds", out)
    data_dir = re.search(r"data dir (\S+)", out)
    assert data_dir, out[:2000]
    path = Path(data_dir.group(1))
    assert not _left_behind(path, mark), "the demo left processes behind"
    assert not path.exists(), "the demo's data dir was not removed"


def test_every_event_is_valid_and_publishing_order_is_valid_time_order() -> None:
    events = history(NOW)
    assert 60 <= len(events) <= 150
    assert len({(e["tenant_id"], e["event_id"]) for e in events}) == len(events)
    last: dict[tuple[str, str], datetime] = {}
    for raw in events:
        event = validate_event(raw, NOW)
        key = (event.tenant_id, event.memory_key)
        assert key not in last or last[key] <= event.occurred_at, f"{key} out of order"
        last[key] = event.occurred_at
    assert {e["tenant_id"] for e in events} == {ACME, GLOBEX}
    assert any(e["op"] == "RETRACT" for e in events)
    assert any(re.search(r"[\u4e00-\u9fff]", e["content"]) for e in events)


def test_every_right_answer_exists_in_its_tenant() -> None:
    events = history(NOW)
    versions = Counter((e["tenant_id"], e["memory_key"]) for e in events)
    for q in questions(NOW):
        assert any(e["tenant_id"] == q.tenant for e in events), f"{q.trap}: no data"
        for answer in q.answers:
            key, _, version = answer.partition("@")
            assert versions[q.tenant, key] >= int(version or 1), f"{q.trap}: no {answer}"
        for key in q.never:
            assert versions[q.tenant, key], f"{q.trap}: {key} is never published"


def test_questions_cover_every_trap_and_read_as_documented() -> None:
    asked = questions(NOW)
    traps = {q.trap for q in asked}
    assert len(traps) == len(asked) >= 11
    assert any(q.as_of for q in asked) and any(q.window for q in asked)
    assert any(re.search(r"[\u4e00-\u9fff]", q.query) for q in asked)
    assert {q.tenant for q in asked} == {ACME, GLOBEX}
    spec = next(q for q in asked if q.trap == "superseded spec")
    assert spec.is_right("spec:X1", 2) and not spec.is_right("spec:X1", 1)
    views = {e["memory_key"]: e["content"] for e in history(NOW)}
    recent = next(q for q in asked if q.trap == "3-year-old view")
    assert "TrailMax" in views[recent.answers[0]]


def test_a_suffix_renames_every_tenant() -> None:
    suffix = "-run1"
    assert {e["tenant_id"] for e in history(NOW, suffix)} == {ACME + suffix, GLOBEX + suffix}
    assert {q.tenant for q in questions(NOW, suffix)} == {ACME + suffix, GLOBEX + suffix}
