"""Decay: how fast a memory stops being news, as a half-life per fact type.

``recency(occurred_at, now, half_life) = exp(−ln2 · age / half_life)``: 1 for a memory that is
happening now (or dated in the future), 0.5 after one half-life, towards 0 after many. The
half-lives live in a table (``DecayRules``), overridable per tenant by merging tables.
Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from memstream.services.domain.errors import DomainError

# Why these values: a complaint is about how the customer feels this week; a ticket lives about
# two; an order matters for a quarter (delivery, returns, warranty questions), a return for two
# months; stock levels change within hours and prices every couple of weeks; a product spec or an
# official document stays true for years; forum posts and reviews age in months. A catalogue
# entry (a product or one variant of it: its colour, storage, port, model, size) describes what
# the product *is*, which does not change while it is sold: a year, as a spec — a three-week-old
# entry keeps 96 % of its recency, and when the catalogue changes an entry it publishes a new
# version, which versioning (not decay) settles. Its price and stock are facts of their own. A
# warranty or a contract holds until the date it states: a year, as a spec. The common spellings
# of one kind of record share its half-life ("official_doc" and "official_document", "review" and
# "user_review"), as they share its authority (``authority``); a press release ages as a review.
# A promotion lasts weeks. A parcel's status changes by the day (picked up, in transit, out for
# delivery): three days, so the latest status update of a shipment answers "where is it?". A
# compound name not in the table ("product_price", "stock_level", "spec_update") takes the
# shortest half-life among its parts that are ("price": 14 days): the part that changes
# fastest is what the record reports.
DEFAULT_HALF_LIVES: Mapping[str, timedelta] = MappingProxyType(
    {
        "complaint": timedelta(days=7),
        "ticket": timedelta(days=14),
        "order": timedelta(days=90),
        "return": timedelta(days=60),
        "browsing": timedelta(days=30),
        "page_view": timedelta(days=30),
        "inventory": timedelta(hours=6),
        "stock": timedelta(hours=6),
        "price": timedelta(days=14),
        "promotion": timedelta(days=30),
        "shipment": timedelta(days=3),
        "delivery": timedelta(days=3),
        "tracking": timedelta(days=3),
        "waybill": timedelta(days=3),
        "logistics": timedelta(days=3),
        "parcel": timedelta(days=3),
        "product_spec": timedelta(days=365),
        "specification": timedelta(days=365),
        "spec": timedelta(days=365),
        "catalog": timedelta(days=365),
        "catalogue": timedelta(days=365),
        "catalog_entry": timedelta(days=365),
        "product": timedelta(days=365),
        "product_variant": timedelta(days=365),
        "variant": timedelta(days=365),
        "sku": timedelta(days=365),
        "official_doc": timedelta(days=730),
        "official_document": timedelta(days=730),
        "warranty": timedelta(days=365),
        "contract": timedelta(days=365),
        "press_release": timedelta(days=180),
        "forum_post": timedelta(days=180),
        "review": timedelta(days=180),
        "user_review": timedelta(days=180),
        "preference": timedelta(days=365),
    }
)
DEFAULT_HALF_LIFE = timedelta(days=90)


def _checked(fact_type: str, half_life: timedelta) -> timedelta:
    if half_life <= timedelta(0):
        raise DomainError(f"half-life of fact type {fact_type!r} must be positive, got {half_life}")
    return half_life


@dataclass(frozen=True, slots=True)
class DecayRules:
    """Half-life per fact type (keys are case-insensitive), and one for unlisted fact types."""

    half_lives: Mapping[str, timedelta] = field(default_factory=lambda: DEFAULT_HALF_LIVES)
    default: timedelta = DEFAULT_HALF_LIFE

    def __post_init__(self) -> None:
        table = {key.casefold(): _checked(key, value) for key, value in self.half_lives.items()}
        object.__setattr__(self, "half_lives", MappingProxyType(table))
        _checked("(default)", self.default)

    def half_life(self, fact_type: str) -> timedelta:
        """The fact type's half-life; a compound name not in the table ("product_price") takes
        the shortest among its listed parts, and one with none listed the default."""
        folded = fact_type.strip().casefold()
        exact = self.half_lives.get(folded)
        if exact is not None:
            return exact
        parts = [self.half_lives[p] for p in re.split(r"[\W_]+", folded) if p in self.half_lives]
        return min(parts) if parts else self.default

    def merged(
        self, overrides: Mapping[str, timedelta], default: timedelta | None = None
    ) -> DecayRules:
        """A tenant's rules: this table with ``overrides`` (and ``default``) taking precedence."""
        table = dict(self.half_lives)
        table.update({key.casefold(): value for key, value in overrides.items()})
        return DecayRules(table, self.default if default is None else default)


DEFAULT_DECAY = DecayRules()


def recency(occurred_at: datetime, now: datetime, half_life: timedelta) -> float:
    """``exp(−ln2 · age / half_life)`` clamped to [0, 1]; a future ``occurred_at`` gives 1."""
    _checked("(argument)", half_life)
    age = (now - occurred_at) / half_life
    if age <= 0:
        return 1.0
    return min(1.0, max(0.0, math.exp(-math.log(2) * age)))
