"""The held-out seed suite: deterministic per seed, both languages, and every case well-formed
(one right memory, present and live in the question's tenant; the forbidden ones are other
stored memories of that tenant, never the right one; the anchors and users a request names
exist in its tenant)."""

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
from memstream.bench.quality.scoring import BLIND, BLIND_NOTE, score
from memstream.bench.quality.seed_words import question_language
from memstream.bench.quality.seedheld import KINDS, seed_held_suite
from memstream.bench.quality.suite import Suite, doc_id

NOW = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)
CJK = re.compile(r"[\u4e00-\u9fff]")
COMBINED = {"focus_month", "retract_supersede", "first_twin"}


def _docs(suite: Suite) -> dict[str, dict[str, object]]:
    return {doc_id(e["tenant_id"], e["event_id"]): e for e in suite.all_events()}


def test_the_suite_is_deterministic_per_seed_and_moves_with_it() -> None:
    a, b = seed_held_suite(10, NOW, seed=1), seed_held_suite(10, NOW, seed=1)
    assert a.questions == b.questions
    assert a.events == b.events and a.late == b.late
    other = seed_held_suite(10, NOW, seed=2)
    assert [q.query for q in other.questions] != [q.query for q in a.questions]
    assert [e["content"] for e in other.events] != [e["content"] for e in a.events]


def test_ten_kinds_with_a_combined_part_in_both_languages() -> None:
    assert len(KINDS) == 10 and set(KINDS) >= COMBINED
    assert len(seed_held_suite(3, NOW).questions) == 10 * len(KINDS)  # clamped to 10
    suite = seed_held_suite(50, NOW, seed=1)
    assert suite.name == "seedheld"
    assert len(suite.questions) == 20 * len(KINDS)  # clamped to 20
    queries: dict[tuple[str, str], set[str]] = defaultdict(set)
    for q in suite.questions:
        lang = question_language(q)
        assert lang in ("en", "zh"), q.qid
        assert bool(CJK.search(q.query)) == (lang == "zh"), q.query
        queries[(q.group, lang)].add(q.query)
    for kind in KINDS:
        for lang in ("en", "zh"):
            assert len(queries[(kind, lang)]) >= 3, (kind, lang)  # varied wording
    assert {q.group for q in suite.questions} == set(KINDS)


def test_every_question_names_one_live_right_memory_in_its_own_tenant() -> None:
    for seed in (1, 2, 3):
        suite = seed_held_suite(20, NOW, seed=seed)
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
            assert right not in q.forbidden and right not in q.stale, q.qid
            for doc in q.stale | q.forbidden:
                assert docs[doc]["tenant_id"] == q.tenant_id and docs[doc]["op"] == "UPSERT"
            if user := q.request.get("user_id"):
                assert ("customer", user) in entities[q.tenant_id], q.qid
            anchors = [*q.request.get("anchors", [])]
            anchors += q.request.get("context", {}).get("active_entities", [])
            for anchor in anchors:
                assert (anchor["type"], anchor["id"]) in entities[q.tenant_id], q.qid
            assert "force" not in q.request
        for e in suite.all_events():
            assert e["tenant_id"].startswith(f"h4s{seed}-") and e["occurred_at"] <= NOW.isoformat()


def test_forbidden_memories_are_superseded_versions_or_retracted_posts() -> None:
    suite = seed_held_suite(20, NOW, seed=1)
    docs = _docs(suite)
    retracted = {(e["tenant_id"], e["memory_key"]) for e in suite.late if e["op"] == "RETRACT"}
    kinds = set()
    for q in suite.questions:
        (right,) = q.right
        for doc in q.forbidden:
            kinds.add(q.group)
            event = docs[doc]
            gone = (event["tenant_id"], event["memory_key"]) in retracted
            superseded = event["memory_key"] == docs[right]["memory_key"]
            assert gone or superseded, q.qid
    assert {"spec_supersede", "retract_supersede"} <= kinds


def test_the_runner_builds_it_out_of_the_gate_set_and_scoring_lists_its_misses(
    tmp_path: Path,
) -> None:
    assert "seedheld" in ALL_SUITES and "seedheld" in SEED_SUITES
    assert "seedheld" not in BLIND
    options = Options(suites=("seedheld",), traps_per_family=10, seed=1, datasets=tmp_path)
    (suite,) = build_suites(options, NOW)
    assert suite.name == "seedheld" and len(suite.questions) == 10 * len(KINDS)
    ranked = [[*q.right, *q.forbidden] for q in suite.questions]
    run = SuiteRun(suite, {s: ranked for s in REPORTED}, [[] for _ in suite.questions], {})
    scores = score([run])
    assert set(scores.seedheld) == set(REPORTED)
    assert all(scores.seedheld_counts[kind] == 10 for kind in KINDS)
    assert scores.seedheld_counts["all"] == len(suite.questions)
    assert scores.seedheld_counts["all · en"] + scores.seedheld_counts["all · zh"] == 100
    for rates in scores.seedheld.values():
        assert set(KINDS) <= set(rates)
        assert all(0.0 <= rate <= 1.0 for rate in rates.values())
    headline = scores.headline()["memstream"]["held-out seed wrong-memory rate ↓"]
    assert headline is not None and 0.0 <= headline <= 1.0
    listed = scores.examples["seedheld"]  # its misses are listed, as the fresh suite's are
    assert isinstance(listed, list) and all(isinstance(line, str) for line in listed)
    assert listed != [BLIND_NOTE]
    assert len(listed) == sum(1 for q in suite.questions if q.forbidden)  # forbidden served
    assert not scores.seedblind and not scores.seedfresh and not scores.seedtraps
