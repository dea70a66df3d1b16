"""The blind seed suite (``--suites seedblind``): cases written from the seed article's text
alone, without reading the ranking code, apart from the other seed suites (other kinds, record
formats, distractors and phrasings), and meant to stay unseen by whoever tunes the ranking.

Fourteen kinds, ``per_kind`` cases each (clamped to 10–20), each case in its own tenant. Twelve
kinds alternate English and Chinese; two (``zh_*``) are Chinese only. Every question names the
one memory that must rank first, those that must rank below it, and those never to be returned
(a retracted forum post; another customer's near-identical record). Kinds:
``seedblind_personal`` (views, follow-ups, ordinals, terse asks), ``seedblind_service``
(complaint state, another customer's record), ``seedblind_catalogue`` (authority, stock
versions, as-of a named period, supersession, variants), ``seedblind_context`` (colloquial
Chinese, pronouns, contract clauses).
Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime

from memstream.bench.quality.seedblind_catalogue import (
    source_ladder,
    spec_as_of_period,
    spec_superseded_now,
    stock_latest,
    variant_attributes,
)
from memstream.bench.quality.seedblind_context import (
    contract_clause,
    zh_colloquial_order,
    zh_pronoun_reference,
)
from memstream.bench.quality.seedblind_personal import (
    browse_recency,
    focus_followup,
    ordinal_first_last,
    terse_personal,
)
from memstream.bench.quality.seedblind_service import complaint_state, other_customer_forbidden
from memstream.bench.quality.seedblind_words import BlindCase
from memstream.bench.quality.suite import Suite

KINDS: dict[str, Callable[[BlindCase], None]] = {
    "browse_recency": browse_recency,
    "source_ladder": source_ladder,
    "stock_latest": stock_latest,
    "spec_as_of_period": spec_as_of_period,
    "spec_superseded_now": spec_superseded_now,
    "focus_followup": focus_followup,
    "ordinal_first_last": ordinal_first_last,
    "terse_personal": terse_personal,
    "variant_attributes": variant_attributes,
    "complaint_state": complaint_state,
    "other_customer_forbidden": other_customer_forbidden,
    "contract_clause": contract_clause,
    "zh_colloquial_order": zh_colloquial_order,
    "zh_pronoun_reference": zh_pronoun_reference,
}
CHINESE_ONLY = frozenset({"zh_colloquial_order", "zh_pronoun_reference"})
MIN_CASES, MAX_CASES = 10, 20


def seed_blind_suite(per_kind: int, now: datetime, seed: int = 7) -> Suite:
    """``per_kind`` (10–20) cases of every kind; the same seed and ``now`` give the same suite."""
    per_kind = max(MIN_CASES, min(MAX_CASES, per_kind))
    suite = Suite("seedblind", limit=5)
    for kind, build in KINDS.items():
        rng = random.Random(f"seedblind:{seed}:{kind}")  # noqa: S311 - benchmark data
        for index in range(per_kind):
            zh = kind in CHINESE_ONLY or index % 2 == 1
            case = BlindCase(kind, index, now, rng, zh)
            build(case)
            suite.events.extend(case.events)
            suite.late.extend(case.late)
            suite.questions.extend(case.questions)
    suite.notes.append(
        f"{per_kind} cases per kind (English and Chinese alternately; zh_* kinds Chinese only), "
        f"seed {seed}; written from the seed's text without reading the ranking code; wrong = "
        "top answer not the expected memory, or a forbidden one (a retracted post, another "
        "customer's record) in the top 5"
    )
    return suite
