"""Questions about a matter: open matters before settled ones, problem records before others.

A *matter* is a memory whose fact type runs a course (``StateRules.escalating_fact_types``:
complaints, tickets, support cases, returns, refunds …). It is **open** while its status is
open, pending, new or in progress (or plain ``active`` for the fact types that stay live until
resolved: ``trust.is_open_matter``) and **settled** once resolved, closed, done, completed or
refunded (``SETTLED_STATUSES``).

A question asks about the *current state* of something when it carries a state phrase
(``QuestionReading.current_state``, from ``reading.asks_current_state``: "is my case still
open?", "what is the status of my return?", "any news on my complaint?", "what's happening with
my ticket?", "进展如何", "还没处理"). In such a question, for every entity and fact type
among the results:

    a settled matter never ranks above an open matter of the same entity and fact type whose
    relevance is at least ``RELEVANCE_SHARE`` (half) of its own: it yields to them
    (``yielding``: its final is brought below the lowest of theirs; factor ``settled``).

Why: the open matter *is* the current state; the settled one is history, true but over. Decay
does not settle it: a closed case two months old against an open one of last week is less than
one half-life apart for a fact type whose half-life is 90 days, and the closed case's text
often shares more words with the question ("case closed" for "is my case open?"). State alone
does not either: the trust weights put state at 0.15, so resolved (0.8) against escalated (0.9)
moves the final by under 1 %. Why the relevance share: an open matter that has little to do
with the question (half as relevant, or less) must not bury the settled one the question is
about. Why the same entity and fact type: another customer's open complaint or an open return
says nothing about the state of this customer's case. A reader checks the rule on a reply with
each result's ``effective_status``, ``entity_type/id``, ``fact_type`` and ``scores``.

A question asks about a *problem* when it carries a problem phrase (``QuestionReading.problem``:
"what was wrong with my grinder?", "the issue with my order", "why is it broken?", "出了什么
问题"). A problem is recorded as a complaint, ticket, support case or issue
(``PROBLEM_FACT_TYPES``); an order, a return or a page view of the same thing shares the
question's words but does not say what went wrong. In such a question, for every entity:

    a memory that is not a problem record never ranks above a problem record of the same
    entity whose relevance is at least ``RELEVANCE_SHARE`` of its own: it yields to them
    (factor ``problem``).

Why: the three records of a customer's grinder (ordered, complained about, returned) are
about equally relevant by text (measured: fused 0.61-0.64) and the order and the return
come from the ERP (authority 1.0 against ticketing's 0.85), so without the rule the record
that answers the question came third.

A question that *names a flagged state* ("which of my complaints is overdue?", "the recalled
one", "逾期的投诉", "高风险"; "should be escalated", "该升级", or a matter past a delay: "open
for more than 48 hours", "超过48小时"; ``named_states``) asks for the matters in that state.
(Open against settled is the current-state rule above: "is it resolved?" asks whether it is,
and the open matter is the answer.) For every fact type and binding among the results:

    a matter whose effective state (``effective_status``: an open matter past
    ``StateRules.escalate_after`` is ``escalated``) is not the one named yields to the matters
    of that fact type in the named state whose relevance is at least ``RELEVANCE_SHARE`` of its
    own (factor ``state``).

Why: the three complaints of a customer share the question's words equally; "overdue" is told
by the state rule (48 hours without resolution), not by the words. A question that picks a matter
by its being open ("the case that hasn't been closed", "my unresolved complaint", "未解决的投诉")
names the open state: every open matter (``trust.is_open_matter``) is in it, and a settled one of
the same fact type and binding yields to it whatever their relevance — the closed case that
repeats more of the words is the one the question excludes.

All rules act on ``scores.final`` and are recorded in the result's ``factors``; the served order
is the order of the finals. Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstream.services.domain.query import ScoredResult
from memstream.services.domain.reading import QuestionReading
from memstream.services.domain.trust import StateRules, is_open_matter, kind_in, status_of
from memstream.services.domain.yielding import RELEVANCE_SHARE, YIELD_SHARE, yield_to

__all__ = [
    "RELEVANCE_SHARE",
    "YIELD_SHARE",
    "is_matter",
    "is_problem_record",
    "is_settled_matter",
    "matters_first",
    "named_states",
]

SETTLED_STATUSES = frozenset({"resolved", "closed", "done", "completed", "refunded", "settled"})
PROBLEM_FACT_TYPES = frozenset({"complaint", "ticket", "support_case", "issue", "incident"})
SETTLED = "settled"
PROBLEM = "problem"
STATE = "state"
# Words that name a state of a matter → the effective statuses they ask for.
_STATE_WORDS = (
    (
        ("overdue", "escalated", "escalate", "escalation", "past due", "逾期", "超时", "超期",
         "该升级", "需要升级"),
        {"escalated"},
    ),
    (("high risk", "high-risk", "recall", "recalled", "高风险", "召回"), {"high_risk"}),
)  # fmt: skip


# "open for more than 48 hours", "超过48小时": a matter past a delay is an escalated one.
_PAST_DELAY = re.compile(
    r"(?:more\s+than|over|longer\s+than|past|beyond)\s+\d+\s*(?:h|hrs?|hours?|days?)(?![a-z])"
    r"|(?:超过|超出|已过|过了)\s*\d+\s*(?:个)?(?:小时|天|钟头)",
    re.IGNORECASE,
)


# "the case that hasn't been closed", "my unresolved complaint", "未解决的投诉": a matter picked by
# being open. (Not "is it still open?": that asks the state of one matter, the current-state rule.)
_OPEN_PICKED = re.compile(
    r"(?:that|which)\s+(?:has|have|is|are|was|were)?\s*(?:n't|not)\s+(?:yet\s+)?(?:been\s+)?"
    r"(?:closed|resolved|settled|fixed|handled|sorted)"
    r"|(?:that|which)\s+(?:hasn't|haven't|isn't|aren't|wasn't|weren't)\s+(?:yet\s+)?(?:been\s+)?"
    r"(?:closed|resolved|settled|fixed|handled|sorted)"
    r"|(?<![a-z])(?:the|my|our|your|their|his|her|an?|any|that|this)\s+(?:still[\s-]+)?"
    r"(?:unresolved|unsettled|unclosed|open)\s+(?:[a-z-]+\s+)?(?:case|complaint|ticket|"
    r"issue|return|refund|request|claim|matter)s?(?![a-z])"
    r"|(?:未|没有?|还没有?|尚未)(?:解决|关闭|结案|处理完|处理好|办结|完结)的",
    re.IGNORECASE,
)
OPEN = "open"  # the state of every open matter (``trust.is_open_matter``)


def named_states(query: str) -> frozenset[str]:
    """The effective statuses a question names (see the module docstring); empty for none.
    ``{OPEN}`` where it picks a matter by its being open."""
    text = query.casefold()
    if _PAST_DELAY.search(text):
        return frozenset({"escalated"})
    if _OPEN_PICKED.search(text):
        return frozenset({OPEN})
    for words, states in _STATE_WORDS:
        for word in words:
            if word.isascii():
                found = re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", text) is not None
            else:
                found = word in text
            if found:
                return frozenset(states)
    return frozenset()


def is_settled_matter(result: ScoredResult, rules: StateRules) -> bool:
    """A complaint, ticket, case, return … whose status says it is over."""
    candidate = result.candidate
    if not kind_in(candidate.fact_type, rules.escalating_fact_types):
        return False
    return status_of(candidate.status) in SETTLED_STATUSES


def is_matter(result: ScoredResult, rules: StateRules) -> bool:
    """A memory of a fact type that runs a course (complaints, tickets, returns …)."""
    return kind_in(result.candidate.fact_type, rules.escalating_fact_types)


def _entity(result: ScoredResult) -> tuple[str, ...]:
    return (result.candidate.entity_type, result.candidate.entity_id)


def _entity_fact(result: ScoredResult) -> tuple[str, ...]:
    c = result.candidate
    return (c.entity_type, c.entity_id, c.fact_type.casefold())


def is_problem_record(result: ScoredResult) -> bool:
    return result.candidate.fact_type.casefold() in PROBLEM_FACT_TYPES


def matters_first(
    results: Sequence[ScoredResult], reading: QuestionReading, rules: StateRules
) -> list[ScoredResult]:
    """Both rules of the module docstring, each where its question applies (same order)."""
    out = list(results)
    if reading.problem:
        out = yield_to(
            out,
            PROBLEM,
            leads=is_problem_record,
            yields=lambda r: not is_problem_record(r),
            group=_entity,
        )
    states = named_states(reading.text)
    if states:

        def in_state(result: ScoredResult) -> bool:
            if OPEN in states:
                return is_open_matter(result.candidate, rules)
            return status_of(result.effective_status or result.candidate.status) in states

        out = yield_to(
            out,
            STATE,
            leads=lambda r: is_matter(r, rules) and in_state(r),
            yields=lambda r: is_matter(r, rules) and not in_state(r),
            group=lambda r: (r.candidate.fact_type.casefold(), r.binding_kind),
            share=0.0 if OPEN in states else RELEVANCE_SHARE,  # the question excludes the rest
        )
    if reading.current_state:
        out = yield_to(
            out,
            SETTLED,
            leads=lambda r: is_open_matter(r.candidate, rules),
            yields=lambda r: is_settled_matter(r, rules),
            group=_entity_fact,
        )
    return out
