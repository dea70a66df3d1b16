"""``memstream bench quality`` end to end, small: the real CLI, the real stack and model.

A few traps per family, the held-out tenants, 30 LoCoMo questions from one conversation and 20
SGD slot chains; the report and the chart must be written and every headline figure must lie in
[0, 1]. TimeQA is left out: it has no subsample option and would double the model's work (459
events and 459 questions a system); its sets are checked in tests/unit/test_quality_sets.py.
The timeout is a hang guard (scaled per host, see tests/e2e/processes.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.e2e.processes import run_cli


def test_a_small_quality_run_writes_the_report_and_the_chart(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k == "MEMSTREAM_DATASETS"}
    args = ["bench", "quality", "--suites", "traps,heldout,locomo,sgd"]
    args += ["--traps-per-family", "2", "--locomo-conversations", "1"]
    args += ["--locomo-questions", "30", "--sgd-cases", "20", "--out", str(tmp_path)]
    result = run_cli(args, env, timeout=180)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "memstream bench quality" in result.stdout

    [folder] = list(tmp_path.glob("quality-*"))
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert (folder / "chart.png").read_bytes().startswith(b"\x89PNG")

    headline = report.split("## Headline", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in headline.splitlines() if line.startswith("| ")][1:]
    assert [row.split("|")[1].strip() for row in rows] == [
        "memstream",
        "memstream, query only",
        "vector",
        "bm25",
        "vector+bm25 RRF",
        "memstream, gate on",  # LoCoMo asked as an agent asks, without force
    ]
    columns = [c.strip() for c in headline.splitlines()[0].strip("|").split("|")[1:]]
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")[1:]]
        assert len(cells) == len(columns), row
        for column, cell in zip(columns, cells, strict=True):
            if column.startswith("TimeQA"):
                assert cell == "–", row  # not run here
                continue
            if row.startswith("| memstream, gate on") and not column.startswith("LoCoMo"):
                assert cell == "–", row  # the gate-on run asks LoCoMo only
                continue
            value = float(cell.rstrip("%")) / (100 if cell.endswith("%") else 1)
            assert 0.0 <= value <= 1.0, row
    for section in ("wrong-memory rate per family", "per question category", "SGD slot updates"):
        assert section in report
    assert re.search(r"\| isolation \| 2 \|", report)
    assert "elapsed" in report
