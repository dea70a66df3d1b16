"""The seed trap suite and the seed gate set: deterministic per seed, every kind in both
languages, and every case well-formed (its expected memory exists, is current, in its tenant)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstream.bench.quality.gate_set import GateOutcome, GateQuestion
from memstream.bench.quality.runner import REPORTED, Options, SuiteRun, build_suites
from memstream.bench.quality.scoring import score
from memstream.bench.quality.seed_gate import MEMORY, OTHER, PREFIX, seed_gate_rates, seed_gate_set
from memstream.bench.quality.seed_words import EN_MONTHS, ZH_MONTHS, question_language
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


EN_MONTH = {name: n + 1 for n, name in enumerate(EN_MONTHS)}
ZH_MONTH = {name: n + 1 for n, name in enumerate(ZH_MONTHS)}


def _named_period(query: str, now: datetime) -> tuple[datetime, datetime]:
    """The [start, end) a question names: a day, a month (with or without year) or a year."""
    day = re.search(r"(\d{4})年(\d{1,2})月(\d{1,2})日", query) or re.search(
        r"(\d{1,2}) (" + "|".join(EN_MONTH) + r") (\d{4})", query
    )
    if day:
        y, m, d = (
            (int(day[1]), int(day[2]), int(day[3]))
            if "年" in day[0]
            else (int(day[3]), EN_MONTH[day[2]], int(day[1]))
        )
        start = datetime(y, m, d, tzinfo=UTC)
        return start, start.replace(hour=23, minute=59)
    month = re.search(r"(\d{4})年(\d{1,2})月", query) or re.search(
        r"(" + "|".join(EN_MONTH) + r") (\d{4})", query
    )
    if month:
        y, m = (
            (int(month[1]), int(month[2]))
            if "年" in month[0]
            else (int(month[2]), EN_MONTH[month[1]])
        )
    elif bare := re.search(
        r"(?<!\d)(\d{1,2})月|([一二三四五六七八九十]+)月|\b(" + "|".join(EN_MONTH) + r")\b", query
    ):
        m = int(bare[1]) if bare[1] else ZH_MONTH[bare[2]] if bare[2] else EN_MONTH[bare[3]]
        y = now.year if m < now.month else now.year - 1  # the last such month before now
    else:
        year = re.search(r"(\d{4})", query)
        relative = {"this year": 0, "今年": 0, "last year": 1, "去年": 1}
        back = next((v for k, v in relative.items() if k in query), None)
        y = int(year[1]) if year else now.year - (back or 0)
        return datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)
    start = datetime(y, m, 1, tzinfo=UTC)
    return start, datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("now", [NOW, datetime(2027, 1, 3, 9, 0, tzinfo=UTC)])
def test_a_period_named_in_a_question_holds_the_right_memory_and_no_other(now: datetime) -> None:
    suite = seed_trap_suite(20, now, seed=8)
    docs = _docs(suite)
    valid: dict[str, tuple[datetime, datetime]] = {}  # version → its valid [from, to)
    chains: dict[tuple[str, str], list[str]] = defaultdict(list)
    for e in suite.events:
        chains[(e["tenant_id"], e["memory_key"])].append(doc_id(e["tenant_id"], e["event_id"]))
    for ids in chains.values():
        starts = [datetime.fromisoformat(str(docs[i]["occurred_at"])) for i in ids]
        for n, version in enumerate(ids):
            valid[version] = (starts[n], starts[n + 1] if n + 1 < len(ids) else now)
    checked = 0
    for q in suite.questions:
        if q.group not in ("version_named_date", "period_named"):
            continue
        start, end = _named_period(q.query, now)
        (right,) = q.right
        if q.group == "version_named_date":  # the right version is valid all through it
            assert valid[right][0] <= start and end <= valid[right][1], q.query
            for other in q.stale:
                if other in valid and docs[other]["memory_key"] == docs[right]["memory_key"]:
                    assert valid[other][1] <= start or end <= valid[other][0], q.query
        else:  # the right order was placed in it, no other one was
            assert start <= valid[right][0] < end, q.query
            for other in q.stale:
                assert not start <= valid[other][0] < end, q.query
        checked += 1
    assert checked == 40
