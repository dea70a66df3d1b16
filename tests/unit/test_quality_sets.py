"""The bench's labelled gate set and held-out trap suite: sizes, balance, determinism."""

from __future__ import annotations

from datetime import UTC, datetime

from memstream.bench.quality.gate_personal import (
    NOT_MEMORY,
    OWN_MEANING,
    OWN_WORD,
    RECORDS,
    TENANT,
    personal_set,
)
from memstream.bench.quality.gate_runs import gate_rates
from memstream.bench.quality.gate_set import (
    MEMORY_GROUPS,
    OTHER_GROUPS,
    GateOutcome,
    GateQuestion,
    gate_set,
)
from memstream.bench.quality.heldout import HELDOUT_SEED, KINDS, heldout_suite
from memstream.bench.quality.traps import trap_suite

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_the_gate_set_is_balanced_labelled_and_seeded() -> None:
    traps = trap_suite(20, NOW)
    questions = gate_set([traps], seed=7)
    memory = [q for q in questions if q.needs_memory]
    other = [q for q in questions if not q.needs_memory]
    assert {q.group for q in memory} <= set(MEMORY_GROUPS)
    assert {q.group for q in other} == set(OTHER_GROUPS)
    assert len(other) >= 200  # with LoCoMo and SGD the memory half reaches 220 too
    assert len(memory) == 110  # 60 trap questions + 50 product-named ones over traps alone
    assert all("force" not in q.request for q in questions)
    assert gate_set([traps], seed=7) == questions
    tenants = {e["tenant_id"] for e in traps.events}
    assert {q.tenant_id for q in questions} <= tenants


def test_gate_rates() -> None:
    def outcome(needs: bool, answered: bool) -> GateOutcome:
        question = GateQuestion("traps", "t", "q", "g", needs)
        return GateOutcome(question, answered, "", 1.0)

    rates = gate_rates(
        [outcome(True, True), outcome(True, False), outcome(False, False), outcome(False, True)]
    )
    assert rates["all"]["false-skip rate"] == 0.5
    assert rates["all"]["invalid-query rate"] == 0.5
    assert rates["all"]["always retrieve: invalid share of retrievals"] == 0.5
    assert rates["traps tenants, not about memory"] == {"n": 2.0, "answered": 0.5}
    assert rates["traps tenants, about memory"] == {"n": 2.0, "answered": 0.5}
    assert "with user_id" not in rates and rates["without user_id"]["n"] == 4.0


def test_gate_rates_split_by_whether_the_asker_is_known() -> None:
    def outcome(needs: bool, answered: bool, request: dict[str, object]) -> GateOutcome:
        return GateOutcome(GateQuestion("s", "t", "q", "g", needs, request), answered, "", 1.0)

    user = {"user_id": "U-1"}
    speaker = {"anchors": [{"type": "person", "id": "Ann"}]}
    rates = gate_rates(
        [
            outcome(True, False, user),
            outcome(True, True, speaker),
            outcome(False, True, user),
            outcome(False, False, {}),
            outcome(True, True, {}),
        ]
    )
    assert rates["with user_id"]["false-skip rate"] == 0.5
    assert rates["with user_id"]["invalid-query rate"] == 1.0
    assert rates["without user_id"]["false-skip rate"] == 0.0
    assert rates["without user_id"]["invalid-query rate"] == 0.0


def test_the_personal_set_asks_each_user_about_their_own_records() -> None:
    events, questions = personal_set(NOW)
    assert personal_set(NOW) == (events, questions)
    assert {e["tenant_id"] for e in events} == {q.tenant_id for q in questions} == {TENANT}
    owned = {(e["entity_id"], e["content"].split("{")[0][:12]) for e in events}
    assert len(owned) == len(events)
    by_user = {e["entity_id"] for e in events}
    assert all(q.request["user_id"] in by_user for q in questions)
    groups = [q.group for q in questions]
    assert groups.count(OWN_WORD) == groups.count(OWN_MEANING) == len(events)
    assert groups.count(NOT_MEMORY) >= 20
    assert all(q.needs_memory == (q.group != NOT_MEMORY) for q in questions)
    # Each own-record question is asked by the user who holds the record it is about.
    for fact_type, _, by_word, by_meaning in RECORDS:
        holders = {e["entity_id"] for e in events if e["fact_type"] == fact_type}
        asked = {q.request["user_id"] for q in questions if q.query in (by_word, by_meaning)}
        assert asked <= holders


def test_the_held_out_suite_has_its_own_fixed_seed_and_every_kind() -> None:
    suite = heldout_suite(3, NOW)
    assert HELDOUT_SEED == 20261203
    assert {q.group for q in suite.questions} == set(KINDS)
    assert len(suite.questions) == 3 * len(KINDS)
    assert heldout_suite(3, NOW).questions == suite.questions
    for question in suite.questions:
        assert question.right
