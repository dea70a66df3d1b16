"""The per-case builder of the held-out seed suite (``seedheld``): one case, one tenant.

``Case`` is a ``trap_case.TrapCase`` that places events at absolute times (never after
``now``), can name extra entities on an event, and adds tenant-wide and personal filler records.
Its ``rng`` is seeded per case and carries the case's currency (English amounts). Pure.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from memstream.bench.quality import seedheld_words as words
from memstream.bench.quality.trap_case import TrapCase


class Rng(random.Random):
    """A case's random source; ``currency`` is the format of its English amounts."""

    currency = "€{v}"


class Case(TrapCase):
    """A TrapCase that places events at absolute times and can add extra anchors."""

    def __init__(self, kind: str, index: int, tenant: str, now: datetime, lang: str) -> None:
        super().__init__(kind, index, tenant, now)
        self.lang = lang
        self.rng = Rng()

    def put(
        self,
        key: str,
        content: str,
        at: datetime,
        entity: str,
        fact: str,
        source: str,
        *,
        status: str = "active",
        attributes: dict[str, str] | None = None,
        entities: tuple[str, ...] | list[str] = (),
        op: str = "UPSERT",
        late: bool = False,
    ) -> str:
        assert at <= self.now, (key, at, self.now)
        doc = self.add(
            key,
            content,
            self.now - at,
            entity,
            fact,
            source,
            status=status,
            op=op,
            attributes=attributes,
            late=late,
        )
        if entities:
            event = (self.late if late else self.events)[-1]
            event["entities"] = [
                {"type": e.split(":", 1)[0], "id": e.split(":", 1)[1]} for e in entities
            ]
        return doc

    def days_ago(self, lo: float, hi: float) -> datetime:
        return self.now - timedelta(days=self.rng.uniform(lo, hi))

    def noise(
        self,
        tenant_count: int,
        person: str | None = None,
        person_count: int = 0,
        avoid_topics: tuple[str, ...] = (),
    ) -> None:
        rng = self.rng
        for n, (fact, source, text) in enumerate(
            rng.sample(words.TENANT_NOISE[self.lang], tenant_count)
        ):
            self.put(
                f"kb:{fact}:{n}", text, self.days_ago(20, 500), f"document:kb{n}", fact, source
            )
        if person and person_count:
            pool = [
                p
                for p in words.PERSON_NOISE[self.lang]
                if not any(t in p[2].lower() or t in p[2] for t in avoid_topics)
            ]
            for n, (fact, source, text) in enumerate(
                rng.sample(pool, min(person_count, len(pool)))
            ):
                self.put(
                    f"customer:{person}|{fact}{n}",
                    text,
                    self.days_ago(10, 400),
                    f"customer:{person}",
                    fact,
                    source,
                )


def pick(rng: random.Random, options: list[str]) -> str:
    return rng.choice(options)


CURRENCY = {"en": ["€{v}", "${v}", "{v} EUR", "£{v}"]}


def amount(rng: Rng, lang: str, lo: int = 19, hi: int = 2400) -> str:
    """An amount; in English in the case's currency (``rng.currency``, set per case)."""
    v = f"{rng.randint(lo, hi)}{rng.choice(['', '.50', '.90', '.99', '.00'])}"
    return v if lang == "zh" else rng.currency.format(v=v)
