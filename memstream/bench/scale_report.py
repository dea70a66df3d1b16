"""``bench scale``'s output: one table, the JSON document, and a plot of each curve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

out = Console(highlight=False, width=150)  # one row a line, in a terminal or a file

# (label, key, format) of each row of the table, per size.
ROWS: list[tuple[str, str, str]] = [
    ("memories written (events/s, ingest handler, cached vectors)", "build_events_per_s", "{:.0f}"),
    (
        "HNSW builds so far (child process) / waited for before the questions (s)",
        "index_builds|index_build_wait_s",
        "{:.0f} / {:.1f}",
    ),
    (
        "  the last build: points / copy (the shard's lock held) / child / catch-up / swap (s)",
        "index_last_build.points|index_last_build.copy_s|index_last_build.child_s|"
        "index_last_build.catch_up_s|index_last_build.swap_s",
        "{:.0f} / {:.1f} / {:.1f} / {:.1f} / {:.1f}",
    ),
    ("query p50 / p95, idle (ms)", "query_p50_ms|query_p95_ms", "{:.1f} / {:.1f}"),
    (
        "  the reference tenant (the smallest size) asked right after: p50 / p95 (ms)",
        "reference_query_p50_ms|reference_query_p95_ms",
        "{:.1f} / {:.1f}",
    ),
    (
        "  p50 by stage: embed / vector / keyword (the wait left) / fetch / rank (ms)",
        "query_stage_p50_ms.embed|query_stage_p50_ms.vector|query_stage_p50_ms.keyword|"
        "query_stage_p50_ms.fetch|query_stage_p50_ms.rank",
        "{:.1f} / {:.1f} / {:.1f} / {:.1f} / {:.1f}",
    ),
    (
        "query p50 / p95, under ingest (ms)",
        "query_under_ingest_p50_ms|query_under_ingest_p95_ms",
        "{:.1f} / {:.1f}",
    ),
    ("ingest, real model (events/s)", "ingest_events_per_s", "{:.1f}"),
    (
        "ingest CPU per event, all / outside the model (ms)",
        "ingest_cpu_ms_per_event|ingest_cpu_ms_outside_model",
        "{:.2f} / {:.2f}",
    ),
    (
        "rescoring, catching up with the build (s) · rows · CPU ms per row",
        "rescore_pass_s|rescore_rows|rescore_ms_per_row",
        "{:.1f} · {:.0f} · {:.2f}",
    ),
    (
        "rescoring, the next pass (s) · rows · share of one core",
        "rescore_next_pass_s|rescore_next_rows|rescore_core_share",
        "{:.2f} · {:.0f} · {:.2%}",
    ),
    ("erasure of one subject, total (s)", "erase_subject_s", "{:.2f}"),
    ("  erasures left pending (a phase failed: not a complete erasure)", "erase_pending", "{:.0f}"),
    (
        "  transaction / vector delete / compaction (s)",
        "erase_phases_s.postgres|erase_phases_s.vector_delete|erase_phases_s.vector_compaction",
        "{:.2f} / {:.2f} / {:.2f}",
    ),
    (
        "  the reference tenant asked meanwhile: questions · p50 / slowest (ms)",
        "erase_beside_asked|erase_beside_p50_ms|erase_beside_max_ms",
        "{:.0f} · {:.1f} / {:.1f}",
    ),
    (
        "  the erased tenant asked meanwhile: questions · p50 / slowest (ms)",
        "erase_self_asked|erase_self_p50_ms|erase_self_max_ms",
        "{:.0f} · {:.1f} / {:.1f}",
    ),
    (
        "  Redis purge / VACUUM, after it is complete (s)",
        "erase_phases_s.cache_purge|erase_vacuum_after_s",
        "{:.2f} / {:.2f}",
    ),
    ("replay from the ledger, no vectors (events/s)", "replay_events_per_s", "{:.0f}"),
    ("bytes per memory, PostgreSQL", "bytes_per_memory_pg", "{:,.0f}"),
    ("bytes per memory, Qdrant Edge shard", "bytes_per_memory_shard", "{:,.0f}"),
    ("worker RSS (MiB) · memory maps", "worker_rss_bytes|worker_maps", "{:.0f} · {:.0f}"),
]


def _value(figures: dict[str, Any], key: str) -> float:
    value: Any = figures
    for part in key.split("."):
        value = value.get(part, 0.0) if isinstance(value, dict) else 0.0
    return float(value or 0.0)


def cell(figures: dict[str, Any], keys: str, fmt: str) -> str:
    values = [_value(figures, k) for k in keys.split("|")]
    if keys == "worker_rss_bytes|worker_maps":
        values[0] /= 2**20
    text = fmt.format(*values)
    if keys.startswith("rescore_pass") and figures.get("rescore_extrapolated"):
        text += " (extrapolated)"
    if keys.startswith("rescore_next") and figures.get("rescore_extrapolated"):
        text += " (the catch-up's rest, not the timer's cost once caught up)"
    return text


def print_scale(doc: dict[str, Any]) -> None:
    sizes = doc["sizes"]
    table = Table(title="memstream bench scale", title_justify="left")
    table.add_column("figure")
    for figures in sizes:
        table.add_column(f"{figures['memories']:,} memories", justify="right")
    for label, keys, fmt in ROWS:
        table.add_row(label, *(cell(f, keys, fmt) for f in sizes))
    out.print(table)
    if len(sizes) > 1 and sizes[0]["query_p95_ms"]:
        first, last = sizes[0], sizes[-1]
        beside = last.get("reference_query_p95_ms") or 0.0
        line = (
            f"query p95 at {last['memories']:,} / at {first['memories']:,}: "
            f"{last['query_p95_ms'] / first['query_p95_ms']:.2f}x in sequence"
        )
        if beside:
            line += f", {last['query_p95_ms'] / beside:.2f}x the reference asked beside it"
        out.print(line)
    tenants, ingest, budget, method = doc["tenants"], doc["ingest"], doc["budget"], doc["method"]
    side = Table(show_header=False, title_justify="left")
    side.add_column("figure")
    side.add_column("value", justify="right")
    if tenants.get("count"):
        side.add_row(
            f"{tenants['count']:,} tenants (Zipf, s = 1.1), after "
            f"{tenants.get('asked_before_measuring', 0):,} questions: query p50 / p95 (ms)",
            f"{tenants['query_p50_ms']:.1f} / {tenants['query_p95_ms']:.1f}",
        )
        if "cold_query_p95_ms" in tenants:
            side.add_row(
                "  the first questions after the build (cold): p50 / p95 (ms)",
                f"{tenants['cold_query_p50_ms']:.1f} / {tenants['cold_query_p95_ms']:.1f}",
            )
        side.add_row(
            "the same questions, one tenant: p50 / p95 (ms)",
            f"{tenants['one_tenant_query_p50_ms']:.1f} / {tenants['one_tenant_query_p95_ms']:.1f}",
        )
        side.add_row(
            "tenants asked · shards open / at most",
            f"{tenants['distinct_tenants_asked']} · {tenants['open_shards']} / "
            f"{tenants['max_open_shards']}",
        )
        side.add_row(
            "tenants written (s, a new shard each)",
            f"{tenants['build_s']:.1f} ({tenants['build_s'] / tenants['count']:.2f} per tenant)",
        )
        per_shard = tenants["rss_per_open_shard_bytes"]
        side.add_row(
            "per open shard: memory maps · RSS",
            f"{tenants['maps_per_open_shard']:.0f} · "
            + (
                f"{per_shard / 2**20:.2f} MiB"
                if per_shard >= 0
                # After a large tenant the process may return more memory than the small
                # tenants' shards take: the difference says nothing of a shard then.
                else "not measurable (the process's RSS fell meanwhile)"
            ),
        )
    side.add_row(
        f"ingest at {ingest['at_memories']:,}: events/s · model alone texts/s",
        f"{ingest['events_per_s']:.1f} · {ingest['model_alone_texts_per_s']:.1f}",
    )
    side.add_row(
        "ingest CPU per event: outside the model · the model alone (ms)",
        f"{ingest['cpu_ms_outside_model']:.2f} · {ingest['model_cpu_ms_per_text']:.2f}",
    )
    side.add_row("shard budget", budget["describe"])
    side.add_row(
        "how the store was built",
        f"{method['vector_cache_texts']:,} distinct texts embedded once by the model, reused "
        f"with a reference and a perturbed vector each; {method['lanes']} lanes of the ingest "
        f"handler; {method['dead_letters']} dead letters",
    )
    side.add_row("wall time (s)", f"{doc.get('seconds', 0.0):.0f}")
    out.print(side)


def print_json(doc: dict[str, Any]) -> None:
    print(json.dumps(doc, indent=2, sort_keys=False))


# (file name, title, y label, [(label, key)]) of each plot, against memories.
PLOTS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    (
        "query",
        "query latency",
        "ms",
        [
            ("p50 idle", "query_p50_ms"),
            ("p95 idle", "query_p95_ms"),
            ("p95 under ingest", "query_under_ingest_p95_ms"),
            ("p95 of the reference tenant, asked right after", "reference_query_p95_ms"),
        ],
    ),
    (
        "ingest",
        "ingest (real model)",
        "events/s · CPU ms per event",
        [
            ("events/s", "ingest_events_per_s"),
            ("CPU ms/event outside the model", "ingest_cpu_ms_outside_model"),
        ],
    ),
    (
        "rescore",
        "rescoring",
        "s · % of one core",
        [
            ("catching up with the build (s)", "rescore_pass_s"),
            ("next pass, share of one core (%)", "rescore_core_share"),
        ],
    ),
    (
        "erasure",
        "erasure of one subject",
        "s",
        [
            ("total", "erase_subject_s"),
            ("compaction", "erase_phases_s.vector_compaction"),
            ("transaction", "erase_phases_s.postgres"),
            ("VACUUM, after it", "erase_vacuum_after_s"),
        ],
    ),
    (
        "replay",
        "replay from the ledger (no vectors)",
        "events/s",
        [("events/s", "replay_events_per_s")],
    ),
    (
        "bytes",
        "bytes per memory",
        "bytes",
        [("PostgreSQL", "bytes_per_memory_pg"), ("Qdrant Edge shard", "bytes_per_memory_shard")],
    ),
    ("rss", "worker RSS", "MiB", [("RSS", "worker_rss_bytes")]),
]


def plot(doc: dict[str, Any], folder: Path) -> list[Path]:
    """One PNG per curve under ``folder``, memories on a log axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    sizes = doc["sizes"]
    xs = [f["memories"] for f in sizes]
    written = []
    for name, title, ylabel, series in PLOTS:
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        for label, key in series:
            ys = [_value(f, key) for f in sizes]
            if key == "rescore_core_share":
                ys = [y * 100 for y in ys]
            if key == "worker_rss_bytes":
                ys = [y / 2**20 for y in ys]
            ax.plot(xs, ys, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("memories in the tenant")
        ax.set_ylabel(ylabel)
        ax.set_title(f"memstream bench scale: {title}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = folder / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    tenants = doc["tenants"]
    if tenants.get("count"):
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        labels = [f"{tenants['count']:,} tenants (Zipf)", "one tenant"]
        ax.bar(labels, [tenants["query_p95_ms"], tenants["one_tenant_query_p95_ms"]])
        ax.set_ylabel("query p95 (ms)")
        ax.set_title("memstream bench scale: many tenants")
        fig.tight_layout()
        path = folder / "tenants.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
