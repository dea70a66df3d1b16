"""The entry point of ``memstream bench quality``: options in, report folder out.

``memstream bench quality`` with no limits is the full run: 20 traps per family (200
questions), all 10 LoCoMo conversations (5,882 turns, 1,982 questions with evidence) and all
2,629 SGD slot chains (from 2,729 probes), each SGD chain ingested twice (as versions and as
separate turns). ``--traps-per-family``, ``--locomo-conversations``, ``--locomo-questions`` and
``--sgd-cases`` subsample for a quick run; ``--suites`` picks suites.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from memstream.bench.quality.report import print_headline, write
from memstream.bench.quality.runner import ALL_SUITES, Options, run_quality
from memstream.bench.quality.scoring import Scores, score


def options_from_args(args: Any) -> Options:
    suites = tuple(s.strip() for s in str(args.suites).split(",") if s.strip())
    unknown = set(suites) - set(ALL_SUITES)
    if unknown or not suites:
        raise SystemExit(f"memstream: --suites: unknown {sorted(unknown)}; use {ALL_SUITES}")
    return Options(
        traps_per_family=args.traps_per_family,
        locomo_conversations=args.locomo_conversations,
        locomo_questions=args.locomo_questions,
        sgd_cases=args.sgd_cases,
        seed=args.seed,
        suites=suites,
        embedding_cache=Path(args.out) / ".embedding-cache",
        via_kafka=bool(getattr(args, "via_kafka", False)),
    )


def bench_quality(
    options: Options, out: Path, console: Console | None = None
) -> tuple[Path, Scores]:
    """Run everything, write ``out/quality-<timestamp>/{report.md,chart.png}``, print the
    headline; returns the folder and the scores."""

    console = console or Console(highlight=False)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    runs, stages = run_quality(options, console)
    scores = score(runs)
    elapsed = time.perf_counter() - started
    folder = write(scores, runs, stages, options, elapsed, out, started_at)
    print_headline(scores, console)
    console.print(f"elapsed {elapsed:.0f} s · report {folder / 'report.md'} · chart "
                  f"{folder / 'chart.png'}")  # fmt: skip
    return folder, scores


def bench_quality_cli(args: Any) -> int:
    bench_quality(options_from_args(args), Path(args.out))
    return 0
