"""The gate's look at the asker's own memories (rule 5a) and the context layer.

Rules, stated in domain terms and checked over generated evidence:
- with a user or anchors, a question none of whose cues is strong is answered from memory when
  one of its content words is held by the asker's own memories or the nearest of them is at
  least ``OWN_NEAR`` similar;
- looking at the asker's memories never turns an answer into a skip (it only adds reasons to
  retrieve), and a skip happens only when neither the asker's nor the tenant's memory holds
  anything related;
- beyond ``OWN_BROAD`` memories (a long conversation) a held word does not decide alone and
  the similarity bar is the tenant's;
- the reason names only words of the question and counts of the asker's own memories;
- an active task or active entities always retrieve, whatever the load.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.gating import (
    FORCE_HINT,
    NEAR,
    OWN_BROAD,
    OWN_NEAR,
    MemoryEvidence,
    gate,
    own_anchors,
    own_evidence,
    own_terms,
    similarity_speaks,
)
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import RetrievalRequest

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def request(query: str, **fields: object) -> RetrievalRequest:
    return RetrievalRequest(request_id="r", tenant_id="t", query=query, **fields)  # type: ignore[arg-type]


def asked(query: str, user: str | None = "U-1") -> RetrievalRequest:
    anchors = (Anchor("customer", user),) if user else ()
    return request(query, user_id=user, anchors=anchors)


def test_own_anchors_are_the_users_and_the_named_entities() -> None:
    assert own_anchors(request("x")) == ()
    assert own_anchors(asked("x")) == ("customer:U-1", "user:U-1")
    named = request("x", anchors=(Anchor("person", "Ann"),))
    assert own_anchors(named) == ("person:Ann",)


def test_own_terms_are_content_words_of_both_languages() -> None:
    assert own_terms("Why was the return made?") == ("return",)
    assert own_terms("when is it coming?") == ("coming",)
    assert "换货" in own_terms("换货进度")


def test_a_held_word_of_the_users_memory_makes_a_terse_question_memory_dependent() -> None:
    question = asked("reason for the swap?")
    assert gate(question, NOW).probe
    own = own_evidence({"swap": 3, "reason": 0}, 0.21, question)
    decision = gate(question, NOW, own=own)
    assert decision.needs_memory
    assert decision.reason == "the user's memory holds 'swap' (3 memories); nearest 0.21"


def test_a_user_naming_a_kind_of_their_records_is_answered_from_memory() -> None:
    for query, kind in (
        ("reason for the return?", "return"),
        ("refund done?", "refund"),
        ("did you sort out the issue?", "issue"),
        ("快递到哪了", "快递"),
        ("什么时候到", "什么时候到"),
        ("how long do refunds take?", "refunds"),
        ("when does it ship?", "ship"),
        ("东西哪天能到", "能到"),
    ):
        decision = gate(asked(query), NOW)
        assert decision.needs_memory, query
        assert decision.reason == f"names a kind of the user's records {kind!r}"
    # without a user the same words are looked at in memory first
    assert gate(request("refund done?"), NOW).probe


def test_a_close_own_memory_passes_below_the_tenants_bar() -> None:
    question = asked("when is it coming?")
    own = own_evidence({"coming": 0}, OWN_NEAR + 0.07, question)
    assert OWN_NEAR + 0.07 < NEAR
    decision = gate(question, NOW, own=own)
    assert decision.needs_memory
    assert decision.reason == f"the user's memory: nearest {OWN_NEAR + 0.07:.2f} ≥ {OWN_NEAR}"


def test_nothing_related_anywhere_is_skipped_with_both_looks_in_the_reason() -> None:
    question = asked("what is the capital of France?")
    own = own_evidence({"capital": 0, "france": 0}, 0.08, question)
    assert gate(question, NOW, own=own).probe  # the tenant's memory still to look at
    decision = gate(question, NOW, evidence=MemoryEvidence(0.11, (), 2), own=own)
    assert not decision.needs_memory
    assert "nearest 0.11 < 0.45" in decision.reason
    assert "the user's memory: no word held, nearest 0.08 < 0.25" in decision.reason
    assert decision.reason.endswith(FORCE_HINT)


def test_small_talk_stays_skipped_whatever_the_user_holds() -> None:
    question = asked("thanks!")
    decision = gate(question, NOW, own=own_evidence({"thanks": 5}, 0.9, question))
    assert not decision.needs_memory and not decision.probe


def test_anchored_entities_are_named_as_such() -> None:
    question = request("any hobbies?", anchors=(Anchor("person", "Ann"),))
    decision = gate(question, NOW, own=own_evidence({"hobbies": 2}, 0.3, question))
    assert decision.reason.startswith("the anchored entities' memory holds 'hobbies' (2 memories)")


WORDS = st.sampled_from(("swap", "reason", "eta", "amount", "blender", "charged", "进度"))
COUNTS = st.dictionaries(WORDS, st.integers(0, 50), max_size=5)
SIMILARITY = st.floats(0.0, 1.0, allow_nan=False)
QUERIES = st.sampled_from(
    (
        "reason for the swap?",
        "blender ETA",
        "amount charged?",
        "is the blender any good?",
        "进度",
        "what is the capital of France?",
    )
)


@given(QUERIES, COUNTS, SIMILARITY, SIMILARITY, st.lists(WORDS, max_size=3))
def test_own_evidence_only_adds_reasons_to_retrieve(
    query: str, counts: dict[str, int], own_near: float, near: float, named: list[str]
) -> None:
    question = asked(query)
    tenant = MemoryEvidence(near, tuple(sorted(set(named))), 3)
    without = gate(question, NOW, evidence=tenant)
    own = own_evidence(counts, own_near, question)
    with_own = gate(question, NOW, evidence=tenant, own=own)
    if without.needs_memory:
        assert with_own.needs_memory
    held = any(n > 0 for n in counts.values())
    close = own_near >= OWN_NEAR and similarity_speaks(query)
    assert with_own.needs_memory == (without.needs_memory or held or close)


@given(QUERIES, COUNTS, SIMILARITY)
def test_the_reason_names_only_the_given_words_and_the_users_counts(
    query: str, counts: dict[str, int], own_near: float
) -> None:
    question = asked(query)
    own = own_evidence(counts, own_near, question)
    assert all(counts[term] == n > 0 for term, n in own.held)
    assert [n for _, n in own.held] == sorted((n for _, n in own.held), reverse=True)
    decision = gate(question, NOW, own=own)
    if own.held:
        for term, n in own.held[:3]:
            assert repr(term) in decision.reason and f"({n} memor" in decision.reason
        named = re.findall(r"'([^']+)' \((\d+) memor", decision.reason)
        assert named and all(counts[term] == int(n) for term, n in named)


@given(
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from(("thanks!", "what is 2 + 2?", "warranty?", "translate this")),
)
def test_an_active_task_or_entities_retrieve_whatever_the_load(load: float, query: str) -> None:
    task = request(query, active_task="return request")
    entities = request(query, active_entities=(Anchor("order", "O-1"),))
    assert gate(task, NOW, load=load).needs_memory
    assert gate(entities, NOW, load=load).needs_memory


def test_chinese_only_questions_count_words_not_similarity() -> None:
    # The bundled encoder is English: unrelated Chinese texts are 0.3-0.45 similar.
    question = asked("光合作用是什么")
    own = own_evidence({"光合": 0, "合作": 0, "作用": 0}, 0.40, question)
    decision = gate(question, NOW, evidence=MemoryEvidence(0.40, (), 3), own=own)
    assert not decision.needs_memory
    assert "nearest 0.40 (not used: no Latin word)" in decision.reason
    held = own_evidence({"换货": 1}, 0.30, asked("换货进度"))
    assert gate(asked("换货进度"), NOW, own=held).needs_memory
    mixed = asked("XR-500 换货进度")
    assert gate(mixed, NOW, own=own_evidence({}, 0.30, mixed)).needs_memory


@given(COUNTS, SIMILARITY, st.integers(OWN_BROAD + 1, 10_000))
def test_in_a_broad_memory_words_alone_do_not_decide(
    counts: dict[str, int], own_near: float, memories: int
) -> None:
    question = asked("why is the sky blue?")
    own = own_evidence(counts, own_near, question, memories)
    decision = gate(question, NOW, own=own)
    assert decision.needs_memory == (own_near >= NEAR)
    small = own_evidence(counts, own_near, question, OWN_BROAD)
    held = any(n > 0 for n in counts.values())
    assert gate(question, NOW, own=small).needs_memory == (held or own_near >= OWN_NEAR)
    assert not similarity_speaks("光合作用是什么") and similarity_speaks("XR-500 换货")
