"""General explanations and opinion requests are talk; Chinese similarity alone decides nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.services.domain.gating import MemoryEvidence, gate
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import RetrievalRequest
from memstream.services.domain.talk_forms import EXPLANATION, OPINION, talk_form

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def request(query: str, **fields: object) -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("How does active noise cancelling work?", EXPLANATION),
        ("what's the difference between USB-C and Lightning?", EXPLANATION),
        ("why do chargers get hot?", EXPLANATION),
        ("is it safe to leave a phone charging overnight?", EXPLANATION),
        ("主动降噪的原理是什么？", EXPLANATION),
        ("USB-C和Lightning有什么区别", EXPLANATION),
        ("这个成语什么意思：画蛇添足", EXPLANATION),
        ("my friend says autumn is always rainy, what do you think?", OPINION),
        ("我朋友说早餐是最重要的一餐，你觉得呢？", OPINION),
        ("我觉得咖啡比茶好喝，你说呢", OPINION),
        ("why does my charger get hot?", None),
        ("Why does Melanie like running?", None),
        ("how does my warranty work?", None),
        ("What did Caroline think about the parade?", None),
    ],
)
def test_talk_forms(query: str, kind: str | None) -> None:
    found = talk_form(query)
    assert (found[0] if found else None) == kind


def test_explanations_and_opinions_are_skipped_unless_about_an_anchored_entity() -> None:
    for query in ("why do chargers get hot?", "我朋友说秋天总是下雨，你觉得呢？"):
        decision = gate(request(query, user_id="C-1"), NOW)
        assert not decision.needs_memory and not decision.probe, query
    anchored = request("is it safe to charge overnight?", anchors=(Anchor("person", "Ann"),))
    assert gate(anchored, NOW).probe


def test_a_possessed_record_is_not_talk() -> None:
    assert gate(request("why does my order take so long?", user_id="C-1"), NOW).needs_memory


def test_chinese_similarity_alone_does_not_answer_but_held_words_do() -> None:
    question = request("肯尼亚的首都是哪里？")
    close = gate(question, NOW, evidence=MemoryEvidence(0.63, (), 4))
    assert not close.needs_memory
    assert "not used: no Latin word" in close.reason
    held = gate(question, NOW, evidence=MemoryEvidence(0.2, ("肯尼",), 4))
    assert held.needs_memory
    english = gate(request("what is the capital of Kenya?"), NOW, evidence=MemoryEvidence(0.63))
    assert english.needs_memory
