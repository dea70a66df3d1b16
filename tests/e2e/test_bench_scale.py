"""``memstream bench scale`` end to end, small: the real CLI, stack, model and adapters.

Two sizes of one tenant and 20 small tenants; ``--json`` must print exactly one document of the
shape other tools read, every figure measured (positive where it is a cost or a rate) and
consistent with the others, and ``--plot`` must write the curves and the document beside them.
The timeout is a hang guard (scaled per host, see tests/e2e/processes.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.processes import run_cli

SIZE_KEYS = {
    "memories",
    "query_p95_ms",
    "erase_subject_s",
    "rescore_core_share",
    "bytes_per_memory_pg",
    "bytes_per_memory_shard",
}


def test_a_small_scale_run_prints_the_document_and_plots_the_curves(tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    args = ["bench", "scale", "--sizes", "600,1200", "--tenants", "20"]
    args += ["--scale-questions", "12", "--json", "--plot", str(plots)]
    result = run_cli(args, {}, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads(result.stdout)  # stdout is the document alone

    sizes = doc["sizes"]
    assert [s["memories"] for s in sizes] == [600, 1200]
    for figures in sizes:
        assert set(figures) >= SIZE_KEYS, figures.keys()
        for key in ("query_p50_ms", "query_p95_ms", "erase_subject_s", "bytes_per_memory_pg",
                    "bytes_per_memory_shard", "build_events_per_s", "ingest_events_per_s",
                    "ingest_cpu_ms_per_event", "rescore_pass_s", "rescore_ms_per_row",
                    "replay_events_per_s", "worker_rss_bytes"):  # fmt: skip
            assert figures[key] > 0, (key, figures[key])
        assert figures["query_p50_ms"] <= figures["query_p95_ms"]
        assert figures["query_under_ingest_count"] > 0
        assert 0 <= figures["ingest_cpu_ms_outside_model"] <= figures["ingest_cpu_ms_per_event"]
        # One customer is erased at each size: its memories, from Postgres and the shard.
        assert figures["erase_versions"] == figures["erase_vectors"] == 50
        assert figures["erase_pending"] == 0  # every phase done
        phases = figures["erase_phases_s"]
        assert {"postgres", "vector_delete", "vector_compaction"} <= set(phases)
        assert abs(sum(phases.values()) - figures["erase_subject_s"]) < 1e-6
        # The worker VACUUMs after the erasure is complete: timed apart, not in its total.
        assert "vacuum" not in phases and figures["erase_vacuum_after_s"] > 0
        # The pass ends when nothing is due; it reads only the versions whose state the clock
        # changed (open complaints past the escalation delay, expiries), not every version.
        assert not figures["rescore_extrapolated"]
        assert 0 < figures["rescore_rows"] < figures["memories"]
        # Once caught up, the next pass a period later finds only what the clock changed in
        # that period: none of the versions the first pass scored again.
        assert figures["rescore_next_rows"] < figures["rescore_rows"]
        assert 0 <= figures["rescore_core_share"] < 1
        # A shard holds a 384-d float vector per memory at least.
        assert figures["bytes_per_memory_shard"] > 384 * 4
    assert sizes[1]["memories_held"] > sizes[0]["memories_held"]
    # A tenant of the smallest size, asked right after the grown one at every size.
    assert doc["reference"]["memories"] == 600
    for figures in sizes:
        assert 0 < figures["reference_query_p50_ms"] <= figures["reference_query_p95_ms"]
        # ... and while the customer is erased: answered meanwhile, each timed.
        assert figures["erase_beside_asked"] >= 1
        assert 0 < figures["erase_beside_p50_ms"] <= figures["erase_beside_max_ms"]
        # ... in turn with the tenant erased from.
        asked = figures["erase_beside_asked"]
        assert figures["erase_self_asked"] in (asked, asked - 1)
        if figures["erase_self_asked"]:
            assert 0 < figures["erase_self_p50_ms"] <= figures["erase_self_max_ms"]

    tenants = doc["tenants"]
    assert tenants["count"] == 20
    assert tenants["query_p95_ms"] > 0 and tenants["one_tenant_query_p95_ms"] > 0
    assert 1 <= tenants["distinct_tenants_asked"] <= 20
    # Measured after five times as many Zipf questions; the first ones are reported apart.
    assert tenants["asked_before_measuring"] == 5 * 12
    assert tenants["cold_query_p95_ms"] >= tenants["cold_query_p50_ms"] > 0
    assert tenants["open_shards"] <= tenants["max_open_shards"]
    assert tenants["maps_per_open_shard"] > 0

    ingest = doc["ingest"]
    assert set(ingest) >= {"events_per_s", "model_alone_texts_per_s", "cpu_ms_outside_model"}
    assert ingest["events_per_s"] == sizes[-1]["ingest_events_per_s"]
    assert ingest["model_alone_texts_per_s"] > 0
    budget = doc["budget"]
    assert budget["max_open_shards"] == tenants["max_open_shards"] > 0
    assert "vector shards: at most" in budget["describe"]
    assert doc["method"]["dead_letters"] == 0

    for name in ("query", "ingest", "rescore", "erasure", "replay", "bytes", "rss", "tenants"):
        assert (plots / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name
    assert json.loads((plots / "scale.json").read_text())["sizes"] == sizes
