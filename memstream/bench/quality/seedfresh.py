"""The fresh seed suite (``--suites seedfresh``): a second set of cases from the seed article.

Written apart from ``seedtraps`` (other record formats, distractors and phrasings) and meant to
stay unseen by whoever tunes the ranking. Ten kinds, ``per_kind`` cases each (clamped to
10–20), alternately English and Chinese, each case in its own tenant; every question names the
one memory that must rank first, those that must rank below it and those never to be returned
(another shop's record). Kinds: ``seedfresh_service`` (returns, complaints, views),
``seedfresh_orders`` (follow-ups, "my order"), ``seedfresh_catalogue`` (decay by fact type,
attributes, authority, versions). Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime

from memstream.bench.quality.seedfresh_catalogue import (
    attribute_sku,
    authority_conflict,
    spec_outlasts_complaint,
    spec_version_history,
)
from memstream.bench.quality.seedfresh_orders import followup_waybill, my_order_isolated
from memstream.bench.quality.seedfresh_service import (
    last_view_recent,
    overdue_complaint,
    recall_still_open,
    return_named_month,
)
from memstream.bench.quality.seedfresh_words import FreshCase, new_case
from memstream.bench.quality.suite import Suite

KINDS: dict[str, Callable[[FreshCase], None]] = {
    "return_named_month": return_named_month,
    "recall_still_open": recall_still_open,
    "overdue_complaint": overdue_complaint,
    "last_view_recent": last_view_recent,
    "followup_waybill": followup_waybill,
    "my_order_isolated": my_order_isolated,
    "spec_outlasts_complaint": spec_outlasts_complaint,
    "attribute_sku": attribute_sku,
    "authority_conflict": authority_conflict,
    "spec_version_history": spec_version_history,
}
MIN_CASES, MAX_CASES = 10, 20


def seed_fresh_suite(per_kind: int, now: datetime, seed: int = 7) -> Suite:
    """``per_kind`` (10–20) cases of every kind; the same seed and ``now`` give the same
    suite."""
    per_kind = max(MIN_CASES, min(MAX_CASES, per_kind))
    suite = Suite("seedfresh", limit=5)
    for kind, build in KINDS.items():
        rng = random.Random(f"seedfresh:{seed}:{kind}")  # noqa: S311 - benchmark data
        for index in range(per_kind):
            case = new_case(kind, index, now, rng)
            build(case)
            suite.events.extend(case.events)
            suite.late.extend(case.late)
            suite.questions.extend(case.questions)
    suite.notes.append(
        f"{per_kind} cases per kind (English and Chinese alternately), seed {seed}; wrong = top "
        "answer not the expected memory, or a forbidden one (another shop's) in the top 5"
    )
    return suite
