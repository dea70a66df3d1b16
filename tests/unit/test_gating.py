"""Gating: answer from memory only when the request depends on memory (English and Chinese)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstream.services.domain.gating import (
    FORCE_HINT,
    GENERIC,
    HIGH_LOAD,
    NAMED_NEAR,
    NEAR,
    GateDecision,
    MemoryEvidence,
    evidence_from,
    gate,
)
from memstream.services.domain.lexicon import find_cues
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import RetrievalRequest

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def request(query: str, **fields: object) -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("What did I buy yesterday?", "time word 'yesterday'"),
        ("Can you recall what we discussed last week", "time word 'last week'"),
        ("Where is my parcel?", "possessive 'my'"),
        ("Is this bag ours?", "possessive 'ours'"),
        ("Has the refund been resolved", "state verb 'resolved'"),
        ("I returned a jacket, any news", "state verb 'returned'"),
        ("Does the XR-500 fit in a backpack?", "entity id 'XR-500'"),
    ],
)
def test_english_cues(query: str, reason: str) -> None:
    decision = gate(request(query), NOW)
    assert decision.needs_memory
    assert decision.reason == reason


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("我上次买的耳机", "time word '上次'"),
        ("昨天下的单到哪了", "time word '昨天'"),
        ("我的包裹呢", "possessive '我的'"),
        ("退货怎么样了", "state verb '退货'"),
        ("投诉处理得如何", "state verb '投诉'"),
    ],
)
def test_chinese_cues(query: str, reason: str) -> None:
    decision = gate(request(query), NOW)
    assert decision.needs_memory
    assert decision.reason == reason


@pytest.mark.parametrize(
    "query",
    [
        "What is the capital of France?",
        "How long does the battery last?",
        "巴黎是哪个国家的首都",
        "Is that one waterproof?",
        "它防水吗",
        "What is the motor power of the blender?",
    ],
)
def test_questions_without_a_strong_cue_look_at_memory(query: str) -> None:
    decision = gate(request(query), NOW)
    assert not decision.needs_memory
    assert decision.probe


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("Thanks a lot!", "small talk 'thanks'"),
        ("hi there, how are you today?", "small talk 'hi'"),
        ("你好", "small talk '你好'"),
        ("what is 17 * 23?", "arithmetic '17 * 23'"),
        ("What's 15 percent of 80", "arithmetic '15 percent of 80'"),
        ("Translate this into French", "instruction to the agent 'translate'"),
        ("please be more concise", "instruction to the agent 'be more'"),
        ("翻译成英文", "instruction to the agent '翻译'"),
    ],
)
def test_talk_that_needs_no_memory_is_skipped_with_how_to_force(query: str, kind: str) -> None:
    decision = gate(request(query), NOW)
    assert not decision.needs_memory
    assert not decision.probe
    assert decision.reason == f"{kind}; {FORCE_HINT}"


def test_evidence_decides_a_question_without_a_strong_cue() -> None:
    blender = request("What is the motor power of the blender?")
    held = evidence_from(
        blender.query, [(0.31, "Ordered the BL-200 blender, 1200 W motor."), (0.1, "Refund.")]
    )
    assert held.named == ("blender", "motor") and held.asked == 3
    assert gate(blender, NOW, evidence=held) == GateDecision(
        True, "names 'blender', 'motor' in memory (2 of 3 terms, nearest 0.31)"
    )
    close = MemoryEvidence(nearest=0.62)
    assert gate(blender, NOW, evidence=close).reason == f"nearest memory 0.62 ≥ {NEAR}"
    far = MemoryEvidence(nearest=0.12, named=())
    decision = gate(request("What is the capital of France?"), NOW, evidence=far)
    assert not decision.needs_memory
    assert decision.reason == (
        f"{GENERIC}, nothing in memory close (nearest 0.12 < {NEAR}); {FORCE_HINT}"
    )
    # a held word with memories that are not similar at all is not enough
    faint = MemoryEvidence(nearest=NAMED_NEAR - 0.01, named=("capital",))
    assert not gate(request("What is the capital of France?"), NOW, evidence=faint).needs_memory


def test_common_words_name_nothing() -> None:
    found = evidence_from("what did you think about it?", [(0.3, "What did you think about it?")])
    assert found.named == ()


def test_strong_cue_is_named_before_weak_ones() -> None:
    # "it" is weak, "my" strong: the reason names the strong one.
    assert gate(request("is it my order?"), NOW).reason == "possessive 'my'"


def test_force_always_passes() -> None:
    decision = gate(request("What is the capital of France?", force=True), NOW, load=1.0)
    assert decision == GateDecision(True, "forced")


def test_active_context_calls_for_memory() -> None:
    ctx = request("What is the warranty?", active_entities=(Anchor("product", "XR-500"),))
    assert gate(ctx, NOW).needs_memory
    assert gate(ctx, NOW).reason == "context '1 active entities'"
    task = request("What is the warranty?", active_task="handle return of order O-9")
    assert gate(task, NOW).reason == "context 'active task'"


def test_explicit_time_calls_for_memory() -> None:
    window = (NOW - timedelta(days=7), NOW)
    assert gate(request("What happened?", time_window=window), NOW).reason == (
        "explicit time 'time_window'"
    )
    past = request("What happened?", as_of=NOW - timedelta(days=30))
    assert gate(past, NOW).reason == "explicit time 'as_of'"
    # an as_of of now asks nothing of history
    assert not gate(request("What happened?", as_of=NOW), NOW).needs_memory


def test_high_load_lets_only_strong_cues_pass() -> None:
    weak = request("Is that one waterproof?")
    strong = request("Where is my order?")
    assert gate(weak, NOW, load=0.5).probe
    skipped = gate(weak, NOW, load=HIGH_LOAD)
    assert not skipped.needs_memory
    assert not skipped.probe
    assert skipped.reason == f"high load 0.90: only weak cue anaphora 'that one'; {FORCE_HINT}"
    assert gate(strong, NOW, load=0.99) == GateDecision(True, "possessive 'my'")
    busy_context = request("warranty?", active_entities=(Anchor("product", "XR-500"),))
    # An agent in the middle of a task asks about it: context passes whatever the load.
    assert gate(busy_context, NOW, load=0.95).needs_memory


def test_find_cues_reports_every_cue_with_strength() -> None:
    cues = find_cues("When did my XR-500 ship? Is it black?")
    kinds = {(cue.kind, cue.text, cue.strong) for cue in cues}
    assert ("possessive", "my", True) in kinds
    assert ("entity id", "XR-500", True) in kinds
    assert ("time word", "when", False) in kinds
    assert ("anaphora", "it", False) in kinds
    assert ("exact attribute", "black", False) in kinds


def test_words_inside_other_words_are_not_cues() -> None:
    # "it" in "item", "my" in "mystery", "ago" in "Chicago"
    assert find_cues("Mystery item from Chicago") == ()


def test_first_person_is_a_weak_cue() -> None:
    from memstream.services.domain.lexicon import FIRST_PERSON, find_cues

    cues = find_cues("what music do I like?")
    assert [(c.kind, c.text, c.strong) for c in cues] == [(FIRST_PERSON, "i", False)]
    assert any(c.kind == FIRST_PERSON for c in find_cues("我喜欢什么音乐？"))


def test_a_question_about_the_speaker_with_a_user_passes() -> None:
    decision = gate(request("what music do I like?", user_id="C-1"), NOW)
    assert decision == GateDecision(True, "about the user 'C-1'")
    assert gate(request("what music do I like?"), NOW).probe  # no user: memory decides
    assert not gate(request("I'm fine, thanks", user_id="C-1"), NOW).needs_memory
    third_person = request("What city does the user want now?", user_id="C-1")
    assert gate(third_person, NOW) == GateDecision(True, "about the user 'C-1'")
