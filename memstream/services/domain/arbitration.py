"""Arbitration: conflicting memories about the same entity and fact, settled by source priority.

Two results conflict when they are different memories (memory_key) from different source systems
about the same entity (entity_type, entity_id) and the same fact_type, and their contents
disagree (``disagree``). One system's records never conflict with each other: two catalogue
entries of one product (a red and a black XR-500) are two items, and a system that changes its
mind publishes a new version of the same memory_key, which versioning settles. Disagreement:

1. attributes that identify a matter (``id`` or ``*_id``: order_id, ticket_id) with different
   values mean two different matters (two orders), which never conflict;
2. otherwise a shared attribute key with different values ("port": "USB-C" vs "micro-USB") is a
   conflict, and shared keys that all agree are not;
3. both with attributes but no key in common: different aspects ("weight" vs "battery"), no
   conflict;
4. otherwise, for single-valued fact types only (a product has one price, one spec sheet, one
   stock level; ``ArbitrationRules.single_valued``): low token overlap (Jaccard < 0.35), or
   similar wording with different numbers ("lasts 10 hours" vs "lasts 4 hours"). Facts that
   accumulate (orders, complaints, page views, posts) have many true memories at once, so text
   alone never makes them conflict.

Commentary (a review, a forum post, a chat) about an entity also conflicts with the entity's own
single-valued records (a spec, a price) when it states one of their quantities with another value
in the same unit ("easily lasts 20 hours" vs "up to 12 hours"): fact types differ, the claim is
the same, and source authority must settle it.

The winner of a conflict is the result with the higher source authority, then the more recent
``occurred_at``, then (for determinism) the smaller version_id. Every result that loses at least
one conflict has its final score multiplied once by ``demotion`` (default 0.5: it stays visible
as evidence of the disagreement but falls below comparable undisputed memories), recorded in its
``factors`` as ``conflict`` (``yielding``). Both sides list each other's version_id in
``conflicts_with``.

A document that states an entity's facts as of its date (a launch datasheet, a spec sheet, a
brochure, a product doc: ``DOCUMENT_PARTS``) loses to a later record of the same entity stating the
same aspect with another value (a quantity in the same unit, a port: ``aspect_clash``), and yields
to it whatever their relevance (a factor ``conflict``, then a yield): the record says what holds
now, the document what held at launch — "last year's superseded spec", which repeats the question's
words ("is it covered for 3 years?") better than the record that replaced it.

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memstream.services.domain.attributes import attributes_in
from memstream.services.domain.authority import AuthorityTable
from memstream.services.domain.errors import DomainError
from memstream.services.domain.query import Candidate, ScoredResult
from memstream.services.domain.text import agreement, attribute_clash
from memstream.services.domain.yielding import CONFLICT, scaled, yield_to

DEMOTION = 0.5
LOW_OVERLAP = 0.35
SINGLE_VALUED_FACT_TYPES = frozenset(
    {
        "inventory",
        "stock",
        "price",
        "product_spec",
        "spec",
        "preference",
        "address",
        "policy",
        "profile",
        "availability",
        "compatibility",
    }
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# Records that comment on an entity's facts rather than hold them.
COMMENTARY_FACT_TYPES = frozenset({"review", "forum_post", "support_chat", "chat", "email"})
# Documents that state an entity's facts as of their date (a fact type with one of these parts).
DOCUMENT_PARTS = frozenset(
    {
        "datasheet",
        "sheet",
        "brochure",
        "manual",
        "leaflet",
        "launch",
        "announcement",
        "press",
        "doc",
    }
)
_UNITS = {
    "hour": "h",
    "hours": "h",
    "h": "h",
    "hrs": "h",
    "mah": "mah",
    "w": "w",
    "watt": "w",
    "watts": "w",
    "gb": "gb",
    "tb": "tb",
    "kg": "kg",
    "g": "g",
    "eur": "eur",
    "€": "eur",
    "inch": "inch",
    "mm": "mm",
    "days": "day",
    "day": "day",
    "year": "year",
    "years": "year",
    "年": "year",
    "个月": "month",
    "天": "day",
    "小时": "h",
    "瓦": "w",
    "毫安时": "mah",
    "英寸": "inch",
    "hz": "hz",
}
_QUANTITY = re.compile(
    r"(\d+(?:[.,]\d+)*)\s*-?\s*([a-z€]+|年|个月|天|小时|瓦|毫安时|英寸)", re.IGNORECASE
)


def quantities(text: str) -> dict[str, set[str]]:
    """unit → the values the text states in that unit ("lasts 20 hours" → {"h": {"20"}})."""
    found: dict[str, set[str]] = {}
    for value, unit in _QUANTITY.findall(text):
        canonical = _UNITS.get(unit.casefold())
        if canonical == "year" and re.fullmatch(r"(?:19|20|21)\d\d", value):
            continue  # a date ("2026年"), not a number of years
        if canonical:
            found.setdefault(canonical, set()).add(value.replace(",", ""))
    return found


def quantity_clash(left: str, right: str) -> bool:
    """Both state a quantity in one unit, with no value in common (12 h vs 20 h)."""
    a, b = quantities(left), quantities(right)
    return any(not (a[unit] & b[unit]) for unit in a.keys() & b.keys())


def aspect_clash(left: str, right: str) -> bool:
    """Both state one aspect with different values: a quantity in one unit (``quantity_clash``)
    or a port, none in common ("via Lightning" vs "USB-C")."""
    if quantity_clash(left, right):
        return True
    a = {x for x in attributes_in(left) if x.startswith("port:")}
    b = {x for x in attributes_in(right) if x.startswith("port:")}
    return bool(a and b and not a & b)


def _parts(fact_type: str) -> frozenset[str]:
    return frozenset(p for p in re.split(r"[\W_]+", fact_type.casefold()) if p)


@dataclass(frozen=True, slots=True)
class ArbitrationRules:
    demotion: float = DEMOTION
    low_overlap: float = LOW_OVERLAP
    single_valued: frozenset[str] = SINGLE_VALUED_FACT_TYPES

    def __post_init__(self) -> None:
        if not 0.0 <= self.demotion <= 1.0:
            raise DomainError(f"demotion must lie in [0, 1], got {self.demotion}")


DEFAULT_ARBITRATION = ArbitrationRules()


def _is_matter_id(key: str) -> bool:
    key = key.casefold()
    return key == "id" or key.endswith("_id")


def _split(attributes: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    ids = {k: v for k, v in attributes.items() if _is_matter_id(k)}
    rest = {k: v for k, v in attributes.items() if not _is_matter_id(k)}
    return ids, rest


def disagree(
    left: Candidate, right: Candidate, rules: ArbitrationRules = DEFAULT_ARBITRATION
) -> bool:
    """Whether two memories about the same entity and fact contradict each other (see above)."""
    left_ids, left_rest = _split(left.attributes)
    right_ids, right_rest = _split(right.attributes)
    if attribute_clash(left_ids, right_ids)[1]:
        return False  # two different matters
    same, differ = attribute_clash(left_rest, right_rest)
    if differ:
        return True
    if same:
        return False
    if left_rest and right_rest:
        return False  # different aspects of the entity
    if left.fact_type.casefold() not in rules.single_valued:
        return False
    if agreement(left.content, right.content) < rules.low_overlap:
        return True
    left_numbers = set(_NUMBER.findall(left.content))
    right_numbers = set(_NUMBER.findall(right.content))
    return bool(left_numbers and right_numbers and left_numbers != right_numbers)


def _subject(candidate: Candidate) -> tuple[str, str, str]:
    return (candidate.entity_type, candidate.entity_id, candidate.fact_type.casefold())


def arbitrate(
    results: Sequence[ScoredResult],
    authority: AuthorityTable,
    rules: ArbitrationRules = DEFAULT_ARBITRATION,
) -> list[ScoredResult]:
    """The results (same order) with ``conflicts_with`` filled and the losers demoted."""
    groups: dict[tuple[str, str, str], list[ScoredResult]] = {}
    for result in results:
        groups.setdefault(_subject(result.candidate), []).append(result)

    def priority(result: ScoredResult) -> tuple[float, float, str]:
        c = result.candidate
        # sorted ascending: higher authority first, then later occurred_at, then version_id.
        return (-authority.authority(c.source_system), -c.occurred_at.timestamp(), c.version_id)

    conflicts: dict[str, dict[str, None]] = {}
    losers: set[str] = set()

    def conflict(left: ScoredResult, right: ScoredResult) -> None:
        a, b = left.candidate, right.candidate
        conflicts.setdefault(a.version_id, {})[b.version_id] = None
        conflicts.setdefault(b.version_id, {})[a.version_id] = None
        losers.add(max((left, right), key=priority).candidate.version_id)

    def independent(a: Candidate, b: Candidate) -> bool:
        return (
            a.memory_key != b.memory_key
            and a.source_system.casefold() != b.source_system.casefold()
        )

    for group in groups.values():
        for i, left in enumerate(group):
            for right in group[i + 1 :]:
                a, b = left.candidate, right.candidate
                if independent(a, b) and disagree(a, b, rules):
                    conflict(left, right)
    # Commentary (a review, a forum post) about an entity contradicts the entity's own records
    # when it states one of their quantities with another value ("20 hours" vs "12 hours").
    for comment in results:
        c = comment.candidate
        if c.fact_type.casefold() not in COMMENTARY_FACT_TYPES:
            continue
        for record in results:
            r = record.candidate
            if (
                (r.entity_type, r.entity_id) == (c.entity_type, c.entity_id)
                and r.fact_type.casefold() in rules.single_valued
                and independent(c, r)
                and quantity_clash(c.content, r.content)
            ):
                conflict(comment, record)

    # A document (a launch datasheet) states an entity's facts as of its date: a later record of
    # the entity that states the same aspect with another value (another port, 67 W for 30 W)
    # supersedes it, whatever their sources.
    superseded: set[str] = set()
    superseding: set[str] = set()
    for doc in results:
        d = doc.candidate
        if not _parts(d.fact_type) & DOCUMENT_PARTS:
            continue
        for record in results:
            r = record.candidate
            if (
                (r.entity_type, r.entity_id) == (d.entity_type, d.entity_id)
                and r.memory_key != d.memory_key
                and r.occurred_at > d.occurred_at
                and not _parts(r.fact_type) & DOCUMENT_PARTS
                and r.fact_type.casefold() not in COMMENTARY_FACT_TYPES
                and aspect_clash(d.content, r.content)
            ):
                conflicts.setdefault(d.version_id, {})[r.version_id] = None
                conflicts.setdefault(r.version_id, {})[d.version_id] = None
                losers.add(d.version_id)
                superseded.add(d.version_id)
                superseding.add(r.version_id)

    arbitrated: list[ScoredResult] = []
    for result in results:
        version_id = result.candidate.version_id
        found = conflicts.get(version_id)
        if not found:
            arbitrated.append(result)
            continue
        listed = dict.fromkeys((*result.conflicts_with, *found))
        result = dataclasses.replace(result, conflicts_with=tuple(listed))
        if version_id in losers:
            result = scaled(result, CONFLICT, rules.demotion)
        arbitrated.append(result)
    return yield_to(
        arbitrated,
        CONFLICT,
        leads=lambda r: r.candidate.version_id in superseding,
        yields=lambda r: r.candidate.version_id in superseded,
        group=lambda r: (r.candidate.entity_type, r.candidate.entity_id),
        share=0.0,
    )
