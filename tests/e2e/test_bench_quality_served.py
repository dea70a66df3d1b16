"""``memstream bench quality --via-kafka`` end to end, small: LoCoMo through a real stack.

One conversation, 20 questions: the turns are published through Kafka to a real worker and the
questions asked through the request/reply path. The served figures must be computed for every
category the in-process run reports, and lie close to in-process: the requests are the same and
both sides run the same ranking on the same turns; only the embedding batches (last float digits)
and the clock (seconds apart, on turns years old) differ, so at most a near-tie flips. With 19
answerable questions one flip moves recall@5 by at most 1/19; the tolerance allows two.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.e2e.processes import run_cli

SERVED = "memstream, served (Kafka)"
BARE = "memstream, served (Kafka), no anchors"
GATED = "memstream, served (Kafka), gate on"  # as an agent asks: no force


def _locomo_rows(report: str) -> dict[tuple[str, str], list[float]]:
    section = report.split("## LoCoMo", 1)[1].split("\n## ", 1)[0]
    rows: dict[tuple[str, str], list[float]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"\d+", cells[1]):
            rows[(cells[0], cells[2])] = [float(c) for c in cells[3:]]
    return rows


def test_locomo_served_through_kafka_matches_in_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k == "MEMSTREAM_DATASETS"}
    args = ["bench", "quality", "--suites", "locomo", "--locomo-conversations", "1"]
    args += ["--locomo-questions", "20", "--via-kafka", "--out", str(tmp_path)]
    result = run_cli(args, env, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-12000:]

    [folder] = list(tmp_path.glob("quality-*"))
    report = (folder / "report.md").read_text(encoding="utf-8")
    rows = _locomo_rows(report)
    categories = {category for category, system in rows if system == "memstream"}
    assert "1-4 (answerable)" in categories
    for category in categories:  # the same shape: every category, both served variants
        for system in (SERVED, BARE, GATED, "memstream, gate on"):
            figures = rows[(category, system)]
            assert len(figures) == 4 and all(0.0 <= v <= 1.0 for v in figures), (category, system)

    answerable = "1-4 (answerable)"
    in_process, served = rows[(answerable, "memstream")], rows[(answerable, SERVED)]
    bare_in_process, bare = rows[(answerable, "memstream, query only")], rows[(answerable, BARE)]
    assert abs(served[1] - in_process[1]) <= 2 / 19 + 1e-9, (served, in_process)
    assert abs(bare[1] - bare_in_process[1]) <= 2 / 19 + 1e-9, (bare, bare_in_process)
    gated, gated_in_process = rows[(answerable, GATED)], rows[(answerable, "memstream, gate on")]
    assert abs(gated[1] - gated_in_process[1]) <= 2 / 19 + 1e-9, (gated, gated_in_process)
    assert "## LoCoMo with the gate on (no force)" in report
    assert re.search(r"served through Kafka; top-5 identical to in-process on [\d.]+%", report)
    assert "memstream error replies 0" in report and "dead letters 0" in report
