"""Questions about a matter: open matters before settled ones, problem records before others.

A *matter* is a memory whose fact type runs a course (``StateRules.escalating_fact_types``:
complaints, tickets, support cases, returns, refunds …). It is **open** while its status is
open, pending, new or in progress (or plain ``active`` for the fact types that stay live until
resolved: ``trust.is_open_matter``) and **settled** once resolved, closed, done, completed or
refunded (``SETTLED_STATUSES``).

A question asks about the *current state* of something when it carries a state phrase
(``asks_current_state``: "is my case still open?", "what is the status of my return?", "any
news on my complaint?", "what's happening with my ticket?", "进展如何", "还没处理"). In such a
question, for every entity and fact type among the results:

    a settled matter never ranks above an open matter of the same entity and fact type whose
    relevance is at least ``RELEVANCE_SHARE`` (half) of its own: its final score is capped at
    ``SETTLED_CAP`` (0.9) times the lowest such open matter's final.

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

A question asks about a *problem* when it carries a problem phrase (``asks_about_a_problem``:
"what was wrong with my grinder?", "the issue with my order", "why is it broken?", "出了什么
问题"). A problem is recorded as a complaint, ticket, support case or issue
(``PROBLEM_FACT_TYPES``); an order, a return or a page view of the same thing shares the
question's words but does not say what went wrong. In such a question, for every entity:

    a memory that is not a problem record never ranks above a problem record of the same
    entity whose relevance is at least ``RELEVANCE_SHARE`` of its own: its final is capped at
    ``SETTLED_CAP`` times the lowest such problem record's final.

Why: the three records of a customer's grinder (ordered, complained about, returned) are
about equally relevant by text (measured: fused 0.61-0.64) and the order and the return
come from the ERP (authority 1.0 against ticketing's 0.85), so without the rule the record
that answers the question came third.

Both caps act on ``scores.final``, so they order results within a precedence tier (the personal
tiers of ``personal`` come first). Pure. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from memstream.services.domain.query import ScoredResult
from memstream.services.domain.trust import StateRules, is_open_matter

RELEVANCE_SHARE = 0.5
SETTLED_CAP = 0.9
SETTLED_STATUSES = frozenset({"resolved", "closed", "done", "completed", "refunded", "settled"})

# Phrases that ask how something stands now. English: whole words, case-insensitive.
_CURRENT_STATE_EN = (
    "still",
    "status",
    "any news",
    "any update",
    "any updates",
    "an update",
    "update on",
    "progress",
    "happening with",
    "going on with",
    "open",
    "pending",
    "ongoing",
    "outstanding",
    "yet",
    "currently",
    "right now",
    "so far",
)
_CURRENT_STATE_ZH = (
    "还",
    "状态",
    "进展",
    "进度",
    "怎么样了",
    "现在",
    "目前",
    "处理好",
    "解决了吗",
    "好了吗",
)


def _whole_phrases(phrases: Sequence[str]) -> re.Pattern[str]:
    """Any of ``phrases`` as whole words, any spacing, case-insensitive."""
    body = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in phrases)
    return re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])", re.IGNORECASE)


_EN_PATTERN = _whole_phrases(_CURRENT_STATE_EN)


_PROBLEM_EN = (
    "wrong",
    "problem",
    "problems",
    "issue",
    "issues",
    "broken",
    "broke",
    "faulty",
    "fault",
    "defect",
    "defective",
    "damaged",
    "not working",
    "stopped working",
    "complaint",
    "complaints",
    "complain",
    "complained",
    "error",
)
_PROBLEM_ZH = ("问题", "坏了", "故障", "投诉", "毛病", "不能用", "出错")
_PROBLEM_PATTERN = _whole_phrases(_PROBLEM_EN)
PROBLEM_FACT_TYPES = frozenset({"complaint", "ticket", "support_case", "issue", "incident"})


def asks_about_a_problem(query: str) -> bool:
    """Whether the query asks what went wrong (see the module docstring)."""
    if _PROBLEM_PATTERN.search(query):
        return True
    return any(phrase in query for phrase in _PROBLEM_ZH)


def asks_current_state(query: str) -> bool:
    """Whether the query asks how a matter stands now (see the module docstring)."""
    if _EN_PATTERN.search(query):
        return True
    return any(phrase in query for phrase in _CURRENT_STATE_ZH)


def is_settled_matter(result: ScoredResult, rules: StateRules) -> bool:
    """A complaint, ticket, case, return … whose status says it is over."""
    candidate = result.candidate
    if candidate.fact_type.casefold() not in rules.escalating_fact_types:
        return False
    return candidate.status.strip().casefold() in SETTLED_STATUSES


def _capped(
    results: Sequence[ScoredResult],
    group: Callable[[ScoredResult], tuple[str, ...]],
    leads: Callable[[ScoredResult], bool],
    yields: Callable[[ScoredResult], bool],
) -> list[ScoredResult]:
    """Each result that ``yields`` capped at ``SETTLED_CAP`` × the lowest final of the results
    that ``leads`` in its group and are at least ``RELEVANCE_SHARE`` as relevant (same order)."""
    leaders: dict[tuple[str, ...], list[ScoredResult]] = {}
    for result in results:
        if leads(result):
            leaders.setdefault(group(result), []).append(result)
    if not leaders:
        return list(results)
    out: list[ScoredResult] = []
    for result in results:
        rivals = leaders.get(group(result), [])
        relevant = [
            r.scores.final
            for r in rivals
            if r is not result and r.scores.fused >= RELEVANCE_SHARE * result.scores.fused
        ]
        if relevant and yields(result):
            cap = SETTLED_CAP * min(relevant)
            if result.scores.final > cap:
                scores = dataclasses.replace(result.scores, final=cap)
                result = dataclasses.replace(result, scores=scores)
        out.append(result)
    return out


def _entity(result: ScoredResult) -> tuple[str, ...]:
    return (result.candidate.entity_type, result.candidate.entity_id)


def _entity_fact(result: ScoredResult) -> tuple[str, ...]:
    c = result.candidate
    return (c.entity_type, c.entity_id, c.fact_type.casefold())


def is_problem_record(result: ScoredResult) -> bool:
    return result.candidate.fact_type.casefold() in PROBLEM_FACT_TYPES


def matters_first(
    results: Sequence[ScoredResult], query: str, rules: StateRules
) -> list[ScoredResult]:
    """Both rules of the module docstring, each where its question applies (same order)."""
    out = list(results)
    if asks_about_a_problem(query):
        out = _capped(out, _entity, is_problem_record, lambda r: not is_problem_record(r))
    if asks_current_state(query):
        out = _capped(
            out,
            _entity_fact,
            lambda r: is_open_matter(r.candidate, rules),
            lambda r: is_settled_matter(r, rules),
        )
    return out
