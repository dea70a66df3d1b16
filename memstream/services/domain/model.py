"""The memory model: events as they arrive and the immutable versions they become.

Pure dataclasses; must not import any I/O library.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

# Version ids are uuid5 of (tenant, event_id): a redelivered event maps to the same id, so
# every write derived from it (row, vector point) is idempotent.
VERSION_NAMESPACE = uuid.UUID("6f0b1c3e-4d1a-5e7b-9c2d-8a4f3e2b1c0d")


class Op(StrEnum):
    UPSERT = "UPSERT"
    RETRACT = "RETRACT"


@dataclass(frozen=True, slots=True)
class Anchor:
    """An entity a memory is about: ``(type, id)``, e.g. ``("customer", "C-17")``."""

    type: str
    id: str


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """A validated memory event (the Avro ``memstream.MemoryEvent``).

    ``memory_key`` is always set here: an event without one starts a memory of its own,
    keyed by its ``event_id``.
    """

    event_id: str
    tenant_id: str
    memory_key: str
    entity_type: str
    entity_id: str
    fact_type: str
    content: str
    source_system: str
    status: str
    occurred_at: datetime
    op: Op = Op.UPSERT
    entities: tuple[Anchor, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=dict)

    @property
    def anchors(self) -> tuple[Anchor, ...]:
        """The primary entity followed by the extra anchors, without repeats."""
        seen: dict[Anchor, None] = {Anchor(self.entity_type, self.entity_id): None}
        for anchor in self.entities:
            seen.setdefault(anchor, None)
        return tuple(seen)

    def version_id(self) -> str:
        return version_id_for(self.tenant_id, self.event_id)


def version_id_for(tenant_id: str, event_id: str) -> str:
    return str(uuid.uuid5(VERSION_NAMESPACE, f"{tenant_id}\x1f{event_id}"))


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One immutable version of a memory, with its valid time and transaction time.

    ``valid_to``, ``is_current`` and ``superseded_at`` are derived from the chain (see
    ``versioning.derive_chain``); everything else never changes once recorded.
    """

    version_id: str
    tenant_id: str
    memory_key: str
    version: int
    parent_id: str | None
    event_id: str
    entity_type: str
    entity_id: str
    fact_type: str
    content: str
    source_system: str
    status: str
    op: Op
    occurred_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    is_current: bool
    entities: tuple[Anchor, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_tombstone(self) -> bool:
        return self.op is Op.RETRACT

    @property
    def anchors(self) -> tuple[Anchor, ...]:
        seen: dict[Anchor, None] = {Anchor(self.entity_type, self.entity_id): None}
        for anchor in self.entities:
            seen.setdefault(anchor, None)
        return tuple(seen)
