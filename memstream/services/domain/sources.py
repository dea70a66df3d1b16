"""Sources: when several sources speak of one entity, the more authoritative one answers first.

The seed's ladder of sources — a system of record above an internal wiki above what a person
said above the open web; an official document above a press release above a user review — is
a ladder of *who to believe about the same thing*. Trust weighs authority with recency, so a
fresh chat message in which a customer says their warranty runs a year longer, or last week's
press release announcing a feature the official specification limits, outscores the older
record by its freshness alone. The rule (``sources_first``):

    a memory yields to a memory about the same entity (its entity_type and entity_id, or an
    entity either is anchored to: a review filed under its own id about product X) from a source
    at least ``AUTHORITY_GAP`` more authoritative whose relevance is at least
    ``RELEVANCE_SHARE`` (half) of its own, when the two hold the same kind of fact (the same
    fact type: two warranty records) or the yielding one is *commentary* — what someone said
    about the entity (a review, a forum post, a press release, a chat log, an email:
    ``COMMENTARY_FACT_TYPES``; or any record from such a source, ``COMMENTARY_SOURCES``: a forum
    post filed as a "spec" is still a forum post); not when the question asks what that kind of
    source says ("what do the reviews say", "what did I tell you in the chat", "论坛上怎么说").

Why the same entity: a review of another product, or another customer's record, says nothing
about this one. Why the same fact type or commentary: a customer's page views (browsing) and
orders (ERP) are different facts, not two accounts of one; ranking one by the other's source
would bury the view the question asks about. Why a gap: two systems of record a rung apart
(ERP and CRM) disagree through versions and arbitration, not through this rule. Why the
relevance share: a record that has little to do with the question must not bury the comment
that does. Conflicts the text makes explicit are also demoted by ``arbitration`` (the loser's
final × 0.5); this rule orders the rest, and both are recorded in the result's ``factors``. A
tenant whose trust profile gives authority no weight (its weight 0, or α = 0: relevance alone)
has no such rule (``ranking``).

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstream.services.domain.query import ScoredResult
from memstream.services.domain.reading import QuestionReading
from memstream.services.domain.yielding import AUTHORITY_GAP, RELEVANCE_SHARE, yielded

__all__ = ["AUTHORITY_GAP", "asked_source_kinds", "said_kind", "sources_first"]
SOURCES = "source"

# Fact types that record what someone said about an entity, and the words with which a
# question asks for that kind of source itself.
_SAID = {
    "review": ("review", "reviews", "reviewer", "rating", "ratings", "评价", "评论", "测评"),
    "forum": ("forum", "forums", "thread", "论坛", "帖子"),
    "press": ("press", "announcement", "announced", "launch event", "发布会", "新闻稿"),
    "chat": ("chat", "said", "say", "says", "told", "tell", "mentioned", "聊天", "说过", "提到"),
    "email": ("email", "e-mail", "mail", "邮件"),
}
COMMENTARY_FACT_TYPES = {
    "review": "review",
    "user_review": "review",
    "forum_post": "forum",
    "forum": "forum",
    "press_release": "press",
    "press": "press",
    "chat": "chat",
    "chat_log": "chat",
    "support_chat": "chat",
    "conversation": "chat",
    "email": "email",
}


def asked_source_kinds(text: str) -> frozenset[str]:
    """The kinds of source the question itself asks about."""
    lowered = text.casefold()
    kinds = set()
    for kind, words in _SAID.items():
        for word in words:
            if re.search(r"[\u3400-\u9fff]", word):
                found = word in lowered
            else:
                found = re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", lowered) is not None
            if found:
                kinds.add(kind)
                break
    return frozenset(kinds)


# Source systems whose every record is what someone said (whatever fact type it is filed as: a
# forum post filed as a "spec" is still a forum post); compound names by their parts.
COMMENTARY_SOURCES = {
    "review": "review", "reviews": "review", "forum": "forum", "forums": "forum",
    "community": "forum", "reddit": "forum", "blog": "forum", "social": "forum",
    "twitter": "forum", "press": "press", "chat": "chat", "email": "email",
}  # fmt: skip


def _parts(name: str) -> list[str]:
    return [p for p in re.split(r"[\W_]+", name.strip().casefold()) if p]


def said_kind(result: ScoredResult) -> str | None:
    """The kind of commentary a memory is, by its fact type or else its source system."""
    c = result.candidate
    kind = COMMENTARY_FACT_TYPES.get(c.fact_type.strip().casefold())
    if kind is not None:
        return kind
    return next(
        (COMMENTARY_SOURCES[p] for p in _parts(c.source_system) if p in COMMENTARY_SOURCES), None
    )


def _spoken_of(result: ScoredResult) -> set[tuple[str, str]]:
    """The entities a memory is about: its own and those it is anchored to."""
    c = result.candidate
    about = {(c.entity_type.strip().casefold(), c.entity_id)}
    about.update((a.type.strip().casefold(), a.id) for a in c.anchors)
    return about


def sources_first(results: Sequence[ScoredResult], reading: QuestionReading) -> list[ScoredResult]:
    """The rule of the module docstring (same order as given)."""
    asked = asked_source_kinds(reading.text)
    by_entity: dict[tuple[str, str], list[ScoredResult]] = {}
    for result in results:
        for key in _spoken_of(result):
            by_entity.setdefault(key, []).append(result)
    out: list[ScoredResult] = []
    for result in results:
        c = result.candidate
        said = said_kind(result)
        if said is not None and said in asked:
            out.append(result)
            continue
        peers = {id(r): r for key in _spoken_of(result) for r in by_entity.get(key, ())}
        finals = [
            r.scores.final
            for r in peers.values()
            if r is not result
            and r.scores.authority >= result.scores.authority + AUTHORITY_GAP
            and (said is not None or r.candidate.fact_type.casefold() == c.fact_type.casefold())
            and r.scores.fused >= RELEVANCE_SHARE * result.scores.fused
        ]
        out.append(yielded(result, min(finals), SOURCES) if finals else result)
    return out
