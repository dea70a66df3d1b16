"""The held-out seed suite (``--suites seedheld``): a sixth generator of retrieval trap cases,
written from the seed's text (and memstream's public interfaces) by a writer who read neither
the ranking code nor the other generators.

Ten kinds, ``per_kind`` cases each (clamped to 10–20), each case in a tenant of its own,
English and Chinese alternating in a per-seed shuffled order. Every question names the one
memory that must rank first and those never to be served (a superseded version of the same
memory, a retracted post): wrong = ``metrics.answer_is_wrong``. Kinds:

- ``twin_customer``: customers of one tenant hold the same kind of record in near-identical
  words; a first-person (often terse) question from one of them;
- ``spec_supersede``: a product spec changed (two or three versions of one memory, sometimes an
  older datasheet repeating the old value); the current version leads, the old are not served;
- ``authority``: an official source and a newer low-authority one (forum, review, third-party
  site) contradict each other on a spec; the low one often echoes the question;
- ``complaint_state``: one customer's complaints about one product, one still open; the question
  asks what is unresolved;
- ``stale_behaviour``: product views years ago (closer to the question's words) and one in the
  last days, same category; the question is about what the user is looking at;
- ``variant_attrs``: a product sold in variants; the question names three attributes only one
  variant has all of (near-misses share two; a sibling model may share all three);
- ``time_named``: a customer's dated records in different periods; the question names the
  period (a month, a quarter, a year, last month, 去年).

A deliberately combined-situations part (``seedheld_combined``), two situations at once:

- ``focus_month``: a follow-up about the entity in focus (``context.active_entities``) AND a
  month named in the question;
- ``retract_supersede``: a retracted low-authority post AND a superseded spec version;
- ``first_twin``: an ordinal (first / last, 第一次 / 上次) AND a look-alike customer whose records
  lie before the asker's first and after the asker's last.

Deterministic for a given (seed, now); dates are placed relative to ``now``. Pure.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from memstream.bench.quality.seedheld_case import CURRENCY, Case, Rng
from memstream.bench.quality.seedheld_catalogue import (
    authority,
    spec_supersede,
    stale_behaviour,
    variant_attrs,
)
from memstream.bench.quality.seedheld_combined import first_twin, focus_month, retract_supersede
from memstream.bench.quality.seedheld_personal import complaint_state, twin_customer
from memstream.bench.quality.seedheld_records import time_named
from memstream.bench.quality.suite import Suite, doc_id

KINDS: dict[str, Callable[[Case], None]] = {
    "twin_customer": twin_customer,
    "spec_supersede": spec_supersede,
    "authority": authority,
    "complaint_state": complaint_state,
    "stale_behaviour": stale_behaviour,
    "variant_attrs": variant_attrs,
    "time_named": time_named,
    "focus_month": focus_month,  # combination
    "retract_supersede": retract_supersede,  # combination
    "first_twin": first_twin,  # combination
}
MIN_CASES, MAX_CASES = 10, 20


def seed_held_suite(per_kind: int, now: datetime, seed: int = 7) -> Suite:
    """``per_kind`` (10–20) cases of every kind; the same seed and ``now`` give the same suite.
    A question's id ends with its language (``-en`` / ``-zh``)."""
    per_kind = max(MIN_CASES, min(MAX_CASES, per_kind))
    suite = Suite("seedheld", limit=10)
    for kind, build in KINDS.items():
        langs = ["en", "zh"] * ((per_kind + 1) // 2)
        random.Random(f"h4|{seed}|{kind}|langs").shuffle(langs)  # noqa: S311 - benchmark data
        for i in range(per_kind):
            tenant = f"h4s{seed}-{kind.replace('_', '')[:10]}-{i:02d}"
            case = Case(kind, i, tenant, now, langs[i])
            case.rng = Rng(f"h4|{seed}|{kind}|{i}")
            case.rng.currency = case.rng.choice(CURRENCY["en"])
            build(case)
            suite.events.extend(case.events)
            suite.late.extend(case.late)
            suite.questions.extend(replace(q, qid=f"{q.qid}-{case.lang}") for q in case.questions)
    check(suite)
    suite.notes.append(
        f"{per_kind} cases per kind (English and Chinese, shuffled per seed), seed {seed}; "
        "written from the seed's text by a writer who read neither the ranking code nor the "
        "other generators; three kinds combine two situations; wrong = top answer not the "
        "expected memory, or a forbidden one (a superseded version, a retracted post) served"
    )
    return suite


def check(suite: Suite) -> None:
    """Structural invariants: one question per tenant; its right memory (exactly one) and its
    forbidden ones are stored documents of that tenant; no right memory is also forbidden."""
    docs: dict[str, set[str]] = {}
    for e in suite.events:
        if e["op"] == "UPSERT":
            docs.setdefault(e["tenant_id"], set()).add(doc_id(e["tenant_id"], e["event_id"]))
    tenants = [q.tenant_id for q in suite.questions]
    assert len(tenants) == len(set(tenants)), "one question per tenant"
    for q in suite.questions:
        assert len(q.right) == 1 and q.right <= docs[q.tenant_id], q.qid
        assert q.forbidden <= docs[q.tenant_id] and not (q.right & q.forbidden), q.qid
