"""The gate's sections of the quality report: the labelled set (split by whether the asker is
known) and LoCoMo asked with the gate on (in-process and, with --via-kafka, served)."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.bench.quality.gate_runs import GATE_ON
from memstream.bench.quality.scoring import ANSWERABLE, Scores
from memstream.bench.quality.served import SERVED_GATED


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


GATE_FALSE_SKIP_TARGET = 0.02
GATE_INVALID_TARGET = 0.10
GATE_ON_R5_TARGET = 0.60
ME = "memstream"


def gate_section(scores: Scores) -> list[str]:
    """The gate on the labelled set, next to "always retrieve"."""
    g = scores.gate["all"]
    out = ["## The gate on the labelled set (asked without force)", ""]
    out += _table(
        [
            "policy",
            "questions",
            "false-skip rate ↓",
            "invalid-query rate ↓",
            "invalid share of retrievals ↓",
        ],
        [
            [
                "memstream's gate",
                str(int(g["n"])),
                _pct(g["false-skip rate"]),
                _pct(g["invalid-query rate"]),
                _pct(g["invalid share of retrievals"]),
            ],
            [
                "always retrieve",
                str(int(g["n"])),
                _pct(0.0),
                _pct(1.0),
                _pct(g["always retrieve: invalid share of retrievals"]),
            ],
        ],
    )
    out += [
        "False skip: a question that depends on memory came back skipped. Invalid query: a "
        "question that does not (small talk, general knowledge, arithmetic, an instruction) was "
        "answered from memory. Mean reply latency: skipped "
        f"{g['mean latency ms, skipped']:.1f} ms, answered "
        f"{g['mean latency ms, answered']:.1f} ms.",
        "",
        f"- gate false-skip ≤ {GATE_FALSE_SKIP_TARGET:.0%}: **"
        + ("met" if g["false-skip rate"] <= GATE_FALSE_SKIP_TARGET else "MISSED")
        + f"** ({g['false-skip rate']:.1%})",
        f"- gate invalid-query rate ≤ {GATE_INVALID_TARGET:.0%}: **"
        + ("met" if g["invalid-query rate"] <= GATE_INVALID_TARGET else "MISSED")
        + f"** ({g['invalid-query rate']:.1%})",
        "",
    ]
    split = [
        [
            part,
            str(int(v["memory questions"])),
            _pct(v["false-skip rate"]),
            str(int(v["other questions"])),
            _pct(v["invalid-query rate"]),
        ]
        for part, v in scores.gate.items()
        if part in ("with user_id", "without user_id")
    ]
    if split:
        out += _table(
            ["asked", "memory questions", "false-skip ↓", "others", "invalid-query ↓"], split
        )
    rows = [
        [group, str(int(v["n"])), _pct(v["answered"])]
        for group, v in scores.gate.items()
        if "answered" in v
    ]
    out += _table(["group", "n", "answered from memory"], rows)
    out += [f"**gate errors** ({len(scores.gate_misses)} listed)", ""]
    out += [f"- {line}" for line in scores.gate_misses[:60]] or ["- none"]
    out += ["", *gate_on_section(scores)]
    return [*out, ""]


def gate_on_section(scores: Scores) -> list[str]:
    """LoCoMo's own questions asked without force: recall with the gate's skips, false-skip."""
    if not scores.gate_on:
        return []
    g = scores.gate_on["all"]
    r5 = {s: scores.locomo.get(s, {}).get(ANSWERABLE, {}).get("recall@5") for s in (ME, GATE_ON)}
    out = ["## LoCoMo with the gate on (no force)", ""]
    out += [
        f"Every LoCoMo question depends on the conversation: {int(g['n'])} asked with what "
        "the agent knows (the speaker's anchor where the question names one) and no force. "
        f"False-skip **{g['false-skip rate']:.1%}**; recall@5 (cat. 1-4) "
        f"**{_num(r5[GATE_ON])}** with the gate on against {_num(r5[ME])} forced "
        "(a skipped question retrieves nothing).",
        "",
        *(
            f"- LoCoMo gate-on recall@5 ≥ {GATE_ON_R5_TARGET}: **"
            + ("met" if (value or 0.0) >= GATE_ON_R5_TARGET else "MISSED")
            + f"** ({_num(value)}, {where})"
            for value, where in (
                (r5[GATE_ON], "in-process"),
                (scores.locomo.get(SERVED_GATED, {}).get(ANSWERABLE, {}).get("recall@5"), "served"),
            )
            if value is not None
        ),
        "",
        f"**false skips** ({len(scores.gate_on_misses)}, first 30)",
        "",
    ]
    out += [f"- {line}" for line in scores.gate_on_misses[:30]] or ["- none"]
    return [*out, ""]
