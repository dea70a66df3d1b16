"""Personal questions: the asking user's own memories come before memories about no one.

A request is *personal* when it carries a ``user_id`` and its query is about the speaker
(``QuestionReading.personal``, from ``lexicon.about_the_speaker``: "what did I buy?", "the jug
I looked at", "my complaint", "我上次买的"; not "can I pay by card?" or "tell me about the
XR-500", which ask for general information). In a personal request:

- a memory bound to the user (binding ``exact`` or ``fuzzy``) keeps its binding;
- a memory bound to no one of the request's kinds but anchored to an entity that one of the
  user's own memories (among the candidates) is anchored to — the order or product they
  bought — is bound *through the user*: kind ``user_entity``, score 0.5 (what ``neutral``
  scored before: it is about the user's thing, not the user);
- any other memory bound to no one (a catalogue, FAQ or policy page about nothing of the
  user's) is ``unbound``: score 0.01 (the trust floor) instead of 0.5;
- **the person first** (``person_first``): an unbound memory never ranks above a memory bound
  to the user or to the user's entities that is at least ``RELEVANCE_SHARE`` (half) as
  relevant as itself: it *yields* to them (``yielding``: its final is brought just below the
  lowest of theirs, recorded in its ``factors`` as ``personal``); and a memory about no person
  at all, of a fact type of which the user has a record of their own among the results (a
  page view logged without a user, beside the user's own page views), yields to those records
  of the user whatever its relevance: "the headphones I looked at" are among the user's views,
  not an anonymous one, however close its words. Memories bound to the user
  are ordered among themselves by their finals alone: a fresh view of the user's headphones
  that is half as relevant as a three-year-old one still ranks first when decay says so.

Why a rule and not only a lower binding score: an unbound page can be fresher, from a more
authoritative source and share more words with the question than the user's own record (a
clickstream event, authority 0.5, against a catalogue page, 0.95); no fixed weight keeps the
person first in every such mix. Why the relevance share: a user memory that has little to do
with the question (half as relevant as the page, or less) must not push a relevant page down
merely for being the user's. A reader checks the rule on a reply with each result's
``binding_kind``, ``scores.fused`` and ``scores.final``; the served order is the finals' order.
Pure. Must not import any I/O library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memstream.services.domain.model import Anchor
from memstream.services.domain.query import USER_ANCHOR_TYPE, Candidate, ScoredResult
from memstream.services.domain.trust import TRUST_FLOOR, Binding
from memstream.services.domain.yielding import RELEVANCE_SHARE, yield_to

PERSONAL_RELEVANCE_SHARE = RELEVANCE_SHARE
PERSONAL = "personal"
USERS_ENTITY = Binding("user_entity", 0.5)
UNBOUND = Binding("unbound", TRUST_FLOOR)
_OWN_KINDS = frozenset({"exact", "fuzzy"})
_BOUND_KINDS = _OWN_KINDS | {USERS_ENTITY.kind}
_PERSON_TYPES = frozenset({"customer", "user"})


def _key(anchor: Anchor) -> tuple[str, str]:
    kind = anchor.type.strip().casefold()
    return ("customer" if kind == "user" else kind), anchor.id


def user_entities(candidates: Iterable[Candidate], user_id: str) -> frozenset[tuple[str, str]]:
    """(type, id) of every non-person entity the user's own memories are anchored to."""
    user = _key(Anchor(USER_ANCHOR_TYPE, user_id))
    found: set[tuple[str, str]] = set()
    for candidate in candidates:
        keys = {_key(a) for a in candidate.anchors}
        if user in keys:
            found.update(k for k in keys if k[0] not in _PERSON_TYPES)
    return frozenset(found)


def personal_binding(
    anchors: Sequence[Anchor], binding: Binding, entities: frozenset[tuple[str, str]]
) -> Binding:
    """The binding in a personal request: ``neutral`` becomes ``user_entity`` or ``unbound``."""
    if binding.kind != "neutral":
        return binding
    if any(_key(a) in entities for a in anchors):
        return USERS_ENTITY
    return UNBOUND


def _no_person(candidate: Candidate) -> bool:
    return not any(a.type.strip().casefold() in _PERSON_TYPES for a in candidate.anchors)


def person_first(results: Sequence[ScoredResult]) -> list[ScoredResult]:
    """The person-first rule of the module docstring (same order as given)."""
    mine = {
        r.candidate.fact_type.strip().casefold() for r in results if r.binding_kind in _OWN_KINDS
    }
    out = yield_to(  # a record of the user's own kind, about no one: below the user's own
        results,
        PERSONAL,
        leads=lambda r: r.binding_kind in _OWN_KINDS,
        yields=lambda r: (
            r.binding_kind == UNBOUND.kind
            and _no_person(r.candidate)
            and r.candidate.fact_type.strip().casefold() in mine
        ),
        group=lambda r: r.candidate.fact_type.strip().casefold(),
        share=0.0,
    )
    return yield_to(
        out,
        PERSONAL,
        leads=lambda r: r.binding_kind in _BOUND_KINDS,
        yields=lambda r: r.binding_kind == UNBOUND.kind,
    )
