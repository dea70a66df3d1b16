"""What a possessive possesses decides whether it is a strong memory cue (gating rule 2).

Rules, in domain terms, checked over generated questions:
- a possessive followed by a record kind ("my order", "我的快递") always retrieves, whatever
  else the question says and whatever the load;
- adding a record noun after a possessive never turns a retrieve into a skip;
- a possessive that governs no record ("my teacher says", "in my opinion", "我的建议是") does
  not by itself make a question retrieve: with no memory evidence it is skipped;
- small talk and instructions are never retrieved because of such a possessive;
- the asker's own memory holding the possessed word ("my wife") still retrieves.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.gating import MemoryEvidence, gate, own_evidence
from memstream.services.domain.possession import (
    RECORD_NOUNS_EN,
    RECORD_NOUNS_ZH,
    bare_possessive,
    possesses_record,
)
from memstream.services.domain.query import RetrievalRequest

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
NOTHING = MemoryEvidence(nearest=0.1)

_NOT_RECORDS = st.sampled_from(
    ["teacher", "advice", "opinion", "view", "guess", "feeling", "friend says", "doctor thinks"]
)
_NOT_RECORDS_ZH = st.sampled_from(["建议", "看法", "意见", "老师说", "想法"])
_RECORDS = st.sampled_from(sorted(RECORD_NOUNS_EN - {"last", "previous", "recent", "past"}))
_RECORDS_ZH = st.sampled_from([n for n in RECORD_NOUNS_ZH if n not in ("上次", "之前")])
_USER = st.sampled_from([None, "u-1"])


def _req(query: str, user_id: str | None = None) -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, user_id=user_id)


def test_examples() -> None:
    assert possesses_record("where is my order?")
    assert possesses_record("我的快递到哪了")
    assert possesses_record("can you check our last booking")
    assert not possesses_record("my teacher says water boils at 100 degrees")
    assert bare_possessive("in my opinion the blue one is nicer")
    assert bare_possessive("我的建议是多休息")
    assert not bare_possessive("is this one mine?")


@given(_RECORDS, _USER, st.floats(0.0, 1.0))
def test_possessed_record_always_retrieves(noun: str, user: str | None, load: float) -> None:
    decision = gate(_req(f"what about my {noun}?", user), NOW, load, NOTHING)
    assert decision.needs_memory, decision.reason


@given(_RECORDS_ZH, _USER)
def test_possessed_record_zh_always_retrieves(noun: str, user: str | None) -> None:
    assert gate(_req(f"我的{noun}怎么样了", user), NOW, 0.0, NOTHING).needs_memory


@given(_NOT_RECORDS, _RECORDS, _USER)
def test_adding_a_record_noun_never_turns_retrieve_into_skip(
    other: str, noun: str, user: str | None
) -> None:
    before = gate(_req(f"my {other} about this", user), NOW, 0.0, NOTHING)
    after = gate(_req(f"my {noun} {other} about this", user), NOW, 0.0, NOTHING)
    assert after.needs_memory or not before.needs_memory
    assert after.needs_memory


@given(_NOT_RECORDS, _USER)
def test_bare_possessive_alone_does_not_retrieve(other: str, user: str | None) -> None:
    decision = gate(_req(f"my {other} is that tea helps sleep", user), NOW, 0.0, NOTHING)
    assert not decision.needs_memory, decision.reason


@given(_NOT_RECORDS_ZH, _USER)
def test_bare_possessive_zh_alone_does_not_retrieve(other: str, user: str | None) -> None:
    decision = gate(_req(f"我的{other}是早点睡觉", user), NOW, 0.0, NOTHING)
    assert not decision.needs_memory, decision.reason


@given(
    _NOT_RECORDS, _USER, st.sampled_from(["thanks, {}", "hello! {}", "translate '{}' to French"])
)
def test_chatter_never_retrieves_because_of_a_bare_possessive(
    other: str, user: str | None, form: str
) -> None:
    decision = gate(_req(form.format(f"my {other}"), user), NOW, 0.0, NOTHING)
    assert not decision.needs_memory, decision.reason


def test_own_memory_holding_the_possessed_word_still_retrieves() -> None:
    request = _req("what did my wife ask for", "u-1")
    own = own_evidence({"wife": 2}, 0.2, request, memories=5)
    assert gate(request, NOW, 0.0, None, own).needs_memory
