"""``memstream bench scale``'s options: parsed, run, printed (table or ``--json``) and plotted."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from memstream.bench.scale import ScaleOptions, run_scale
from memstream.bench.scale_report import plot, print_json, print_scale


def sizes(listed: str) -> tuple[int, ...]:
    try:
        chosen = tuple(sorted({int(s.replace("_", "")) for s in listed.split(",") if s.strip()}))
    except ValueError:
        chosen = ()
    if not chosen or min(chosen) < 100:
        raise SystemExit(
            f"memstream bench scale: --sizes {listed!r}: memories, comma-separated, each ≥ 100"
        )
    return chosen


def bench_scale_cli(args: Any) -> int:
    if args.tenants < 0 or args.scale_questions < 2 or not args.rescore_budget > 0:
        raise SystemExit(
            "memstream bench scale: --tenants ≥ 0, --scale-questions ≥ 2, --rescore-budget > 0"
        )
    options = ScaleOptions(
        sizes=sizes(args.sizes),
        tenants=args.tenants,
        questions=args.scale_questions,
        rescore_budget_s=args.rescore_budget,
    )
    # With --json, stdout carries the document alone: the progress goes to stderr.
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        doc = run_scale(options)
    if args.plot:  # the curves, and the document they were drawn from
        folder = Path(args.plot)
        doc["plots"] = [p.name for p in plot(doc, folder)]
        (folder / "scale.json").write_text(json.dumps(doc, indent=2) + "\n")
    if args.json:
        print_json(doc)
    else:
        print_scale(doc)
    return 0
