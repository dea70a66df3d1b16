"""The seed trap suite and the seed gate set: deterministic per seed, every kind in both
languages, and every case well-formed (its expected memory exists, is current, in its tenant)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from memstream.bench.quality.gate_set import GateOutcome, GateQuestion
from memstream.bench.quality.runner import REPORTED, Options, SuiteRun, build_suites
from memstream.bench.quality.scoring import score
from memstream.bench.quality.seed_gate import MEMORY, OTHER, PREFIX, seed_gate_rates, seed_gate_set
from memstream.bench.quality.seed_words import question_language
from memstream.bench.quality.seedtraps import KINDS, seed_trap_suite
from memstream.bench.quality.suite import Suite, doc_id

NOW = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _docs(suite: Suite) -> dict[str, dict[str, object]]:
    return {doc_id(e["tenant_id"], e["event_id"]): e for e in suite.all_events()}


def test_the_suite_is_deterministic_per_seed_and_moves_with_it() -> None:
    a, b = seed_trap_suite(4, NOW, seed=3), seed_trap_suite(4, NOW, seed=3)
    assert a.questions == b.questions
    assert a.events == b.events and a.late == b.late
    other = seed_trap_suite(4, NOW, seed=4)
    assert [q.query for q in other.questions] != [q.query for q in a.questions]
    assert [e["content"] for e in other.events] != [e["content"] for e in a.events]


def test_every_kind_is_asked_in_english_and_chinese_with_several_phrasings() -> None:
    suite = seed_trap_suite(12, NOW, seed=11)
    assert {q.group for q in suite.questions} == set(KINDS)
    assert len(suite.questions) == 12 * len(KINDS)
    by_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for q in suite.questions:
        lang = question_language(q)
        by_kind[(q.group, lang)].append(q.query)
        assert bool(CJK.search(q.query)) == (lang == "zh"), q.query
    for kind in KINDS:
        for lang in ("en", "zh"):
            queries = by_kind[(kind, lang)]
            assert len(queries) == 6
            assert len(set(queries)) >= 2, (kind, lang, queries)
    docs = _docs(suite)
    for q in suite.questions:  # the memories are in the question's language too
        (right,) = q.right
        assert bool(CJK.search(str(docs[right]["content"]))) == (question_language(q) == "zh")
    terse_en = [
        q for q in suite.questions if question_language(q) == "en" and len(q.query.split()) <= 3
    ]
    terse_zh = [q for q in suite.questions if question_language(q) == "zh" and len(q.query) <= 8]
    assert terse_en and terse_zh


def test_every_case_is_well_formed_and_tenant_scoped() -> None:
    suite = seed_trap_suite(10, NOW, seed=5)
    docs = _docs(suite)
    retracted = {(e["tenant_id"], e["memory_key"]) for e in suite.late if e["op"] == "RETRACT"}
    latest: dict[tuple[str, str], str] = {}
    for e in suite.events:
        latest[(e["tenant_id"], e["memory_key"])] = doc_id(e["tenant_id"], e["event_id"])
    tenant_entities: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for e in suite.events:
        tenant_entities[e["tenant_id"]].add((e["entity_type"], e["entity_id"]))
        tenant_entities[e["tenant_id"]] |= {(x["type"], x["id"]) for x in e.get("entities", [])}
    assert len({q.tenant_id for q in suite.questions}) == len(suite.questions)
    for q in suite.questions:
        (right,) = q.right
        assert right not in q.stale and right not in q.forbidden
        assert q.stale, q.qid  # every case names what must not come first
        for doc in (right, *q.stale, *q.forbidden):
            event = docs[doc]
            assert event["tenant_id"] == q.tenant_id, q.qid
            assert event["op"] == "UPSERT" and event["content"]
        key = (q.tenant_id, str(docs[right]["memory_key"]))
        assert key not in retracted
        if q.group != "version_named_date":  # the version valid at the named date
            assert latest[key] == right, q.qid  # else the current version of its memory
        for doc in q.forbidden:
            assert (q.tenant_id, docs[doc]["memory_key"]) in retracted
        user = q.request.get("user_id")
        if user:
            assert ("customer", user) in tenant_entities[q.tenant_id]
        for anchor in q.request.get("context", {}).get("active_entities", []):
            assert (anchor["type"], anchor["id"]) in tenant_entities[q.tenant_id]
        assert "force" not in q.request and "as_of" not in q.request
    for e in suite.all_events():
        assert e["tenant_id"].startswith("seed-") and e["occurred_at"] <= NOW.isoformat()


def test_the_gate_set_is_labelled_split_and_seeded() -> None:
    suite = seed_trap_suite(10, NOW, seed=5)
    questions = seed_gate_set(suite, seed=5)
    assert questions == seed_gate_set(suite, seed=5)
    assert [q.query for q in seed_gate_set(suite, seed=6)] != [q.query for q in questions]
    memory = [q for q in questions if q.needs_memory]
    other = [q for q in questions if not q.needs_memory]
    assert len(memory) == len(other) == 120
    assert {q.group for q in memory} == {PREFIX + g for g in MEMORY}
    assert {q.group for q in other} == {PREFIX + g for g in OTHER}
    with_user = [q for q in memory if q.request.get("user_id")]
    assert len(with_user) == 60 and sum(bool(q.request.get("user_id")) for q in other) == 60
    users = defaultdict(set)
    text = defaultdict(str)
    for e in suite.events:
        users[e["tenant_id"]].add(e["entity_id"])
        users[e["tenant_id"]] |= {x["id"] for x in e.get("entities", [])}
        text[e["tenant_id"]] += e["content"]
    for q in questions:
        assert "force" not in q.request and q.suite == "seedtraps"
        if q.request.get("user_id"):
            assert q.request["user_id"] in users[q.tenant_id]
    for q in memory:
        if not q.request.get("user_id"):  # an entity of the tenant's memory is named
            assert any(word in text[q.tenant_id] for word in re.findall(r"[A-Z][\w-]*\d+", q.query))
    for side in (memory, other):
        assert any(CJK.search(q.query) for q in side)
        assert any(not CJK.search(q.query) for q in side)


def test_seed_gate_rates_split_by_user() -> None:
    def outcome(needs: bool, answered: bool, user: bool, group: str) -> GateOutcome:
        request = {"user_id": "C-1"} if user else {}
        question = GateQuestion("seedtraps", "t", "q", PREFIX + group, needs, request)
        return GateOutcome(question, answered, "", 1.0)

    rates = seed_gate_rates(
        [
            outcome(True, False, True, "terse personal"),
            outcome(True, True, True, "terse personal"),
            outcome(False, True, True, "small talk"),
            outcome(True, True, False, "entity named"),
            outcome(False, False, False, "small talk"),
        ]
    )
    assert rates["with user_id"]["false-skip rate"] == 0.5
    assert rates["with user_id"]["invalid-query rate"] == 1.0
    assert rates["without user_id"]["false-skip rate"] == 0.0
    assert rates["without user_id"]["invalid-query rate"] == 0.0
    assert rates["all"]["memory questions"] == 3.0
    assert rates["small talk"] == {"n": 2.0, "answered": 0.5}


def test_the_runner_builds_it_and_scoring_reads_a_stale_first_answer_as_wrong(
    tmp_path: Path,
) -> None:
    options = Options(suites=("seedtraps",), traps_per_family=2, seed=9, datasets=tmp_path)
    (suite,) = build_suites(options, NOW)
    assert suite.name == "seedtraps" and len(suite.questions) == 2 * len(KINDS)
    right = [[*q.right, *q.stale] for q in suite.questions]
    stale_first = [[*q.stale, *q.right] for q in suite.questions]
    run = SuiteRun(suite, {s: right for s in REPORTED}, [[] for _ in suite.questions], {})
    run.rankings["vector"] = stale_first
    scores = score([run])
    assert scores.seedtraps["memstream"]["all"] == 0.0
    assert scores.seedtraps["vector"]["all"] == 1.0
    assert scores.seedtraps["vector"]["all · zh"] == 1.0
    assert scores.seedtraps_counts["all · en"] == len(KINDS)
    assert scores.headline()["memstream"]["seed trap wrong-memory rate ↓"] == 0.0
