"""Scores of a quality run, per suite kind, from the ranked ids every system returned.

- traps: wrong-memory rate per family (``metrics.answer_is_wrong``: the top answer is not right,
  or a forbidden memory is returned) and over all questions;
- LoCoMo: recall@1/5/10 and MRR of the evidence turns per category, plus "1-4" over every
  question of categories 1-4 (the answerable ones; category 5 premises are about the wrong
  speaker or never happened, so finding their "evidence" is not the goal there);
- SGD: how often the current value's turn ranks above every superseded one (within the top k),
  the current turn at rank 1, and a superseded turn at rank 1.

Also collects examples of memstream's misses, with the scores from its replies. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memstream.bench.quality import metrics
from memstream.bench.quality.gate_runs import gate_rates
from memstream.bench.quality.gate_set import GateOutcome
from memstream.bench.quality.runner import REPORTED, SEED_SUITES, SuiteRun
from memstream.bench.quality.seed_gate import is_seed_gate, seed_gate_rates
from memstream.bench.quality.seed_words import question_language
from memstream.bench.quality.served import SERVED
from memstream.bench.quality.suite import Question

ANSWERABLE = "1-4 (answerable)"
BLIND = ("seedblind",)
BLIND_NOTE = "withheld: this suite's cases stay unseen by whoever tunes the ranking"


@dataclass(slots=True)
class Scores:
    traps: dict[str, dict[str, float]] = field(default_factory=dict)  # system → family → rate
    trap_counts: dict[str, int] = field(default_factory=dict)
    trap_forbidden: dict[str, int] = field(default_factory=dict)  # system → questions
    locomo: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # sys→cat→m
    locomo_counts: dict[str, int] = field(default_factory=dict)
    sgd: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # suite→sys→m
    sgd_counts: dict[str, int] = field(default_factory=dict)
    sgd_misses: dict[str, dict[str, int]] = field(default_factory=dict)  # suite → why → count
    examples: dict[str, list[str]] = field(default_factory=dict)  # suite → lines
    heldout: dict[str, dict[str, float]] = field(default_factory=dict)  # as traps
    heldout_counts: dict[str, int] = field(default_factory=dict)
    heldout_forbidden: dict[str, int] = field(default_factory=dict)
    seedtraps: dict[str, dict[str, float]] = field(default_factory=dict)  # as traps
    seedtraps_counts: dict[str, int] = field(default_factory=dict)
    seedtraps_forbidden: dict[str, int] = field(default_factory=dict)
    seedfresh: dict[str, dict[str, float]] = field(default_factory=dict)  # as traps
    seedfresh_counts: dict[str, int] = field(default_factory=dict)
    seedfresh_forbidden: dict[str, int] = field(default_factory=dict)
    seedblind: dict[str, dict[str, float]] = field(default_factory=dict)  # as traps
    seedblind_counts: dict[str, int] = field(default_factory=dict)
    seedblind_forbidden: dict[str, int] = field(default_factory=dict)
    seedheld: dict[str, dict[str, float]] = field(default_factory=dict)  # as traps
    seedheld_counts: dict[str, int] = field(default_factory=dict)
    seedheld_forbidden: dict[str, int] = field(default_factory=dict)
    seed_gate: dict[str, dict[str, float]] = field(default_factory=dict)  # seed_gate_rates
    seed_gate_misses: list[str] = field(default_factory=list)
    timeqa: dict[str, float] = field(default_factory=dict)  # system → as-of top-1 accuracy
    timeqa_count: int = 0
    gate: dict[str, dict[str, float]] = field(default_factory=dict)  # group → figures
    gate_misses: list[str] = field(default_factory=list)
    gate_on: dict[str, dict[str, float]] = field(default_factory=dict)  # LoCoMo, no force
    gate_on_misses: list[str] = field(default_factory=list)
    # --via-kafka: share of LoCoMo questions whose served top 5 equals the in-process top 5
    served_agreement: float | None = None

    def headline(self) -> dict[str, dict[str, float | None]]:
        """system → the headline figures (None where a suite did not run)."""
        rows: dict[str, dict[str, float | None]] = {}
        for system in (*REPORTED, *(s for s in self.locomo if s not in REPORTED)):
            locomo = self.locomo.get(system, {}).get(ANSWERABLE, {})
            rows[system] = {
                "trap wrong-memory rate ↓": self.traps.get(system, {}).get("all"),
                "held-out trap wrong-memory rate ↓": self.heldout.get(system, {}).get("all"),
                "LoCoMo recall@5 (cat. 1-4) ↑": locomo.get("recall@5"),
                "LoCoMo MRR (cat. 1-4) ↑": locomo.get("MRR"),
                "SGD current above superseded ↑": self.sgd.get("sgd", {})
                .get(system, {})
                .get("current above superseded"),
                "SGD, turns as separate memories ↑": self.sgd.get("sgd_turns", {})
                .get(system, {})
                .get("current above superseded"),
                "TimeQA as-of top-1 ↑": self.timeqa.get(system),
            }
            if self.seedtraps:  # only when it ran: the default run does not include it
                seed = self.seedtraps.get(system, {}).get("all")
                rows[system]["seed trap wrong-memory rate ↓"] = seed
            if self.seedfresh:  # likewise
                fresh = self.seedfresh.get(system, {}).get("all")
                rows[system]["fresh seed wrong-memory rate ↓"] = fresh
            if self.seedblind:  # likewise
                blind = self.seedblind.get(system, {}).get("all")
                rows[system]["blind seed wrong-memory rate ↓"] = blind
            if self.seedheld:  # likewise
                held = self.seedheld.get(system, {}).get("all")
                rows[system]["held-out seed wrong-memory rate ↓"] = held
        return rows


def _explain(results: Sequence[dict[str, Any]], count: int = 3) -> str:
    parts = []
    for r in results[:count]:
        s = r["scores"]
        parts.append(
            f"`{r['memory_key']}` v{r['version']} ({r['binding_kind']}, {r['status']}) "
            f"final {s['final']:.3f} = fused {s['fused']:.3f} (vec {s['vector']:.3f}, kw "
            f"{s['keyword']:.3f}) × trust {s['trust']:.3f} (auth {s['authority']:.2f}, rec "
            f"{s['recency']:.3f}, bind {s['binding']:.2f}): “{r['content'][:70]}”"
        )
    return "; ".join(parts) if parts else "(no results)"


def score_traps(run: SuiteRun, scores: Scores) -> None:
    """Wrong-memory rates per family; the held-out suite into ``scores.heldout*``, the seed
    suite into ``scores.seedtraps*``, the fresh seed suite into ``scores.seedfresh*``, the blind
    one into ``scores.seedblind*``, the held-out seed suite into ``scores.seedheld*`` (all four
    also per language: "all · en", "all · zh"; the blind suite's misses are not listed)."""
    rates, counts, forbidden = {
        "heldout": (scores.heldout, scores.heldout_counts, scores.heldout_forbidden),
        "seedtraps": (scores.seedtraps, scores.seedtraps_counts, scores.seedtraps_forbidden),
        "seedfresh": (scores.seedfresh, scores.seedfresh_counts, scores.seedfresh_forbidden),
        "seedblind": (scores.seedblind, scores.seedblind_counts, scores.seedblind_forbidden),
        "seedheld": (scores.seedheld, scores.seedheld_counts, scores.seedheld_forbidden),
    }.get(run.suite.name, (scores.traps, scores.trap_counts, scores.trap_forbidden))
    seed = run.suite.name in SEED_SUITES
    questions = run.suite.questions
    for system in REPORTED:
        wrong: dict[str, list[bool]] = defaultdict(list)
        for question, ranked in zip(questions, run.rankings[system], strict=True):
            verdict = metrics.answer_is_wrong(ranked, question.right, question.forbidden)
            wrong[question.group].append(verdict)
            wrong["all"].append(verdict)
            if seed:
                wrong[f"all · {question_language(question)}"].append(verdict)
        rates[system] = {g: sum(v) / len(v) for g, v in wrong.items()}
        forbidden[system] = sum(
            1
            for question, ranked in zip(questions, run.rankings[system], strict=True)
            if question.forbidden.intersection(ranked)
        )
    for question in questions:
        counts[question.group] = counts.get(question.group, 0) + 1
    for question in questions if seed else ():
        lang = f"all · {question_language(question)}"
        counts[lang] = counts.get(lang, 0) + 1
    counts["all"] = len(questions)
    if run.suite.name in BLIND:  # its cases stay unseen: rates only, no questions or answers
        scores.examples[run.suite.name] = [BLIND_NOTE]
        return
    lines = []
    for question, ranked, reply in zip(
        questions, run.rankings["memstream"], run.replies, strict=True
    ):
        if metrics.answer_is_wrong(ranked, question.right, question.forbidden):
            right = "; ".join(run.texts.get(r, r)[:70] for r in question.right)
            lines.append(
                f"{question.group} · “{question.query}” {dict(question.request)} — right: "
                f"“{right}” — memstream: {_explain(reply)}"
            )
    scores.examples[run.suite.name] = lines


def _locomo_metrics(pairs: list[tuple[list[str], Question]]) -> dict[str, float]:
    def avg(values: list[float | None]) -> float:
        value = metrics.mean(values)
        return 0.0 if value is None else value

    return {
        "recall@1": avg([metrics.recall_at_k(r, q.right, 1) for r, q in pairs]),
        "recall@5": avg([metrics.recall_at_k(r, q.right, 5) for r, q in pairs]),
        "recall@10": avg([metrics.recall_at_k(r, q.right, 10) for r, q in pairs]),
        "MRR": avg([metrics.reciprocal_rank(r, q.right) for r, q in pairs]),
    }


def score_locomo(run: SuiteRun, scores: Scores) -> None:
    questions = run.suite.questions
    groups = sorted({q.group for q in questions})
    served = [s for s in run.rankings if s not in REPORTED]  # --via-kafka: the served path
    for system in (*REPORTED, *served):
        pairs = list(zip(run.rankings[system], questions, strict=True))
        table = {g: _locomo_metrics([p for p in pairs if p[1].group == g]) for g in groups}
        answerable = [p for p in pairs if not p[1].group.startswith("5")]
        if answerable:
            table[ANSWERABLE] = _locomo_metrics(answerable)
        scores.locomo[system] = table
    if SERVED in run.rankings:
        same = [
            a[:5] == b[:5]
            for a, b in zip(run.rankings["memstream"], run.rankings[SERVED], strict=True)
        ]
        scores.served_agreement = sum(same) / len(same) if same else None
    for g in groups:
        scores.locomo_counts[g] = sum(1 for q in questions if q.group == g)
    scores.locomo_counts[ANSWERABLE] = sum(1 for q in questions if not q.group.startswith("5"))
    # Where memstream misses the evidence in its top 5 and the best baseline (RRF) finds it.
    lines: list[str] = []
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, question in enumerate(questions):
        mine = metrics.hit_at_k(run.rankings["memstream"][i], question.right, 5)
        theirs = metrics.hit_at_k(run.rankings["vector+bm25 RRF"][i], question.right, 5)
        if mine == 0.0 and theirs == 1.0:
            tally[question.group][0] += 1
            if len(lines) < 12 and not question.group.startswith("5"):
                evidence = "; ".join(run.texts.get(r, r)[:70] for r in question.right)
                lines.append(
                    f"{question.group} · “{question.query}” {dict(question.request)} — "
                    f"evidence: “{evidence}” — memstream: {_explain(run.replies[i], 2)}"
                )
        elif mine == 1.0 and theirs == 0.0:
            tally[question.group][1] += 1
    summary = [
        f"{g}: memstream misses / RRF misses (top 5, where the other hits): {a} / {b}"
        for g, (a, b) in sorted(tally.items())
    ]
    scores.examples["locomo"] = summary + lines


def score_sgd(run: SuiteRun, scores: Scores) -> None:
    questions = run.suite.questions
    table: dict[str, dict[str, float]] = {}
    for system in REPORTED:
        above = current1 = stale1 = 0
        for question, ranked in zip(questions, run.rankings[system], strict=True):
            above += metrics.current_above_superseded(ranked, question.right, question.stale)
            current1 += bool(ranked) and ranked[0] in question.right
            stale1 += bool(ranked) and ranked[0] in question.stale
        n = len(questions) or 1
        table[system] = {
            "current above superseded": above / n,
            "current at rank 1": current1 / n,
            "superseded at rank 1": stale1 / n,
        }
    scores.sgd[run.suite.name] = table
    scores.sgd_counts[run.suite.name] = len(questions)
    lines: list[str] = []
    why: dict[str, int] = defaultdict(int)
    for question, ranked, reply in zip(
        questions, run.rankings["memstream"], run.replies, strict=True
    ):
        if metrics.current_above_superseded(ranked, question.right, question.stale):
            continue
        if question.right.intersection(ranked):
            why["a superseded turn ranked above the current one"] += 1
        elif any(r["binding_kind"] == "none" for r in reply):
            why["current turn not in the top k; other users' memories are"] += 1
        else:
            why["current turn not in the top k; only this user's memories are"] += 1
        if len(lines) < 6:
            lines.append(f"“{question.query}” ({question.qid}) — memstream: {_explain(reply)}")
    scores.sgd_misses[run.suite.name] = dict(why)
    scores.examples[run.suite.name] = lines


def _gate_errors(outcomes: Sequence[GateOutcome]) -> list[str]:
    return [
        f"{'false skip' if o.question.needs_memory else 'let through'} · {o.question.group} · "
        f"“{o.question.query}” {dict(o.question.request)} — {o.reason}"
        for o in outcomes
        if o.answered != o.question.needs_memory
    ]


def score_gate(runs: Sequence[SuiteRun], scores: Scores) -> None:
    """The bench's labelled set into ``scores.gate``, the seed gate set into
    ``scores.seed_gate`` (split by with / without user_id), LoCoMo asked without force into
    ``scores.gate_on``."""
    mine = [o for run in runs for o in run.gate if is_seed_gate(o)]
    if mine:
        scores.seed_gate = seed_gate_rates(mine)
        scores.seed_gate_misses = _gate_errors(mine)
    outcomes = [o for run in runs for o in run.gate if not is_seed_gate(o)]
    if outcomes:
        scores.gate = gate_rates(outcomes)
        scores.gate_misses = _gate_errors(outcomes)
    gate_on = [o for run in runs for o in run.gate_on]
    if gate_on:
        scores.gate_on = gate_rates(gate_on)
        scores.gate_on_misses = _gate_errors(gate_on)


def score_timeqa(run: SuiteRun, scores: Scores) -> None:
    """Top-1 accuracy: the version valid in the question's period ranks first."""
    questions = run.suite.questions
    scores.timeqa_count = len(questions)
    for system in REPORTED:
        hits = [
            bool(ranked) and ranked[0] in question.right
            for question, ranked in zip(questions, run.rankings[system], strict=True)
        ]
        scores.timeqa[system] = sum(hits) / len(hits) if hits else 0.0
    lines = []
    for question, ranked, reply in zip(
        questions, run.rankings["memstream"], run.replies, strict=True
    ):
        if not ranked or ranked[0] not in question.right:
            lines.append(f"“{question.query}” {dict(question.request)} — {_explain(reply, 2)}")
    scores.examples["timeqa"] = lines[:30]


def score(runs: Sequence[SuiteRun]) -> Scores:
    scores = Scores()
    score_gate(runs, scores)
    for run in runs:
        if run.suite.name in ("traps", "heldout", *SEED_SUITES):
            score_traps(run, scores)
        elif run.suite.name == "locomo":
            score_locomo(run, scores)
        elif run.suite.name == "timeqa":
            score_timeqa(run, scores)
        else:
            score_sgd(run, scores)
    return scores
