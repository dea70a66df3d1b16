"""Gating: whether a request should be answered from memory at all, and why.

In order:

1. ``force`` always passes ("forced").
2. A strong cue in the query (``lexicon.find_cues``: time words "yesterday"/"上次",
   possessives "my"/"我的", state verbs "returned"/"退货", an entity id "XR-500") or in the
   request (a time window, a past as_of / known_at) passes, as does conversation context
   (active entities, an active task).
3. Talk that needs no memory by its form (``lexicon.chatter``: small talk, arithmetic, an
   instruction to the agent) is skipped — an instruction that says "my" is looked at instead
   ("summarize my complaints" may be about the user's records); a question about the
   speaker or about "the user" with a ``user_id`` (``lexicon.about_the_speaker`` and
   ``about_the_user``: "what music do I like?", "what does the user want now?") passes.
4. Under high load (≥ 0.9) nothing else passes: a look at memory costs a retrieval.
5. Otherwise — no cue, or only weak ones ("it", "I", "when", a colour or a number) — memory is
   looked at (``probe``): the handler retrieves and passes ``MemoryEvidence``; the question is
   answered when it names something the tenant's memory holds (a word of the question, not a
   common one, found in the memories retrieved, with those memories at least ``NAMED_NEAR``
   similar) or when the nearest memory is close (cosine ≥ ``NEAR``); else it is skipped with
   the nearest similarity in the reason. An answer's reason says which terms are held, how
   many of the question's terms that is, and the nearest similarity, so that a reader can see
   how close the call was ("names 'blender', 'motor' in memory (2 of 3 terms, nearest 0.31)").

Every skip reason ends with how to force (``FORCE_HINT``).
Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    content_terms,
)
from memstream.services.domain.query import RetrievalRequest
from memstream.services.domain.reading import QuestionReading, read_question

HIGH_LOAD = 0.9
# Cosine similarity (the bundled MiniLM) of the question and its nearest memory above which a
# question is about what memory holds, and the lower bar when it also names a held term.
NEAR = 0.45
NAMED_NEAR = 0.10
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
    if request.active_entities:
        cues.append(Cue(CONTEXT, f"{len(request.active_entities)} active entities", False))
    if request.active_task:
        cues.append(Cue(CONTEXT, "active task", False))
    return cues


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


def _skip(reason: str) -> GateDecision:
    return GateDecision(False, f"{reason}; {FORCE_HINT}")


def gate(
    request: RetrievalRequest,
    now: datetime,
    load: float = 0.0,
    evidence: MemoryEvidence | None = None,
    reading: QuestionReading | None = None,
) -> GateDecision:
    """Decide whether to answer from memory (see the module docstring for the order).

    ``load`` is the service's load in [0, 1]. Without ``evidence``, a question that needs a
    look at memory comes back with ``probe`` set (and ``needs_memory`` false). ``reading`` is
    the question read once at the entry (``reading.read_question``; read here when absent).
    """
    if request.force:
        return GateDecision(True, "forced")
    if reading is None:
        reading = read_question(request)
    talk = reading.talk
    text_cues = tuple(_in_form(cue, talk) for cue in reading.cues)
    context = _request_cues(request, now)
    strong = [cue for cue in (*text_cues, *context) if cue.strong]
    if strong:
        return GateDecision(True, strong[0].describe())
    if context and load < HIGH_LOAD:
        return GateDecision(True, context[0].describe())
    if talk is not None and not any(cue.kind == POSSESSIVE for cue in text_cues):
        return _skip(f"{talk[0]} '{talk[1]}'")
    if request.user_id is not None and (reading.about_speaker or reading.about_user):
        return GateDecision(True, f"about the user {request.user_id!r}")
    weak = [*text_cues, *context]
    if load >= HIGH_LOAD:
        if weak:
            return _skip(f"high load {load:.2f}: only weak cue {weak[0].describe()}")
        return _skip(f"high load {load:.2f}: {GENERIC}")
    if evidence is None:
        return GateDecision(False, "no strong cue: look at memory", probe=True)
    if evidence.named and evidence.nearest >= NAMED_NEAR:
        return GateDecision(
            True,
            f"names {', '.join(map(repr, evidence.named[:3]))} in memory"
            f" ({len(evidence.named)} of {evidence.asked} terms, nearest {evidence.nearest:.2f})",
        )
    if evidence.nearest >= NEAR:
        return GateDecision(True, f"nearest memory {evidence.nearest:.2f} ≥ {NEAR}")
    return _skip(f"{GENERIC}, nothing in memory close (nearest {evidence.nearest:.2f} < {NEAR})")
