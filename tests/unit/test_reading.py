"""Reading a question once: ordinals, attributes, the speaker, the focus — in both languages."""

from __future__ import annotations

import pytest

from memstream.services.domain.attributes import attributes_in
from memstream.services.domain.lexicon import SMALL_TALK
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import RetrievalRequest
from memstream.services.domain.reading import (
    EARLIEST,
    LATEST,
    ordinal_in,
    read_question,
)


def ask(query: str, **fields: object) -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "ordinal"),
    [
        ("which kettle did I view most recently?", LATEST),
        ("what was my latest booking?", LATEST),
        ("the scarf I browsed last time", LATEST),
        ("when did we last speak about the lease?", LATEST),
        ("what did my last invoice say?", LATEST),
        ("what was the very first thing I rented?", EARLIEST),
        ("my earliest reservation", EARLIEST),
        ("which plan did I originally pick?", EARLIEST),
        ("我上次浏览的台灯是哪款", LATEST),
        ("最近一次的账单", LATEST),
        ("我第一次预订的是哪家酒店", EARLIEST),
        ("最早的那笔订单", EARLIEST),
        # a period or a verb, not an ordinal
        ("what did I rent last month?", None),
        ("did I book anything last spring?", None),
        ("how long does the charge last?", None),
        ("in the first half of the year", None),
        ("first of all, thanks", None),
        ("is the kettle cordless?", None),
    ],
)
def test_ordinals(query: str, ordinal: str | None) -> None:
    assert ordinal_in(query) == ordinal


def test_the_first_ordinal_named_wins() -> None:
    assert ordinal_in("the first thing I saw last time") == EARLIEST
    assert ordinal_in("the latest of my first orders") == LATEST


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a green 1TB drive with Thunderbolt", {"colour:green", "qty:1tb", "port:thunderbolt"}),
        ("Green, 1 TB, thunderbolt port", {"colour:green", "qty:1tb", "port:thunderbolt"}),
        ("绿色 1TB 雷电", {"colour:green", "qty:1tb"}),
        ("the Type-C one in gray", {"port:usb-c", "colour:grey"}),
        ("Model KX-90, 20000 mAh", {"model:kx90", "qty:20000mah"}),
        ("平板 128G 银色", {"qty:128gb", "colour:silver"}),
        ("a 500g bag of beans", {"qty:500g"}),
        ("what is the weather like", set()),
    ],
)
def test_attributes_are_canonical_across_spellings_and_languages(
    text: str, expected: set[str]
) -> None:
    assert attributes_in(text) == expected


def test_one_reading_holds_what_the_question_asks() -> None:
    focus = (Anchor("booking", "BK-31"),)
    reading = read_question(
        ask(
            "is my latest booking for the grey 2-seat kayak still open?",
            user_id="u-5",
            active_entities=focus,
            active_task="rebooking",
        )
    )
    assert reading.personal and reading.about_speaker
    assert reading.ordinal == LATEST
    assert reading.current_state and not reading.problem
    assert reading.focus == focus and reading.active_task == "rebooking"
    assert "colour:grey" in reading.attributes
    assert "kayak" in reading.subject_terms and "latest" not in reading.subject_terms
    assert reading.period is None  # filled by a period reader, not here


def test_the_speaker_needs_a_user() -> None:
    assert not read_question(ask("what did I rent?")).personal
    assert read_question(ask("what did I rent?", user_id="u-1")).personal
    assert not read_question(ask("can I rent a kayak?", user_id="u-1")).personal


def test_talk_and_ids_are_read_once() -> None:
    assert read_question(ask("thanks a lot!")).talk == (SMALL_TALK, "thanks")
    reading = read_question(ask("where is parcel PK-7781 and is it on time?"))
    assert reading.named_ids == ("PK-7781",)
    assert reading.problem is False
    chinese = read_question(ask("我的耳机出了什么问题"))
    assert chinese.problem and chinese.subject_terms
