"""Erasure of a data subject: the scope, the digests and the tombstone that replace content.

An erasure removes the personal content of every version and ledger row in its scope while the
ledger keeps its shape: ids, positions, timestamps, and a sha256 digest of what was erased. The
erasure log names the subject only by digest. Pure: stdlib only, no clock (times come in).
Must not import any I/O library.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memstream.services.domain.errors import DomainError

# Erasure ids of events are uuid5 of (tenant, event_id): a redelivered ERASE event is the same
# erasure, so the log holds it once.
ERASURE_NAMESPACE = uuid.UUID("0b4f6a52-7c1e-5d39-a8e2-3f9d1c6b7e40")

# The event operation that erases (``op: ERASE`` on the events topic).
ERASE_OP = "ERASE"
# What an erased version keeps in place of its personal fields.
ERASED_ENTITY_ID = "erased"
MAX_REASON_CHARS = 500


class InvalidScope(DomainError):
    """An erasure request that names no subject, or names it badly."""


class ScopeKind(StrEnum):
    ENTITY = "entity"  # every memory anchored to the entity (primary or extra anchor)
    MEMORY = "memory"  # every version of one memory_key


@dataclass(frozen=True, slots=True)
class ErasureScope:
    """Whose data to erase: ``value`` is ``"type:id"`` (entity) or the memory key."""

    tenant_id: str
    kind: ScopeKind
    value: str

    @classmethod
    def entity(cls, tenant_id: str, entity: str) -> ErasureScope:
        """``entity`` as ``TYPE:ID`` (the id may itself contain ``:``)."""
        entity_type, sep, entity_id = entity.partition(":")
        if not sep or not entity_type.strip() or not entity_id.strip():
            raise InvalidScope(f"an entity is TYPE:ID, got {entity!r}")
        value = f"{entity_type.strip()}:{entity_id.strip()}"
        return cls(_tenant(tenant_id), ScopeKind.ENTITY, value)

    @classmethod
    def memory(cls, tenant_id: str, memory_key: str) -> ErasureScope:
        if not memory_key.strip():
            raise InvalidScope("the memory key is empty")
        return cls(_tenant(tenant_id), ScopeKind.MEMORY, memory_key.strip())

    @classmethod
    def parse(cls, tenant_id: str, text: str) -> ErasureScope:
        """``entity:TYPE:ID`` or ``memory:KEY`` (the form HTTP and the event path use)."""
        kind, sep, rest = text.partition(":")
        if sep and kind == ScopeKind.ENTITY.value:
            return cls.entity(tenant_id, rest)
        if sep and kind == ScopeKind.MEMORY.value:
            return cls.memory(tenant_id, rest)
        raise InvalidScope(f"a scope is entity:TYPE:ID or memory:KEY, got {text!r}")

    @property
    def entity_type(self) -> str:
        return self.value.partition(":")[0] if self.kind is ScopeKind.ENTITY else ""

    @property
    def entity_id(self) -> str:
        return self.value.partition(":")[2] if self.kind is ScopeKind.ENTITY else ""

    @property
    def digest(self) -> str:
        """What the erasure log keeps of the subject: sha256, never the subject itself."""
        return sha256_hex(f"{self.tenant_id}\x1f{self.kind.value}\x1f{self.value}")

    def word_pattern(self) -> str:
        """A POSIX regular expression (PostgreSQL ARE) for the entity id as a whole word: a
        request naming ``C-17`` is the subject's, one naming ``C-170`` is not."""
        escaped = "".join(c if c.isalnum() else "\\" + c for c in self.entity_id)
        return f"(^|[^[:alnum:]_]){escaped}($|[^[:alnum:]_])"

    def needles(self) -> tuple[str, ...]:
        """The strings whose presence in a message's bytes means it names the subject."""
        return (self.entity_id,) if self.kind is ScopeKind.ENTITY else (self.value,)


def _tenant(tenant_id: str) -> str:
    if not tenant_id or not tenant_id.strip():
        raise InvalidScope("the tenant is empty")
    return tenant_id.strip()


def scope_of_event(raw: Mapping[str, Any]) -> ErasureScope:
    """The scope of an ``op: ERASE`` event: its ``memory_key`` when set, else its entity."""
    tenant = raw.get("tenant_id")
    if not isinstance(tenant, str):
        raise InvalidScope("an ERASE event needs a tenant_id")
    key = raw.get("memory_key")
    if isinstance(key, str) and key.strip():
        return ErasureScope.memory(tenant, key)
    entity_type, entity_id = raw.get("entity_type"), raw.get("entity_id")
    if not isinstance(entity_type, str) or not isinstance(entity_id, str):
        raise InvalidScope("an ERASE event needs a memory_key or an entity_type and entity_id")
    return ErasureScope.entity(tenant, f"{entity_type}:{entity_id}")


