"""Personal questions: the asking user's own memories come before memories about no one.

A request is *personal* when it carries a ``user_id`` and its query is about the speaker
(``lexicon.about_the_speaker``: "what did I buy?", "the jug I looked at", "my complaint",
"我上次买的"; not "can I pay by card?" or "tell me about the XR-500", which ask for general
information). In a personal request:

- a memory bound to the user (binding ``exact`` or ``fuzzy``) keeps its binding;
- a memory bound to no one of the request's kinds but anchored to an entity that one of the
  user's own memories (among the candidates) is anchored to — the order or product they
  bought — is bound *through the user*: kind ``user_entity``, score 0.5 (what ``neutral``
  scored before: it is about the user's thing, not the user);
- any other memory bound to no one (a catalogue, FAQ or policy page about nothing of the
  user's) is ``unbound``: score 0.01 (the trust floor) instead of 0.5;
- **precedence**: a memory bound to the user or to the user's entities whose relevance is at
  least ``PERSONAL_RELEVANCE_SHARE`` (half) of the best relevance among the candidates ranks
  above every unbound memory, whatever their final scores; within each tier, final decides.

Why a precedence and not only a lower binding score: an unbound page can be fresher, from a
more authoritative source and share more words with the question than the user's own record
(a clickstream event, authority 0.5, against a catalogue page, 0.95); no fixed weight keeps
the person first in every such mix. Why the relevance share: a user memory that has little to
do with the question (half as relevant as the best candidate, or less) must not push a
relevant page down merely for being the user's. A reader checks the rule on a reply with each
result's ``binding_kind`` and ``scores.fused``.
Pure. Must not import any I/O library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memstream.services.domain.lexicon import about_the_speaker
from memstream.services.domain.model import Anchor
from memstream.services.domain.query import USER_ANCHOR_TYPE, Candidate, RetrievalRequest
from memstream.services.domain.trust import TRUST_FLOOR, Binding

PERSONAL_RELEVANCE_SHARE = 0.5
USERS_ENTITY = Binding("user_entity", 0.5)
UNBOUND = Binding("unbound", TRUST_FLOOR)
_BOUND_KINDS = frozenset({"exact", "fuzzy", USERS_ENTITY.kind})
_PERSON_TYPES = frozenset({"customer", "user"})


def _key(anchor: Anchor) -> tuple[str, str]:
    kind = anchor.type.strip().casefold()
    return ("customer" if kind == "user" else kind), anchor.id


def is_personal(request: RetrievalRequest) -> bool:
    """A user_id and a question about the speaker (see the module docstring)."""
    return request.user_id is not None and about_the_speaker(request.query)


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


def precedence(binding_kind: str, relevance: float, best_relevance: float) -> int:
    """1 for a memory bound to the user (or their entity) that is relevant enough, else 0."""
    relevant = relevance >= PERSONAL_RELEVANCE_SHARE * best_relevance
    return 1 if binding_kind in _BOUND_KINDS and relevant else 0
