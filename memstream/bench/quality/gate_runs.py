"""The gate measured as an agent meets it: questions asked without ``force``.

``ask_gate``: the labelled gate set's questions (``gate_set``, ``gate_personal``), each an
answered-or-skipped outcome. ``ask_gate_on``: a suite's own questions (every one depends on
memory) asked with what the agent knows but without ``force``: the rankings (a skipped
question ranks nothing, so recall counts the gate's false skips) and the outcomes.
``gate_rates``: false-skip and invalid-query rates per group, and split by whether the asker
is known. Must not import streams.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from memstream.bench.quality.gate_set import GateOutcome, GateQuestion
from memstream.bench.quality.suite import Suite

GATE_ON = "memstream, gate on"
GATE_ON_GROUP = "{suite} question (gate on)"


async def _ask(local: Any, request: Mapping[str, Any], limit: asyncio.Semaphore) -> Any:
    async with limit:
        return await local.retrieve({"request_id": f"g-{uuid.uuid4().hex[:12]}", **request})


def _outcome(question: GateQuestion, reply: Mapping[str, Any]) -> GateOutcome:
    return GateOutcome(
        question,
        reply.get("status") == "ok",
        str((reply.get("gate") or {}).get("reason", "")),
        float((reply.get("latency_ms") or {}).get("total", 0.0)),
    )


async def ask_gate(
    local: Any, questions: Sequence[GateQuestion], concurrency: int
) -> list[GateOutcome]:
    """The gate set's questions of one suite, asked as an agent would: without ``force``."""
    limit = asyncio.Semaphore(concurrency)

    async def one(question: GateQuestion) -> GateOutcome:
        request = {
            "tenant_id": question.tenant_id,
            "query": question.query,
            "limit": 10,
            **question.request,
        }
        return _outcome(question, await _ask(local, request, limit))

    return list(await asyncio.gather(*(one(q) for q in questions)))


async def ask_gate_on(
    local: Any, suite: Suite, concurrency: int
) -> tuple[list[list[str]], list[GateOutcome]]:
    """Every question of ``suite`` with its request but no ``force``: rankings and outcomes."""
    limit = asyncio.Semaphore(concurrency)
    group = GATE_ON_GROUP.format(suite=suite.name)

    async def one(index: int) -> tuple[list[str], GateOutcome]:
        q = suite.questions[index]
        request = {k: v for k, v in q.request.items() if k != "force"}
        request.update(tenant_id=q.tenant_id, query=q.query, limit=suite.limit)
        reply = await _ask(local, request, limit)
        question = GateQuestion(suite.name, q.tenant_id, q.query, group, True, request)
        ranked = [str(r["version_id"]) for r in reply.get("results") or []]
        return ranked, _outcome(question, reply)

    answers = await asyncio.gather(*(one(i) for i in range(len(suite.questions))))
    return [ranked for ranked, _ in answers], [outcome for _, outcome in answers]


def gate_rates(outcomes: Sequence[GateOutcome]) -> dict[str, dict[str, float]]:
    """group → {n, answered}; plus "false-skip rate", "invalid-query rate" under "all", and
    both rates for the questions asked "with user_id" and "without user_id".

    Also per suite whose tenants were asked, "<suite> tenants, not about memory" (and "…,
    about memory"): the share answered there. The others are spread over every tenant, and
    most tenants are small (traps, SGD dialogues), so the overall rate says little about a
    tenant whose memory is broad conversation (LoCoMo), where common words are held."""
    groups: dict[str, list[GateOutcome]] = {}
    for o in outcomes:
        groups.setdefault(o.question.group, []).append(o)
        about = "about memory" if o.question.needs_memory else "not about memory"
        groups.setdefault(f"{o.question.suite} tenants, {about}", []).append(o)
    table = {
        g: {"n": float(len(os)), "answered": sum(o.answered for o in os) / len(os)}
        for g, os in groups.items()
    }
    for part, user in (("with user_id", True), ("without user_id", False)):
        mine = [o for o in outcomes if _with_user(o.question) is user]
        if mine:
            table[part] = _rates(mine)
    answered = [o for o in outcomes if o.answered]
    table["all"] = {
        **_rates(outcomes),
        "invalid share of retrievals": sum(not o.question.needs_memory for o in answered)
        / max(1, len(answered)),
        "always retrieve: invalid share of retrievals": sum(
            not o.question.needs_memory for o in outcomes
        )
        / max(1, len(outcomes)),
        "mean latency ms, skipped": _mean([o.latency_ms for o in outcomes if not o.answered]),
        "mean latency ms, answered": _mean([o.latency_ms for o in answered]),
    }
    return table


def _with_user(question: GateQuestion) -> bool:
    """Asked by someone known: a ``user_id``, or the person's anchor (``_asker``)."""
    request = question.request
    people = [a for a in request.get("anchors") or () if a.get("type") == "person"]
    return bool(request.get("user_id")) or bool(people)


def _rates(outcomes: Sequence[GateOutcome]) -> dict[str, float]:
    """n, false-skip rate (of the memory questions) and invalid-query rate (of the others)."""
    needed = [o for o in outcomes if o.question.needs_memory]
    other = [o for o in outcomes if not o.question.needs_memory]
    return {
        "n": float(len(outcomes)),
        "memory questions": float(len(needed)),
        "other questions": float(len(other)),
        "false-skip rate": sum(not o.answered for o in needed) / max(1, len(needed)),
        "invalid-query rate": sum(o.answered for o in other) / max(1, len(other)),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
