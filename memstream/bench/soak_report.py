"""``memstream bench soak``'s printout: the tail, the outcomes, the answers per minute, a row
per ``WINDOW`` requests (tail, queue time, RSS, the worker's stages) and each minute's RSS."""

from __future__ import annotations

import itertools
from typing import Any

from memstream.bench.soak import WINDOW, out


def print_soak(figures: dict[str, Any]) -> None:
    e, q = figures["end_to_end"], figures["queue"]
    out.print(
        f"memstream bench soak · {figures['requests']} requests, {figures['concurrency']} in "
        f"flight, {figures['seconds']:.0f}s ({figures['requests'] / figures['seconds']:.0f}/s), "
        f"{figures['ingested_meanwhile']} events ingested meanwhile, "
        f"{figures['rebalances']} rebalances seen by the worker"
    )
    out.print(
        f"end to end ms: p50 {e[0.5]:.1f} · p99 {e[0.99]:.1f} · p99.9 {e[0.999]:.1f} · "
        f"max {e[1.0]:.1f} · over 1 s: {figures['over_1s']}"
    )
    out.print(
        f"queue ms (broker → worker): p50 {q[0.5]:.1f} · p99 {q[0.99]:.1f} · "
        f"p99.9 {q[0.999]:.1f} · max {q[1.0]:.1f} · over 1 s: {figures['queue_over_1s']}"
    )
    turns, near, slow = figures["turns"]
    if figures["rotate_s"]:
        out.print(
            f"generation turns (every {figures['rotate_s']} s): {turns} · requests over 1 s "
            f"at a turn (in flight, or started ≤ 2 s after): {near} of {slow}"
        )
    else:
        out.print("generation turns: rotation off")
    out.print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(figures["outcomes"].items())))
    minutes = figures["per_minute"]
    if minutes:
        change = (minutes[-1] - minutes[0]) / minutes[0] * 100 if minutes[0] else float("nan")
        out.print(
            "answers per minute: " + " ".join(str(m) for m in minutes)
            + f" · last vs first {change:+.0f} %"
        )  # fmt: skip
    for row in figures.get("windows", []):
        out.print(
            f"at {row['requests']:.0f} requests (the last {WINDOW}): p50 {row['p50_ms']:.0f} · "
            f"p99 {row['p99_ms']:.0f} ms · queue p50 {row['queue_p50_ms']:.0f} · p99 "
            f"{row['queue_p99_ms']:.0f} ms · broker RSS {row['broker_rss_mib']:.0f} MiB · worker "
            f"RSS {row['worker_rss_mib']:.0f} MiB"
        )
        timed = [k for k in row if k.startswith("stage_")]
        if timed:
            out.print(
                "  worker stages, mean ms: "
                + " · ".join(
                    f"{k[6:-3]} {row[k]:.1f}" for k in sorted(timed, key=lambda k: -row[k])
                )
            )
    rows = figures["samples"]
    if len(rows) >= 2:
        for who in ("broker", "worker"):
            out.print(
                f"{who} RSS MiB per minute: "
                + " ".join(f"{r[f'{who}_rss_mib']:.0f}" for r in rows)
                + f" · start {rows[0][f'{who}_rss_mib']:.0f} → end {rows[-1][f'{who}_rss_mib']:.0f}"
            )
        out.print(
            "CPU s per minute, broker / worker: "
            + " ".join(
                f"{b['broker_cpu'] - a['broker_cpu']:.0f}/{b['worker_cpu'] - a['worker_cpu']:.0f}"
                for a, b in itertools.pairwise(rows)
            )
        )
