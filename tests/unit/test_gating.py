"""Gating: answer from memory only when the request depends on memory (English and Chinese)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstream.services.domain.gating import HIGH_LOAD, GateDecision, gate
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
        ("Is that one waterproof?", "anaphora 'that one'"),
        ("Is it any good?", "anaphora 'it'"),
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
        ("它防水吗", "anaphora '它'"),
        ("那个还有货吗", "anaphora '那个'"),
    ],
)
def test_chinese_cues(query: str, reason: str) -> None:
    decision = gate(request(query), NOW)
    assert decision.needs_memory
    assert decision.reason == reason


@pytest.mark.parametrize(
    "query",
    ["What is the capital of France?", "How long does the battery last?", "巴黎是哪个国家的首都"],
)
def test_generic_questions_are_skipped(query: str) -> None:
    decision = gate(request(query), NOW)
    assert not decision.needs_memory
    assert decision.reason == "no memory cue: generic question"


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
    assert gate(weak, NOW, load=0.5).needs_memory
    skipped = gate(weak, NOW, load=HIGH_LOAD)
    assert not skipped.needs_memory
    assert skipped.reason == "high load 0.90: only weak cue anaphora 'that one'"
    assert gate(strong, NOW, load=0.99) == GateDecision(True, "possessive 'my'")
    busy_context = request("warranty?", active_entities=(Anchor("product", "XR-500"),))
    assert not gate(busy_context, NOW, load=0.95).needs_memory


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
