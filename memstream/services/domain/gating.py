"""Gating: whether a request should be answered from memory at all, and why.

In order:

1. ``force`` always passes ("forced").
2. A strong cue in the query (``lexicon.find_cues``: time words "yesterday"/"上次",
   possessives "my"/"我的", state verbs "returned"/"退货", an entity id "XR-500") or in the
   request (a time window, a past as_of / known_at) passes, as does conversation context
   (active entities, an active task: an agent in the middle of a task is asking about it),
   whatever the load. A possessive is strong only when it governs a record kind
   (``possession.possesses_record``: "my order", "our booking", "我的快递"); one that governs
   anything else ("my teacher says", "in my opinion", "我的建议是") is weak, does not make the
   question "about the speaker", and does not keep small talk or an instruction from being
   skipped — the asker's own memory (6a) still answers "what did my wife ask for" when it
   holds "wife".
3. With a ``user_id``, a question naming a kind of record a transaction leaves ("refund
   done?", "快递到哪了": ``possession.transaction_named``) is about the user's records: it
   passes, even when it is phrased as an explanation or an opinion request.
4. Talk that needs no memory by its form (``lexicon.chatter``: small talk, arithmetic, an
   instruction to the agent, a general explanation, a request for the agent's opinion:
   ``talk_forms``; an explanation or opinion asked about an anchored entity is not talk) is
   skipped — an instruction that says "my" is looked at instead
   ("summarize my complaints" may be about the user's records); a question about the
   speaker or about "the user" with a ``user_id`` (``lexicon.about_the_speaker`` and
   ``about_the_user``: "what music do I like?", "what does the user want now?") passes.
5. Under high load (≥ 0.9) nothing else passes: a look at memory costs a retrieval.
6. Otherwise — no cue, or only weak ones ("it", "I", "when", a colour or a number) — memory is
   looked at (``probe``), the asker's own memory first:

   a. *Own memory* (``OwnEvidence``; only with a ``user_id`` or anchors): the memories
      anchored to the user (``customer:<id>`` / ``user:<id>``) or to an entity the request
      names. The question is answered when one of its content words (``own_terms``: not a
      common question word; English words by their stem, so "return" finds "returned";
      Chinese by two-character grams) is held by one of those memories, or when the nearest
      of them is at least ``OWN_NEAR`` similar (``similarity_speaks``: not for a question
      written only in Chinese, which the bundled English encoder cannot compare). The bar
      is lower than the tenant's ``NEAR`` because the candidates are the asker's own few
      records, not the whole tenant: a terse question about one's own parcel ("when will
      the package get here") shares no word with "Shipment handed to the courier; expected
      drop-off Thursday" and is only 0.3-0.4 similar to it, while nothing else of the
      tenant competes. Beyond ``OWN_BROAD`` memories (a long conversation's turns, not a
      person's records) the question's everyday words are held by chance ("world",
      "point", "stand" among a speaker's 300 turns): there a held word does not decide
      alone and the similarity bar is the tenant's ``NEAR``. Only the asker's own memories
      count here — another user's or
      tenant's never do — and the reason names only words of the question and counts of
      the asker's memories ("the user's memory holds 'return' (3 memories); nearest 0.21").
   b. *Tenant memory* (``MemoryEvidence``): the handler retrieves; the question is answered
      when it names something the tenant's memory holds (a word of the question, not a
      common one, found in the memories retrieved, with those memories at least
      ``NAMED_NEAR`` similar — ``OWN_NEAR`` when it is a single word of three or more terms:
      one everyday word of a long question is found in a broad conversation by chance) or
      when the nearest memory is close (cosine ≥ ``NEAR``; not for
      a question written only in Chinese: ``similarity_speaks``); else it is skipped with both
      nearest similarities in the reason. An answer's reason says
      which terms are held, how many of the question's terms that is, and the nearest
      similarity ("names 'blender', 'motor' in memory (2 of 3 terms, nearest 0.31)").

   A false skip costs more than a wasted retrieval (the agent answers from nothing,
   confidently), so a question is skipped only when neither look found anything related.

Every skip reason ends with how to force (``FORCE_HINT``).
Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.lexicon import (
    ARITHMETIC,
    CONTEXT,
    ENTITY_ID,
    EXACT_ATTRIBUTE,
    EXPLICIT_TIME,
    INSTRUCTION,
    POSSESSIVE,
    Cue,
    about_the_speaker,
    about_the_user,
    content_terms,
)
from memstream.services.domain.possession import (
    bare_possessive,
    transaction_named,
    without_possessives,
)
from memstream.services.domain.query import PERSON_ANCHOR_TYPES, RetrievalRequest
from memstream.services.domain.reading import QuestionReading, read_question
from memstream.services.domain.talk_forms import EXPLANATION, OPINION

HIGH_LOAD = 0.9
# Cosine similarity (the bundled MiniLM) of the question and its nearest memory above which a
# question is about what memory holds, and the lower bar when it also names a held term.
NEAR = 0.45
NAMED_NEAR = 0.10
# The same for the asker's own memories (see the module docstring, 6a), and the number of
# them beyond which they are a broad record (a long conversation) where words match by chance.
OWN_NEAR = 0.25
OWN_BROAD = 100
LONE_WORD_OF = 3  # a single held word of this many question terms needs OWN_NEAR similarity
FORCE_HINT = "send force=true to retrieve anyway"
GENERIC = "no memory cue: generic question"


def _request_cues(request: RetrievalRequest, now: datetime) -> list[Cue]:
    cues: list[Cue] = []
    if request.time_window is not None:
        cues.append(Cue(EXPLICIT_TIME, "time_window", True))
    # An as_of / known_at before now asks about the past; one at now asks nothing of history.
    if request.as_of is not None and request.as_of < now:
        cues.append(Cue(EXPLICIT_TIME, "as_of", True))
    if request.known_at is not None and request.known_at < now:
        cues.append(Cue(EXPLICIT_TIME, "known_at", True))
    # Conversation context: the agent is in the middle of something the question is about.
    if request.active_entities:
        cues.append(Cue(CONTEXT, f"{len(request.active_entities)} active entities", True))
    if request.active_task:
        cues.append(Cue(CONTEXT, "active task", True))
    return cues


def own_anchors(request: RetrievalRequest) -> tuple[str, ...]:
    """The anchors ("type:id") whose memories are the asker's own: the request's anchors
    (the ``user_id`` is among them as ``customer:<id>``) and, for the ``user_id``, the same
    person as a ``user`` entity. Empty without a user or anchors."""
    found = [f"{a.type}:{a.id}" for a in request.anchors]
    if request.user_id is not None:
        found += [f"{kind}:{request.user_id}" for kind in sorted(PERSON_ANCHOR_TYPES)]
    return tuple(dict.fromkeys(found))


def own_terms(query: str) -> tuple[str, ...]:
    """The question's content words looked for in the asker's own memories (sorted)."""
    return tuple(sorted(content_terms(query)))


def similarity_speaks(query: str) -> bool:
    """Whether the embedding's similarity is evidence for this question in rule 6: not for a
    question whose content words are all Chinese. The bundled encoder (all-MiniLM-L6-v2) was
    trained on English text; with it, two unrelated texts written in Chinese are 0.3-0.7
    similar, as similar as related ones, so there only the question's words (its CJK
    grams) are evidence."""
    terms = content_terms(query)
    return any(t.isascii() for t in terms) or all(t.isascii() for t in terms)


@dataclass(frozen=True, slots=True)
class OwnEvidence:
    """What a look at the asker's own memories found: for each content term of the question
    that they hold, how many of them hold it; the best cosine similarity of the question
    with one of them (0 when there are none); how many there are (``memories``). ``whose``
    names them in the reason."""

    held: tuple[tuple[str, int], ...]
    nearest: float
    whose: str = "the user's memory"
    memories: int = 0

    @property
    def broad(self) -> bool:
        """More than ``OWN_BROAD`` memories: a long conversation, not a person's records."""
        return self.memories > OWN_BROAD

    def decides(self, query: str) -> bool:
        """Rule 6a: a held word, or the nearest memory close enough (``OWN_NEAR``; for a
        broad memory the tenant's ``NEAR``, and words alone do not decide)."""
        if self.broad:
            return self.nearest >= NEAR and similarity_speaks(query)
        return bool(self.held) or (self.nearest >= OWN_NEAR and similarity_speaks(query))

    def describe(self) -> str:
        if self.held:
            terms = ", ".join(
                f"{term!r} ({n} {'memory' if n == 1 else 'memories'})" for term, n in self.held[:3]
            )
            return f"{self.whose} holds {terms}; nearest {self.nearest:.2f}"
        bar = NEAR if self.broad else OWN_NEAR
        return f"{self.whose}: nearest {self.nearest:.2f} ≥ {bar}"

    def falls_short(self, query: str) -> str:
        """Why this look did not decide, for a skip's reason."""
        if not similarity_speaks(query):
            bar = "(not used: no Latin word)"
        else:
            bar = f"< {NEAR if self.broad else OWN_NEAR}"
        words = f"{len(self.held)} words held of {self.memories} memories, not decisive"
        held = words if self.broad and self.held else "no word held"
        return f"{self.whose}: {held}, nearest {self.nearest:.2f} {bar}"


