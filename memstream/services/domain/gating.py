"""Gating: whether a request should be answered from memory at all, and why.

A query depends on memory when it carries a cue (``lexicon.find_cues``) — time words
("yesterday", "上次"), possessives ("my", "我的"), state verbs ("returned", "退货"), anaphora
("that one", "它"), an entity id or an exact attribute ("XR-500", "USB-C") — or when the request
carries conversation context (active entities or task) or an explicit time (time window, a past
as_of). Otherwise it is skipped with the reason "no memory cue: generic question". Under high
load only strong cues pass. ``force`` always passes.
Pure: ``now`` is a parameter. Must not import any I/O library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.lexicon import CONTEXT, EXPLICIT_TIME, Cue, find_cues
from memstream.services.domain.query import RetrievalRequest

HIGH_LOAD = 0.9


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
class GateDecision:
    needs_memory: bool
    reason: str


def gate(request: RetrievalRequest, now: datetime, load: float = 0.0) -> GateDecision:
    """Decide whether to answer from memory; the reason names the cue found (or missing).

    ``load`` is the service's load in [0, 1]; at ``HIGH_LOAD`` (0.9) or above, weak cues alone
    (anaphora, "when", a colour, conversation context) are skipped.
    """
    if request.force:
        return GateDecision(True, "forced")
    cues = [*find_cues(request.query), *_request_cues(request, now)]
    if not cues:
        return GateDecision(False, "no memory cue: generic question")
    strong = [cue for cue in cues if cue.strong]
    if load >= HIGH_LOAD:
        if strong:
            return GateDecision(True, strong[0].describe())
        return GateDecision(False, f"high load {load:.2f}: only weak cue {cues[0].describe()}")
    return GateDecision(True, (strong or cues)[0].describe())