def erasure_lock_key(tenant_id: str) -> str:
    """The advisory-lock text of a tenant's erasure: every ingest transaction of the tenant
    takes it shared, an erasure exclusive. (The record separator keeps it apart from the
    per-memory lock texts, ``tenant + US + memory_key``, in practice.)"""
    return f"{tenant_id}\x1f\x1eerasure"


def checked_reason(reason: str | None) -> str:
    text = (reason or "").strip()
    if len(text) > MAX_REASON_CHARS:
        raise InvalidScope(f"the reason is longer than {MAX_REASON_CHARS} characters")
    return text


def erasure_id_of_event(tenant_id: str, event_id: str) -> str:
    return str(uuid.uuid5(ERASURE_NAMESPACE, f"{tenant_id}\x1f{event_id}"))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def content_digest(content: str, attributes: Mapping[str, Any], entity: str, entities: Any) -> str:
    """The digest of a version's erased fields (content, attributes, entity and anchors)."""
    erased = {
        "content": content,
        "attributes": dict(attributes),
        "entity": entity,
        "entities": entities,
    }
    return sha256_hex(canonical_json(erased))


def payload_digest(payload: Mapping[str, Any]) -> str:
    """The digest of a ledger row's erased payload (the event as published)."""
    return sha256_hex(canonical_json(dict(payload)))


def ledger_tombstone(erasure_id: str, erased_at: datetime, digest: str) -> dict[str, Any]:
    """What an erased ledger row's payload becomes: no field of the original event survives."""
    return {
        "erased": True,
        "erasure_id": erasure_id,
        "erased_at": erased_at.isoformat(),
        "payload_sha256": digest,
    }


@dataclass(frozen=True, slots=True)
class ErasureCounts:
    memories: int = 0
    versions: int = 0
    ledger_rows: int = 0
    query_log: int = 0
    dead_letters: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "memories": self.memories,
            "versions": self.versions,
            "ledger_rows": self.ledger_rows,
            "query_log": self.query_log,
            "dead_letters": self.dead_letters,
        }

    @property
    def nothing(self) -> bool:
        return not any(self.as_dict().values())


@dataclass(frozen=True, slots=True)
class ErasureResult:
    """What an erasure did (or, with ``dry_run``, would do)."""

    erasure_id: str | None  # None when nothing was in scope (a no-op) or a dry run
    tenant_id: str
    scope_kind: ScopeKind
    subject_digest: str
    dry_run: bool
    counts: ErasureCounts
    digests: Mapping[str, str] = field(default_factory=dict)  # version_id → content digest
    vectors_deleted: int = 0
    cache_keys_deleted: int = 0
    completed: tuple[str, ...] = ()  # erasure ids whose vectors and caches finished now
    pending: tuple[str, ...] = ()  # erasure ids still waiting for vectors/caches (see error)
    error: str | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)  # per phase, as measured

    @property
    def noop(self) -> bool:
        return self.counts.nothing and not self.dry_run

    def as_dict(self) -> dict[str, Any]:
        return {
            "erasure_id": self.erasure_id,
            "tenant_id": self.tenant_id,
            "scope": self.scope_kind.value,
            "subject_sha256": self.subject_digest,
            "dry_run": self.dry_run,
            "counts": self.counts.as_dict(),
            "digests": dict(self.digests),
            "vectors_deleted": self.vectors_deleted,
            "cache_keys_deleted": self.cache_keys_deleted,
            "completed": list(self.completed),
            "pending": list(self.pending),
            "error": self.error,
            "seconds": dict(self.seconds),
        }


def erase_event(
    scope: ErasureScope, event_id: str, reason: str, source_system: str, at: datetime
) -> dict[str, Any]:
    """The ``memstream.MemoryEvent`` record (``op: ERASE``) that asks the worker for ``scope``."""
    entity_type, entity_id = (
        (scope.entity_type, scope.entity_id) if scope.kind is ScopeKind.ENTITY else ("memory", "-")
    )
    return {
        "event_id": event_id,
        "tenant_id": scope.tenant_id,
        "memory_key": scope.value if scope.kind is ScopeKind.MEMORY else None,
        "entity_type": entity_type,
        "entity_id": entity_id,
        "entities": [],
        "fact_type": "erasure",
        "content": reason,
        "attributes": {},
        "source_system": source_system,
        "status": "active",
        "occurred_at": at,
        "op": ERASE_OP,
    }
