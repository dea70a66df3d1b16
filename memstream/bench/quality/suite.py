"""The shapes every benchmark suite produces: events to ingest and questions to ask.

Document ids are memstream's version ids (``version_id_for(tenant, event_id)``), so that a
baseline's documents, memstream's results and the right answers compare directly. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memstream.services.domain.model import version_id_for


def doc_id(tenant_id: str, event_id: str) -> str:
    """The id of an event's document in every system (memstream's version id)."""
    return version_id_for(tenant_id, event_id)


@dataclass(frozen=True, slots=True)
class Question:
    """One question, asked of every system.

    ``query`` is all a baseline gets (plus its tenant, and ``baseline_filter`` where a plain
    store would filter too); ``request`` is what memstream's request carries besides the query
    (user, anchors, as_of, time window) — what an agent knows. ``right`` are the documents that
    answer it, ``forbidden`` those that must never be returned, ``stale`` superseded ones that
    must rank below ``right``. ``group`` is the family or category it is reported under.
    """

    qid: str
    tenant_id: str
    query: str
    group: str
    right: frozenset[str]
    request: Mapping[str, Any] = field(default_factory=dict)
    forbidden: frozenset[str] = frozenset()
    stale: frozenset[str] = frozenset()
    baseline_filter: frozenset[str] | None = None  # allowed document ids, None: whole tenant


@dataclass(slots=True)
class Suite:
    """Events (ingested in order; ``late`` after all of them, e.g. retractions) and questions."""

    name: str
    events: list[dict[str, Any]] = field(default_factory=list)
    late: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    limit: int = 10
    notes: list[str] = field(default_factory=list)

    def all_events(self) -> list[dict[str, Any]]:
        return [*self.events, *self.late]
