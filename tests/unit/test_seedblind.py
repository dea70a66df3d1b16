"""The blind seed suite: deterministic per seed, both languages, and every case well-formed
(one right memory, present and live in the question's tenant; what must rank below or never be
returned is another memory; the anchors and users a request names exist in its tenant)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from memstream.bench.quality.runner import (
    ALL_SUITES,
    REPORTED,
    SEED_SUITES,
    Options,
    SuiteRun,
    build_suites,
)
from memstream.bench.quality.scoring import BLIND_NOTE, score
from memstream.bench.quality.seed_words import question_language
from memstream.bench.quality.seedblind import CHINESE_ONLY, KINDS, seed_blind_suite
from memstream.bench.quality.suite import Suite, doc_id

NOW = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _docs(suite: Suite) -> dict[str, dict[str, object]]:
    return {doc_id(e["tenant_id"], e["event_id"]): e for e in suite.all_events()}


def test_the_suite_is_deterministic_per_seed_and_moves_with_it() -> None:
    a, b = seed_blind_suite(10, NOW, seed=1), seed_blind_suite(10, NOW, seed=1)
    assert a.questions == b.questions
    assert a.events == b.events and a.late == b.late
    other = seed_blind_suite(10, NOW, seed=2)
    assert [q.query for q in other.questions] != [q.query for q in a.questions]
    assert [e["content"] for e in other.events] != [e["content"] for e in a.events]


def test_twelve_to_fourteen_kinds_in_both_languages() -> None:
    assert 12 <= len(KINDS) <= 14
    assert len(seed_blind_suite(3, NOW).questions) == 10 * len(KINDS)  # clamped to 10
    suite = seed_blind_suite(50, NOW, seed=1)
    assert len(suite.questions) == 20 * len(KINDS)  # clamped to 20
    queries: dict[tuple[str, str], set[str]] = defaultdict(set)
    for q in suite.questions:
        lang = question_language(q)
        index = int(q.qid.split("-")[-2])
        expected = "zh" if q.group in CHINESE_ONLY else ("en", "zh")[index % 2]
        assert lang == expected, q.qid
        assert bool(CJK.search(q.query)) == (lang == "zh"), q.query
        queries[(q.group, lang)].add(q.query)
    for kind in KINDS:
        for lang in ("zh",) if kind in CHINESE_ONLY else ("en", "zh"):
            assert len(queries[(kind, lang)]) >= 3, (kind, lang)  # varied wording
    assert {question_language(q) for q in suite.questions} == {"en", "zh"}


def test_every_question_names_one_live_right_memory_in_its_own_tenant() -> None:
    for seed in (1, 2, 3):
        suite = seed_blind_suite(20, NOW, seed=seed)
        docs = _docs(suite)
        retracted = {(e["tenant_id"], e["memory_key"]) for e in suite.late if e["op"] == "RETRACT"}
        entities: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for e in suite.events:
            entities[e["tenant_id"]].add((e["entity_type"], e["entity_id"]))
            entities[e["tenant_id"]] |= {(x["type"], x["id"]) for x in e.get("entities", [])}
        assert len({q.tenant_id for q in suite.questions}) == len(suite.questions)
        for q in suite.questions:
            assert len(q.right) == 1, q.qid
            (right,) = q.right
            event = docs[right]
            assert event["tenant_id"] == q.tenant_id and event["op"] == "UPSERT", q.qid
            assert (q.tenant_id, event["memory_key"]) not in retracted, q.qid
            assert bool(CJK.search(str(event["content"]))) == (question_language(q) == "zh")
            assert q.stale and right not in q.stale and right not in q.forbidden, q.qid
            assert not q.stale & q.forbidden, q.qid
            for doc in q.stale | q.forbidden:
                assert docs[doc]["tenant_id"] == q.tenant_id and docs[doc]["op"] == "UPSERT"
            if user := q.request.get("user_id"):
                assert ("customer", user) in entities[q.tenant_id], q.qid
            anchors = [*q.request.get("anchors", [])]
            anchors += q.request.get("context", {}).get("active_entities", [])
            for anchor in anchors:
                assert (anchor["type"], anchor["id"]) in entities[q.tenant_id], q.qid
            if "as_of" in q.request:
                assert str(event["occurred_at"]) <= q.request["as_of"], q.qid
            assert "force" not in q.request
        for e in suite.all_events():
            assert e["tenant_id"].startswith("blind-") and e["occurred_at"] <= NOW.isoformat()


def test_forbidden_memories_are_retracted_posts_or_other_customers_records() -> None:
    suite = seed_blind_suite(20, NOW, seed=1)
    docs = _docs(suite)
    retracted = {(e["tenant_id"], e["memory_key"]) for e in suite.late if e["op"] == "RETRACT"}
    kinds = set()
    for q in suite.questions:
        (right,) = q.right
        for doc in q.forbidden:
            kinds.add(q.group)
            event = docs[doc]
            gone = (event["tenant_id"], event["memory_key"]) in retracted
            someone_else = event["entity_id"] != docs[right]["entity_id"]
            assert gone or someone_else, q.qid
    assert {"source_ladder", "other_customer_forbidden"} <= kinds


def test_the_runner_builds_it_out_of_the_gate_set_and_scoring_withholds_its_cases(
    tmp_path: Path,
) -> None:
    assert "seedblind" in ALL_SUITES and "seedblind" in SEED_SUITES
    options = Options(suites=("seedblind",), traps_per_family=10, seed=1, datasets=tmp_path)
    (suite,) = build_suites(options, NOW)
    assert suite.name == "seedblind" and len(suite.questions) == 10 * len(KINDS)
    right = [[*q.right, *q.stale] for q in suite.questions]
    wrong = [[*q.stale, *q.right] for q in suite.questions]
    run = SuiteRun(suite, {s: right for s in REPORTED}, [[] for _ in suite.questions], {})
    run.rankings["vector"] = wrong
    scores = score([run])
    assert scores.seedblind["memstream"]["all"] == 0.0
    assert scores.seedblind["vector"]["all"] == 1.0
    assert set(KINDS) <= set(scores.seedblind_counts)
    assert scores.headline()["memstream"]["blind seed wrong-memory rate ↓"] == 0.0
    assert scores.examples["seedblind"] == [BLIND_NOTE]
    assert not scores.seedfresh and not scores.seedtraps
