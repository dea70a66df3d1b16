"""Yielding: the rules that put one memory below another, each a factor inside ``final``.

A reply is served in the order of its ``final`` scores and nothing else, so every rule that
orders results beyond relevance and trust acts on ``final`` and says so in the result's
``factors`` (name → the multiplier it applied; ``final`` = relevance^(1−α) · trust^α × the
product of the factors). Two shapes:

- a **factor**: ``final`` times a constant (arbitration's demotion of a conflict's loser, 0.5);
- a **yield**: a memory that must not rank above some others (its *leaders*) is brought to
  ``YIELD_SHARE`` (0.9) × the lowest leader's final × (1 + its own final) / 2, when it stood
  higher. Below every leader, and in the same order among the memories that yield to the same
  leaders as their finals before (so decay still orders them: all else equal, the older one
  never ranks higher). A leader counts only when it is at least ``RELEVANCE_SHARE`` (half) as
  relevant as the memory that yields to it: a leader that has little to do with the question
  must not push a relevant memory down.

The rules here (the personal rule is in ``personal``, the matters rules in ``matters``):

- **attributes** (``attributes_first``): a question that names two or more attributes (colour,
  storage or capacity, port, model, size: ``attributes.attributes_in``; or any value of a
  candidate's attributes, as whole words: "obsidian" for ``colour: Obsidian``) — a memory
  that matches fewer of them (in its text or its attribute values) never ranks above one that
  matches the most (at least two). Why: "the blue
  256 GB one with USB-C" is answered by the one record that has all three; a fresher variant
  with two of them is another product, and a catalogue's variants differ in exactly these.
  A question naming one colour or capacity is enough for a memory that states *another*
  (and not the one asked: another variant) to yield to those stating it, at least half as
  relevant: "is the blue one in stock?" is not answered by the black one's stock. Not a
  memory from a source ``AUTHORITY_GAP`` more authoritative than every one matching the
  most: "does the X1 support USB-C?" names the attribute it asks about, and a forum post
  that repeats both words is not the answer over the official specification. Nor a memory
  that lost a conflict (``disputed``: a launch datasheet a later record superseded): it
  states the value asked, and is no longer true.
- **focus** (``focus_first``): when the conversation's context names entities in focus
  (``context.active_entities``, an order the user is talking about), a memory about none of
  them — not anchored to one and not naming its id — never ranks above a memory about one of
  them, unless the question names the memory's entity itself. A memory about another entity
  of a focused kind (another order, when an order is in focus) yields whatever its relevance;
  any other (a page, a view) only to focused memories at least ``RELEVANCE_SHARE`` as
  relevant as itself. Why: the follow-up "and the delivery?" does not repeat the order's
  number, and short follow-ups are where similarity says least; the agent said which order is
  meant, and the fresher shipment of another order is not the answer. This binds with or
  without an anaphor.
- **named id** (``named_first``): a question that names an id or a model ("AX-310",
  "O-145130", "CRM-8823": ``QuestionReading.named_ids``; or a model token among its attributes,
  "AX310" beside Chinese text) asks about that one: a memory about none of the ids named (not
  anchored to one, no attribute holding one, none in its text as a whole token, spelled with or
  without its hyphen; nor is its entity named by its whole name: every token of an entity id
  of two tokens or more, or with a digit — "Nexa R71 Graphite" — in the question) yields to
  the memories about one of them at least ``RELEVANCE_SHARE`` as relevant. Why: look-alike ids
  ("AX-130" for "AX-310", another customer's order number one digit off) share most of their
  characters and all of their words with the question; the id is the one thing that tells
  them apart, and it is exact.
- **look-alike** (``lookalike_first``): in a question about no user and no focus (a catalogue
  question), a memory about one entity whose words of the question are a strict part of those
  of a memory of the same fact type about a look-alike entity (``look_alike``: the ids share a
  part, or are numbered alike) yields to it, when that one is at least ``RELEVANCE_SHARE`` as
  relevant. Why: two variants of a product ("… Graphite" and
  "… Silver") share every word but the one that tells them apart; the question names that
  word, and the fresher stock of the other variant is not the answer however much decay
  favours it. Not with a user or a focus: there the question's subject decides, and a user's
  fresh view of other headphones is "the headphones I looked at last time" although an old
  view repeats more of the question's words. Not between entities that cannot be mistaken
  for one another: two people in a conversation ("Caroline", "Melanie") say different things,
  and the turn that repeats more of the question's words is not, for that, the other one's
  better version (LoCoMo, questions naming neither or both speakers: recall@5 of categories 1–4
  0.618 → 0.621 with the same candidates).

The rules of time a question asks (latest / earliest, a named period) are in ``timely``.

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Hashable, Sequence

from memstream.services.domain.attributes import attributes_in
from memstream.services.domain.lexicon import content_terms
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import Candidate, ScoredResult
from memstream.services.domain.reading import QuestionReading
from memstream.services.domain.text import look_alike, name_in, name_tokens

RELEVANCE_SHARE = 0.5
YIELD_SHARE = 0.9
AUTHORITY_GAP = 0.1  # a source this much more authoritative is a rung above (``sources``)
MIN_ATTRIBUTES = 2

ATTRIBUTES = "attributes"
CONFLICT = "conflict"  # arbitration's factor on a conflict's loser


def disputed(result: ScoredResult) -> bool:
    """Whether a memory lost a conflict (``arbitration``): it leads no other memory down."""
    return any(name == CONFLICT for name, _ in result.factors)


FOCUS = "focus"
NAMED = "named id"


def scaled(result: ScoredResult, name: str, factor: float) -> ScoredResult:
    """``result`` with its final multiplied by ``factor``, recorded as ``name``."""
    scores = dataclasses.replace(result.scores, final=result.scores.final * factor)
    return dataclasses.replace(result, scores=scores, factors=(*result.factors, (name, factor)))


def yielded(result: ScoredResult, ceiling: float, name: str) -> ScoredResult:
    """``result`` placed below ``ceiling`` (the lowest final of its leaders), order kept."""
    final = result.scores.final
    target = YIELD_SHARE * ceiling * (1.0 + final) / 2.0
    if final <= target:
        return result
    placed = scaled(result, name, target / final if final > 0 else 0.0)
    # exactly the target: final × (target / final) can round above it and tie with a leader
    return dataclasses.replace(placed, scores=dataclasses.replace(placed.scores, final=target))


def yield_to(
    results: Sequence[ScoredResult],
    name: str,
    leads: Callable[[ScoredResult], bool],
    yields: Callable[[ScoredResult], bool],
    group: Callable[[ScoredResult], Hashable] = lambda r: (),
    share: float = RELEVANCE_SHARE,
) -> list[ScoredResult]:
    """Each result that ``yields`` placed below the results of its group that ``leads`` and are
    at least ``share`` (default ``RELEVANCE_SHARE``) as relevant as it (same order as given)."""
    leaders: dict[Hashable, list[ScoredResult]] = {}
    for result in results:
        if leads(result):
            leaders.setdefault(group(result), []).append(result)
    if not leaders:
        return list(results)
    out: list[ScoredResult] = []
    for result in results:
        if yields(result):
            finals = [
                r.scores.final
                for r in leaders.get(group(result), [])
                if r is not result and r.scores.fused >= share * result.scores.fused
            ]
            if finals:
                result = yielded(result, min(finals), name)
        out.append(result)
    return out


# --- attributes ------------------------------------------------------------------------------


def described(candidate: Candidate) -> str:
    """What a memory says about itself: its content and its attribute values."""
    return " ".join((candidate.content, *candidate.attributes.values()))


def _value_pattern(value: str) -> re.Pattern[str] | None:
    """A pattern that finds an attribute value as whole words (CJK: as a substring)."""
    words = value.split()
    if not words or len(value) > 40:
        return None
    if len(value) < 3 and not re.search(r"[\u3400-\u9fff]", value):
        return None  # "M", "xl", "2": too short to tell in running text
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])", re.IGNORECASE)


def _named_values(results: Sequence[ScoredResult], text: str) -> dict[str, re.Pattern[str]]:
    """Attribute values of the candidates that the question names ("obsidian" for a phone
    whose ``colour`` is "Obsidian"), beyond the canonical ones (``attributes.attributes_in``)."""
    named: dict[str, re.Pattern[str]] = {}
    for result in results:
        for key, value in result.candidate.attributes.items():
            folded = value.strip().casefold()
            if folded in named or key.casefold() == "id" or key.casefold().endswith("_id"):
                continue
            if attributes_in(value) or not content_terms(value):
                continue  # found canonically already, or a common word ("yes", "new")
            pattern = _value_pattern(value.strip())
            if pattern is not None and pattern.search(text):
                named[folded] = pattern
    return named


_VARIANT_DIMENSIONS = ("colour:", "qty:")  # what tells a product's variants apart


def _other_variant(results: Sequence[ScoredResult], asked: frozenset[str]) -> list[ScoredResult]:
    """A memory that states another value of a dimension the question names (another colour,
    another capacity) and not the value asked yields to those stating it."""
    out = list(results)
    for dimension in _VARIANT_DIMENSIONS:
        wanted = frozenset(a for a in asked if a.startswith(dimension))
        if wanted:
            out = _variant_first(out, dimension, wanted)
    return out


def _variant_first(
    results: list[ScoredResult], dimension: str, wanted: frozenset[str]
) -> list[ScoredResult]:
    stated = {
        r.candidate.version_id: {
            a for a in attributes_in(described(r.candidate)) if a.startswith(dimension)
        }
        for r in results
    }
    leaders = [r for r in results if stated[r.candidate.version_id] & wanted and not disputed(r)]
    if not leaders:
        return results
    standing = max(r.scores.authority for r in leaders)

    def leads(r: ScoredResult) -> bool:
        return bool(stated[r.candidate.version_id] & wanted) and not disputed(r)

    def yields(r: ScoredResult) -> bool:
        said = stated[r.candidate.version_id]
        return bool(said) and not said & wanted and r.scores.authority < standing + AUTHORITY_GAP

    return yield_to(results, ATTRIBUTES, leads=leads, yields=yields)


def attributes_first(
    results: Sequence[ScoredResult], reading: QuestionReading
) -> list[ScoredResult]:
    """The attributes rule of the module docstring."""
    results = _other_variant(results, reading.attributes)
    values = _named_values(results, reading.text)
    if len(reading.attributes) + len(values) < MIN_ATTRIBUTES:
        return list(results)

    def matches(candidate: Candidate) -> int:
        said = described(candidate)
        canonical = len(reading.attributes & attributes_in(said))
        return canonical + sum(1 for p in values.values() if p.search(said))

    matched = {r.candidate.version_id: matches(r.candidate) for r in results}
    most = max(matched.values(), default=0)
    if most < MIN_ATTRIBUTES:
        return list(results)
    standing = max(r.scores.authority for r in results if matched[r.candidate.version_id] == most)
    return yield_to(
        results,
        ATTRIBUTES,
        leads=lambda r: matched[r.candidate.version_id] == most and not disputed(r),
        yields=lambda r: (
            matched[r.candidate.version_id] < most and r.scores.authority < standing + AUTHORITY_GAP
        ),
    )


# --- focus -----------------------------------------------------------------------------------


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _names(candidate: Candidate, anchor: Anchor) -> bool:
    """Whether a memory is about ``anchor``: anchored to it, an attribute holding its id, or
    its id in the text as a whole token."""
    wanted = _squash(anchor.id)
    if not wanted:
        return False
    if any(_squash(own.id) == wanted for own in candidate.anchors):
        return True
    if any(_squash(value) == wanted for value in candidate.attributes.values()):
        return True
    pattern = rf"(?<![A-Za-z0-9]){re.escape(anchor.id.strip())}(?![A-Za-z0-9])"
    return re.search(pattern, candidate.content, re.IGNORECASE) is not None


def about_focus(candidate: Candidate, focus: Sequence[Anchor]) -> bool:
    return any(_names(candidate, anchor) for anchor in focus)


def _named_in_question(candidate: Candidate, reading: QuestionReading) -> bool:
    named = {_squash(term) for term in reading.named_ids}
    return any(_squash(a.id) in named for a in candidate.anchors)


def _of_a_focused_kind(candidate: Candidate, focus: Sequence[Anchor]) -> bool:
    kinds = {a.type.strip().casefold() for a in focus}
    return any(a.type.strip().casefold() in kinds for a in candidate.anchors)


def focus_first(results: Sequence[ScoredResult], reading: QuestionReading) -> list[ScoredResult]:
    """The focus rule of the module docstring."""
    focus = tuple(a for a in reading.focus if a.type.strip().casefold() not in ("user", "customer"))
    if not focus:
        return list(results)
    bound = {r.candidate.version_id for r in results if about_focus(r.candidate, focus)}

    def outside(result: ScoredResult) -> bool:
        c = result.candidate
        return c.version_id not in bound and not _named_in_question(c, reading)

    def leads(result: ScoredResult) -> bool:
        return result.candidate.version_id in bound

    # Another order when an order is in focus: below the focused one, however it is worded.
    out = yield_to(
        results,
        FOCUS,
        leads=leads,
        yields=lambda r: outside(r) and _of_a_focused_kind(r.candidate, focus),
        share=0.0,
    )
    return yield_to(
        out,
        FOCUS,
        leads=leads,
        yields=lambda r: outside(r) and not _of_a_focused_kind(r.candidate, focus),
    )


def _models(candidate: Candidate) -> frozenset[str]:
    return frozenset(a[6:] for a in attributes_in(described(candidate)) if a.startswith("model:"))


def entity_named(candidate: Candidate, text: str) -> bool:
    """Whether the question names the memory's entity by its whole name: every token of its
    entity id ("Nexa R71 Graphite") is in the question (``text.name_in``), for a name of two
    tokens or more or with a digit — a single word ("kettle") is no name."""
    tokens = name_tokens(candidate.entity_id)
    if not tokens or (len(tokens) < 2 and not any(ch.isdigit() for ch in candidate.entity_id)):
        return False
    return name_in(tokens, text)


def about_named(candidate: Candidate, reading: QuestionReading) -> bool:
    """Whether a memory is about an id, model or entity the question names (the named-id
    rule)."""
    named = tuple(Anchor("", term) for term in reading.named_ids)
    models = frozenset(a[6:] for a in reading.attributes if a.startswith("model:"))
    return (
        about_focus(candidate, named)
        or bool(models and models & _models(candidate))
        or entity_named(candidate, reading.text)
    )


def named_first(results: Sequence[ScoredResult], reading: QuestionReading) -> list[ScoredResult]:
    """The named-id rule of the module docstring."""
    about = {r.candidate.version_id for r in results if about_named(r.candidate, reading)}
    if not about:
        return list(results)
    return yield_to(
        results,
        NAMED,
        leads=lambda r: r.candidate.version_id in about,
        yields=lambda r: r.candidate.version_id not in about,
    )


LOOKALIKE = "look-alike"


def lookalike_first(
    results: Sequence[ScoredResult], reading: QuestionReading, subject: bool
) -> list[ScoredResult]:
    """The look-alike rule of the module docstring; ``subject``: the request has a user or a
    focus (then the rule does not apply)."""
    if subject or len(results) < 2:
        return list(results)
    asked = content_terms(reading.text)
    said = [asked & content_terms(described(r.candidate)) for r in results]
    # Compared within a fact type only (pairs of one fact type, not every pair of results), and
    # only with a candidate that repeats more of the question's words (a strict superset).
    kinds: dict[str, list[int]] = {}
    for n, r in enumerate(results):
        kinds.setdefault(r.candidate.fact_type.casefold(), []).append(n)
    out = list(results)
    for members in kinds.values():
        for n in members:
            result, mine = results[n], said[n]
            c = result.candidate
            finals = [
                results[k].scores.final
                for k in members
                if mine < said[k]
                and results[k].scores.fused >= RELEVANCE_SHARE * result.scores.fused
                and (results[k].candidate.entity_type, results[k].candidate.entity_id)
                != (c.entity_type, c.entity_id)
                and look_alike(results[k].candidate.entity_id, c.entity_id)
            ]
            if finals:
                out[n] = yielded(result, min(finals), LOOKALIKE)
    return out
