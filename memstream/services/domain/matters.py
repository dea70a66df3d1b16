"""Current-state questions: an open matter is the answer before the settled ones of its kind.

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
Pure. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

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
_EN_PATTERN = re.compile(
    r"(?<![a-z0-9])(?:"
    + "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in _CURRENT_STATE_EN)
    + r")(?![a-z0-9])",
    re.IGNORECASE,
)


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


def open_matters_first(
    results: Sequence[ScoredResult], query: str, rules: StateRules
) -> list[ScoredResult]:
    """The results (same order), settled matters capped below the open ones (see above).

    Applies only when ``asks_current_state(query)``; otherwise returns the results unchanged.
    """
    if not asks_current_state(query):
        return list(results)
    groups: dict[tuple[str, str, str], list[ScoredResult]] = {}
    for result in results:
        c = result.candidate
        if is_open_matter(c, rules):
            groups.setdefault((c.entity_type, c.entity_id, c.fact_type.casefold()), []).append(
                result
            )
    if not groups:
        return list(results)
    out: list[ScoredResult] = []
    for result in results:
        c = result.candidate
        rivals = groups.get((c.entity_type, c.entity_id, c.fact_type.casefold()), [])
        relevant = [
            r.scores.final
            for r in rivals
            if r.scores.fused >= RELEVANCE_SHARE * result.scores.fused
        ]
        if relevant and is_settled_matter(result, rules):
            cap = SETTLED_CAP * min(relevant)
            if result.scores.final > cap:
                scores = dataclasses.replace(result.scores, final=cap)
                result = dataclasses.replace(result, scores=scores)
        out.append(result)
    return out
