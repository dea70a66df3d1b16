"""Writing and reading memories: the unit of work of ingest, the repository, the change sink
and the rules tables.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memstream.services.domain.model import MemoryEvent, MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.domain.versioning import Placement


@dataclass(frozen=True, slots=True)
class Position:
    """Where a message was read: kept in the ledger so replay works by explicit offsets."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Recorded:
    """The outcome of recording one event in Postgres.

    ``duplicate`` is true when the event_id was already in the ledger (nothing changed).
    """

    version: MemoryVersion
    changed: tuple[MemoryVersion, ...]
    outcome: str
    duplicate: bool


@dataclass(frozen=True, slots=True)
class DeadLetter:
    reason: str
    detail: str
    position: Position
    original: bytes | None
    original_key: bytes | None = None
    tenant_id: str | None = None
    event_id: str | None = None


@dataclass(frozen=True, slots=True)
class IndexTask:
    """A version whose vector point must be written (``needs_vector``) or re-synced (payload)."""

    version: MemoryVersion
    needs_vector: bool


class MemoryWrite(Protocol):
    """One memory's unit of work, its lock held (cosmicpython's ``allocate`` shape: the handler
    decides with the domain, the repository stores). ``duplicate``: the ledger already holds
    the event (a redelivery) and what it recorded then; nothing is to be saved."""

    @property
    def chain(self) -> Sequence[MemoryVersion]: ...

    @property
    def duplicate(self) -> Recorded | None: ...

    async def save(
        self, event: MemoryEvent, raw: Mapping[str, Any], position: Position, placement: Placement
    ) -> None:
        """Ledger row + new version + derived changes, committed with the unit of work."""
        ...


class BatchWrite(Protocol):
    """The unit of work of a batch of events, every memory it names locked: their chains and
    the ledger's answers read at once; ``save`` writes every placement, committed together."""

    @property
    def chains(self) -> Mapping[tuple[str, str], Sequence[MemoryVersion]]:
        """(tenant_id, memory_key) → the versions of that memory placing the batch's events
        reads (``versioning.neighbours`` of their occurred_at: at least those; none: absent)."""
        ...

    @property
    def recorded(self) -> Mapping[tuple[str, str], Recorded]:
        """(tenant_id, event_id) → what the ledger already holds for it (``duplicate``)."""
        ...

    async def save(
        self, placed: Sequence[tuple[MemoryEvent, Mapping[str, Any], Position, Placement]]
    ) -> None:
        """Ledger rows + new versions + derived changes, in order, committed with the unit."""
        ...


class MemoryRepository(Protocol):
    """The ledger and the versions, in Postgres (the source of truth)."""

    def locked(self, event: MemoryEvent) -> AbstractAsyncContextManager[MemoryWrite]:
        """A unit of work on ``event``'s memory: locked, its chain and the ledger's answer read.

        A clean exit commits what ``save`` wrote; an exception rolls it back. Raises
        ``TransientError`` when the database is unreachable, ``AdapterError`` otherwise.
        """
        ...

    def locked_batch(
        self, events: Sequence[MemoryEvent]
    ) -> AbstractAsyncContextManager[BatchWrite]:
        """One unit of work for ``events``: every memory they name locked (in one order that
        every writer takes, so that writers never deadlock), chains and ledger answers read.
        Same commit / rollback / errors as ``locked``."""
        ...

    async def dead_letter(self, letter: DeadLetter) -> None: ...

    async def pending_index(
        self, keys: Sequence[tuple[str, str]] | None, limit: int
    ) -> list[IndexTask]:
        """Versions not yet in the vector store, or whose payload is stale.

        ``keys`` restricts to these (tenant_id, memory_key); None means any (the sweep).
        """
        ...

    async def mark_indexed(self, versions: Sequence[MemoryVersion]) -> None:
        """Mark indexed (the points are written); a version whose derived state changed since
        it was read stays dirty: its payload is re-synced by the next pass, not its vector."""
        ...

    async def erased(self, version_ids: Sequence[str]) -> set[str]:
        """Those of ``version_ids`` whose versions are erased (read after they were)."""
        ...

    async def chain(self, tenant_id: str, memory_key: str) -> list[MemoryVersion]: ...

    async def close(self) -> None: ...


class ChangeSink(Protocol):
    """Where the ingest side announces what it did (memory.changes, the DLQ topic)."""

    async def announce(self, recorded: Sequence[Recorded]) -> None:
        """Versions stored by one batch (those of a redelivered event excluded): one
        memory.changes message per tenant, not one per version."""
        ...

    async def dead_lettered(self, letter: DeadLetter) -> None: ...

    async def scored(self, version: MemoryVersion, scores: TimeScores, at: datetime) -> None:
        """The rescoring timer changed a current version's time scores (memory.scores)."""
        ...


# A version due for rescoring: (version, its last scores or None, when they were scored or None).
DueItem = tuple[MemoryVersion, TimeScores | None, datetime | None]


@dataclass(frozen=True, slots=True)
class DueCursor:
    """Where a rescoring pass stands: the last version read (``version_id``) and its key
    (``at``) in the order of the pass's ``arm`` (the adapter's: one per kind of transition)."""

    arm: int
    at: datetime
    version_id: str


@dataclass(frozen=True, slots=True)
class DuePage:
    items: list[DueItem]
    next: DueCursor | None  # None: the pass has read every due version


class RulesRepository(Protocol):
    """Per-tenant rules that change at run time, and the materialised time scores."""

    async def overrides(self, tenant_id: str) -> dict[str, dict[str, float]]:
        """{"half_life": {fact_type: seconds}, "authority": {source: value}}."""
        ...

    async def due(
        self,
        now: datetime,
        limit: int,
        after: DueCursor | None = None,
        since: datetime | None = None,
    ) -> DuePage:
        """Current versions with a state transition (``rescoring.transitions``) passed since
        they were last scored, at most ``limit``, from ``after`` (None: from the start of a
        pass); the page's ``next`` continues the pass, None when it is over. ``since``: the
        start of a complete pass before this one, after which this pass reads only the
        transitions passed and the versions recorded (None: every current version)."""
        ...

    async def save(
        self, items: Sequence[tuple[MemoryVersion, TimeScores, datetime | None]], now: datetime
    ) -> set[str]: ...