def own_evidence(
    counts: Mapping[str, int], nearest: float, request: RetrievalRequest, memories: int = 0
) -> OwnEvidence:
    """``OwnEvidence`` from the number of the asker's memories holding each term (terms held
    by none are dropped; most held first), the nearest similarity among them and how many
    they are."""
    held = sorted(((t, n) for t, n in counts.items() if n > 0), key=lambda tn: (-tn[1], tn[0]))
    whose = "the user's memory" if request.user_id is not None else "the anchored entities' memory"
    return OwnEvidence(tuple(held), nearest, whose, memories)


@dataclass(frozen=True, slots=True)
class MemoryEvidence:
    """What a look at the tenant's memory found: the best cosine similarity of the question
    with a memory, and the question's terms that the memories found contain."""

    nearest: float
    named: tuple[str, ...] = ()
    asked: int = 0  # the question's content terms


def evidence_from(query: str, found: Iterable[tuple[float, str]]) -> MemoryEvidence:
    """Evidence from (cosine, content) of the memories a retrieval found."""
    wanted = content_terms(query)
    nearest = 0.0
    held: set[str] = set()
    for similarity, content in found:
        nearest = max(nearest, similarity)
        held |= wanted & content_terms(content)
    return MemoryEvidence(nearest, tuple(sorted(held)), len(wanted))


