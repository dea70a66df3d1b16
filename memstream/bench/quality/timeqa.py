"""TimeQA as an as-of suite: each (entity, relation) group's time-scoped answers become the
versions of one memory, each valid from the first year of the period its question names.

For every question the right document is its answer's version; memstream is asked with
``as_of`` inside the period (the middle between the version's start and the next version's
start); the baselines get the question text (the years in it included) over every version of
every group in the tenant (20 groups share a tenant: other people's facts compete too). A
memory's text is "<subject> — <relation>: <answer>" with no date: what a fact table holds.
Questions without a year, before 1971, or whose period starts in the same year as an earlier
one of the group are left out. Pure but for reading the dataset.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.bench.quality.suite import Question, Suite, doc_id

GROUPS_PER_TENANT = 20
FIRST_YEAR = 1971  # memstream refuses events dated before 1970 (absurd_timestamp)
_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)")


def _subject(index: str) -> str:
    return index.split("/wiki/", 1)[-1].split("#", 1)[0].replace("_", " ")


def timeqa_suite(root: Path, groups: int | None = None) -> Suite:
    """The human-annotated test split as a suite (``groups``: the first n groups only)."""
    folder = root / "timeqa"
    data: list[dict[str, Any]] = json.loads(
        (folder / "dataset" / "human_annotated_test.json").read_text(encoding="utf-8")
    )
    relations = json.loads((folder / "relations.json").read_text(encoding="utf-8"))
    suite = Suite("timeqa", limit=10)
    asked = skipped = 0
    for n, group in enumerate(data[:groups]):
        tenant = f"timeqa-{n // GROUPS_PER_TENANT}"
        subject = _subject(group["index"])
        meaning = relations.get(group["type"], {}).get("meaning", group["type"])
        periods: dict[int, tuple[str, str]] = {}  # start year → (question, answer)
        for question, answers in group["questions"]:
            years = [int(y) for y in _YEAR.findall(question)]
            answer = next((a["answer"].strip() for a in answers if a.get("answer")), "")
            if not years or not answer or min(years) < FIRST_YEAR or min(years) in periods:
                skipped += 1
                continue
            periods[min(years)] = (question.strip(), answer)
        starts = sorted(periods)
        for i, start in enumerate(starts):
            question, answer = periods[start]
            began = datetime(start, 1, 1, tzinfo=UTC)
            event_id = f"{group['index']}@{start}"
            suite.events.append(
                {
                    "event_id": event_id,
                    "tenant_id": tenant,
                    "memory_key": group["index"],
                    "entity_type": "subject",
                    "entity_id": subject,
                    "fact_type": meaning.replace(" ", "_"),
                    "content": f"{subject} — {meaning}: {answer}",
                    "source_system": "wikidata",
                    "occurred_at": began.isoformat(),
                }
            )
            following = (
                datetime(starts[i + 1], 1, 1, tzinfo=UTC)
                if i + 1 < len(starts)
                else began + timedelta(days=365)
            )
            as_of = began + (following - began) / 2
            suite.questions.append(
                Question(
                    f"{group['index']}#{start}",
                    tenant,
                    question,
                    meaning,
                    frozenset({doc_id(tenant, event_id)}),
                    {"as_of": as_of.isoformat()},
                )
            )
            asked += 1
    suite.events.sort(key=lambda e: (e["tenant_id"], e["memory_key"], e["occurred_at"]))
    suite.notes.append(
        f"{len(data[:groups])} (entity, relation) groups, {asked} questions asked, {skipped} "
        "left out (no year, no answer, a period before 1971 or starting in the same year as "
        "another)"
    )
    return suite
