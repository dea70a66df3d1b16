"""The fresh seed suite: deterministic per seed, every kind in both languages, and every case
well-formed (exactly one right memory, present in the question's tenant; what must never be
returned lives in another tenant)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from memstream.bench.quality.runner import REPORTED, Options, SuiteRun, build_suites
from memstream.bench.quality.scoring import score
from memstream.bench.quality.seed_words import question_language
from memstream.bench.quality.seedfresh import KINDS, seed_fresh_suite
from memstream.bench.quality.suite import Suite, doc_id

NOW = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _docs(suite: Suite) -> dict[str, dict[str, object]]:
    return {doc_id(e["tenant_id"], e["event_id"]): e for e in suite.all_events()}


def test_the_suite_is_deterministic_per_seed_and_moves_with_it() -> None:
    a, b = seed_fresh_suite(10, NOW, seed=11), seed_fresh_suite(10, NOW, seed=11)
    assert a.questions == b.questions
    assert a.events == b.events and a.late == b.late
    other = seed_fresh_suite(10, NOW, seed=12)
    assert [q.query for q in other.questions] != [q.query for q in a.questions]
    assert [e["content"] for e in other.events] != [e["content"] for e in a.events]


def test_ten_kinds_of_ten_to_twenty_cases_alternately_english_and_chinese() -> None:
    assert len(KINDS) == 10
    assert len(seed_fresh_suite(3, NOW).questions) == 10 * len(KINDS)
    suite = seed_fresh_suite(50, NOW, seed=11)
    assert len(suite.questions) == 20 * len(KINDS)
    by_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for q in suite.questions:
        lang = question_language(q)
        assert lang == ("en", "zh")[int(q.qid.split("-")[-2]) % 2]
        assert bool(CJK.search(q.query)) == (lang == "zh"), q.query
        by_kind[(q.group, lang)].append(q.query)
    for kind in KINDS:
        for lang in ("en", "zh"):
            assert len(set(by_kind[(kind, lang)])) >= 2, (kind, lang)


def test_every_case_has_exactly_one_right_memory_in_its_tenant() -> None:
    for seed in (11, 12):
        suite = seed_fresh_suite(20, NOW, seed=seed)
        docs = _docs(suite)
        entities: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for e in suite.events:
            entities[e["tenant_id"]].add((e["entity_type"], e["entity_id"]))
            entities[e["tenant_id"]] |= {(x["type"], x["id"]) for x in e.get("entities", [])}
        assert len({q.tenant_id for q in suite.questions}) == len(suite.questions)
        for q in suite.questions:
            assert len(q.right) == 1, q.qid
            (right,) = q.right
            assert right in docs, q.qid
            assert docs[right]["tenant_id"] == q.tenant_id and docs[right]["op"] == "UPSERT"
            assert q.stale and right not in q.stale and right not in q.forbidden
            for doc in q.stale:
                assert docs[doc]["tenant_id"] == q.tenant_id, q.qid
            for doc in q.forbidden:  # another shop's record, never this tenant's
                assert docs[doc]["tenant_id"] != q.tenant_id, q.qid
            assert bool(CJK.search(str(docs[right]["content"]))) == (question_language(q) == "zh")
            if user := q.request.get("user_id"):
                assert ("customer", user) in entities[q.tenant_id]
            for anchor in q.request.get("context", {}).get("active_entities", []):
                assert (anchor["type"], anchor["id"]) in entities[q.tenant_id]
            assert "force" not in q.request
            if "as_of" in q.request:
                assert docs[right]["occurred_at"] <= q.request["as_of"]
        for e in suite.all_events():
            assert e["tenant_id"].startswith("fresh-") and e["occurred_at"] <= NOW.isoformat()


def test_the_runner_builds_it_and_scoring_reports_its_families(tmp_path: Path) -> None:
    options = Options(suites=("seedfresh",), traps_per_family=10, seed=11, datasets=tmp_path)
    (suite,) = build_suites(options, NOW)
    assert suite.name == "seedfresh" and len(suite.questions) == 10 * len(KINDS)
    right = [[*q.right, *q.stale] for q in suite.questions]
    wrong = [[*q.stale, *q.right] for q in suite.questions]
    run = SuiteRun(suite, {s: right for s in REPORTED}, [[] for _ in suite.questions], {})
    run.rankings["vector"] = wrong
    scores = score([run])
    assert scores.seedfresh["memstream"]["all"] == 0.0
    assert scores.seedfresh["vector"]["all"] == 1.0
    assert set(KINDS) <= set(scores.seedfresh_counts)
    assert scores.seedfresh_counts["all · zh"] == 5 * len(KINDS)
    assert scores.headline()["memstream"]["fresh seed wrong-memory rate ↓"] == 0.0
    assert not scores.seedtraps


def test_a_waybills_right_node_is_its_latest_by_time() -> None:
    """The follow-up about a waybill expects its latest tracking node: the one that happened
    last, so nodes must happen in the order they are told (a node drawn earlier than the one
    before it made the expected answer a superseded version)."""
    for seed in range(7, 17):
        suite = seed_fresh_suite(20, NOW, seed=seed)
        docs = _docs(suite)
        for q in suite.questions:
            if q.group != "followup_waybill":
                continue
            (right,) = q.right
            key = (docs[right]["tenant_id"], docs[right]["memory_key"])
            nodes = [e for e in docs.values() if (e["tenant_id"], e["memory_key"]) == key]
            assert docs[right]["occurred_at"] == max(e["occurred_at"] for e in nodes), q.qid
