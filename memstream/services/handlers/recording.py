"""Recording valid events: the units of work of ingest, one event or a batch.

The repository locks and reads, the domain decides where each event goes (``place_event``),
the repository stores; idempotent on event_id. A batch is one unit of work: its events are
placed in order, each against its memory's chain as the earlier events of the batch left it
(``advance``), so that it records exactly what recording its events one at a time would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent, MemoryVersion
from memstream.services.domain.versioning import Placement, advance, place_event
from memstream.services.ports import MemoryRepository, Position, Recorded


@dataclass(frozen=True, slots=True)
class Pending:
    """A valid event to record, where it was read and its transaction time."""

    event: MemoryEvent
    raw: Mapping[str, Any]
    position: Position
    recorded_at: datetime


async def record_event(
    repo: MemoryRepository,
    event: MemoryEvent,
    raw: Mapping[str, Any],
    position: Position,
    recorded_at: datetime,
) -> Recorded:
    """Record one valid event: ledger + new version + derived changes in one unit of work.

    The repository locks the memory and reads its chain; the domain decides where the event
    goes (``place_event``; ``InvalidEvent`` rolls the unit back); the repository stores it.
    Idempotent on event_id: a redelivery returns what was recorded then (``duplicate``).
    """
    async with repo.locked(event) as work:
        if work.duplicate is not None:
            return work.duplicate
        placement = place_event(work.chain, event, recorded_at)
        await work.save(event, raw, position, placement)
    return Recorded(placement.version, placement.changed, placement.outcome, duplicate=False)


async def record_batch(
    repo: MemoryRepository, items: Sequence[Pending]
) -> list[Recorded | InvalidEvent]:
    """Record valid events in one unit of work; per event, what it recorded or why it could not
    be (``InvalidEvent``: e.g. a RETRACT of a memory that does not exist; the others are
    recorded all the same). An event the ledger already holds, or an earlier event of the
    batch with the same event_id, is a ``duplicate``."""
    if not items:
        return []
    async with repo.locked_batch([item.event for item in items]) as work:
        chains: dict[tuple[str, str], Sequence[MemoryVersion]] = dict(work.chains)
        seen: dict[tuple[str, str], Recorded] = dict(work.recorded)
        results: list[Recorded | InvalidEvent] = []
        placed: list[tuple[MemoryEvent, Mapping[str, Any], Position, Placement]] = []
        for item in items:
            event = item.event
            known = seen.get((event.tenant_id, event.event_id))
            if known is not None:
                results.append(known)
                continue
            memory = (event.tenant_id, event.memory_key)
            chain = chains.get(memory, ())
            try:
                placement = place_event(chain, event, item.recorded_at)
            except InvalidEvent as exc:
                results.append(exc)
                continue
            chains[memory] = advance(chain, placement)
            version, outcome = placement.version, placement.outcome
            seen[(event.tenant_id, event.event_id)] = Recorded(version, (), outcome, True)
            placed.append((event, item.raw, item.position, placement))
            results.append(Recorded(version, placement.changed, outcome, duplicate=False))
        await work.save(placed)
    return results