def _named_bar(evidence: MemoryEvidence, query: str) -> float:
    """How similar the memories must be for held words to decide: ``NAMED_NEAR``, or
    ``OWN_NEAR`` when a single word of three or more is held — one everyday word of a long
    question ("second" in "when did the Second World War end?") is found in any broad
    conversation by chance. Not for a question in Chinese only: its terms are character
    pairs, and similarity says nothing there (``similarity_speaks``)."""
    if len(evidence.named) == 1 and evidence.asked >= LONE_WORD_OF and similarity_speaks(query):
        return OWN_NEAR
    return NAMED_NEAR


@dataclass(frozen=True, slots=True)
class GateDecision:
    """``needs_memory``: answer from memory; ``probe``: look at memory before deciding."""

    needs_memory: bool
    reason: str
    probe: bool = False


def _in_form(cue: Cue, talk: tuple[str, str] | None) -> Cue:
    """A cue as the form of the talk leaves it: a number inside a sum ("795x47") is no id, and
    "my" in an instruction ("correct the grammar in my sentence") may mean the conversation's
    text, not the user's records: weak, so memory decides."""
    if talk is None:
        return cue
    kind, text = talk
    if kind == ARITHMETIC and cue.kind in (ENTITY_ID, EXACT_ATTRIBUTE) and cue.text in text:
        return Cue(cue.kind, cue.text, False)
    if kind == INSTRUCTION and cue.kind == POSSESSIVE:
        return Cue(cue.kind, cue.text, False)
    return cue


def _possessing(cue: Cue, bare: bool) -> Cue:
    """Rule 2: a possessive that governs no record kind ("my teacher says", "in my opinion",
    "我的建议是") is the speaker talking, not a pointer at records: weak, so memory decides."""
    if bare and cue.kind == POSSESSIVE:
        return Cue(cue.kind, cue.text, False)
    return cue


def _skip(reason: str) -> GateDecision:
    return GateDecision(False, f"{reason}; {FORCE_HINT}")


def gate(
    request: RetrievalRequest,
    now: datetime,
    load: float = 0.0,
    evidence: MemoryEvidence | None = None,
    own: OwnEvidence | None = None,
    reading: QuestionReading | None = None,
) -> GateDecision:
    """Decide whether to answer from memory (see the module docstring for the order).

    ``load`` is the service's load in [0, 1]. A question that needs a look at memory comes
    back with ``probe`` set (and ``needs_memory`` false) until ``own`` (the asker's own
    memories) answers it or ``evidence`` (the tenant's) is given. ``reading`` is the question
    read once at the entry (``reading.read_question``; read here when absent).
    """
    if request.force:
        return GateDecision(True, "forced")
    if reading is None:
        reading = read_question(request)
    talk = reading.talk
    bare = bare_possessive(request.query)
    text_cues = tuple(_possessing(_in_form(cue, talk), bare) for cue in reading.cues)
    context = _request_cues(request, now)
    strong = [cue for cue in (*text_cues, *context) if cue.strong]
    if strong:
        return GateDecision(True, strong[0].describe())
    kind = transaction_named(request.query) if request.user_id is not None else None
    # "how do refunds work?": an explanation of a kind of record, asked of no one's, is talk
    general = (
        talk is not None
        and talk[0] == EXPLANATION
        and not (reading.about_speaker or reading.about_user)
        and not any(cue.kind == POSSESSIVE for cue in reading.cues)
    )
    if kind is not None and not general and (talk is None or talk[0] in (EXPLANATION, OPINION)):
        return GateDecision(True, f"names a kind of the user's records {kind!r}")
    # An explanation about an entity the agent anchored ("how does it work?" about the XR-500)
    # asks about that entity; the asker's own anchor (their user id) names no such thing.
    entities = [
        a
        for a in request.anchors
        if not (a.type.strip().casefold() in PERSON_ANCHOR_TYPES and a.id == request.user_id)
    ]
    about_entity = talk is not None and talk[0] in (EXPLANATION, OPINION) and bool(entities)
    possessed = any(cue.kind == POSSESSIVE for cue in text_cues)
    if talk is not None and not about_entity and (bare or not possessed):
        return _skip(f"{talk[0]} '{talk[1]}'")
    if bare:  # "my advice …": the possessive says nothing about the user; read the rest
        speaker = without_possessives(request.query)
        about = about_the_speaker(speaker) or about_the_user(speaker)
    else:
        about = reading.about_speaker or reading.about_user
    if request.user_id is not None and about:
        return GateDecision(True, f"about the user {request.user_id!r}")
    weak = [*text_cues, *context]
    if load >= HIGH_LOAD:
        if weak:
            return _skip(f"high load {load:.2f}: only weak cue {weak[0].describe()}")
        return _skip(f"high load {load:.2f}: {GENERIC}")
    if own is not None and own.decides(request.query):
        return GateDecision(True, own.describe())
    if evidence is None:
        return GateDecision(False, "no strong cue: look at memory", probe=True)
    if evidence.named and evidence.nearest >= _named_bar(evidence, request.query):
        return GateDecision(
            True,
            f"names {', '.join(map(repr, evidence.named[:3]))} in memory"
            f" ({len(evidence.named)} of {evidence.asked} terms, nearest {evidence.nearest:.2f})",
        )
    speaks = similarity_speaks(request.query)
    if evidence.nearest >= NEAR and speaks:
        return GateDecision(True, f"nearest memory {evidence.nearest:.2f} ≥ {NEAR}")
    mine = "" if own is None else f"; {own.falls_short(request.query)}"
    bar = f"< {NEAR}" if speaks else "not used: no Latin word"
    return _skip(f"{GENERIC}, nothing in memory close (nearest {evidence.nearest:.2f} {bar}){mine}")
