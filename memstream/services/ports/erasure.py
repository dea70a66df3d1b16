"""Erasure: pending erasures, the marks of erased versions, the repository.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memstream.services.domain.erasure import ErasureResult, ErasureScope


@dataclass(frozen=True, slots=True)
class PendingErasure:
    """An erasure committed in Postgres whose vectors or caches are not done yet."""

    erasure_id: str
    tenant_id: str
    version_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ErasureMark:
    """What ``history`` shows of an erased version instead of its content."""

    erasure_id: str
    erased_at: datetime
    reason: str
    content_digest: str


class ErasureRepository(Protocol):
    """Erasure in Postgres: the tombstones, the redactions and the erasure log."""

    async def erase(
        self,
        scope: ErasureScope,
        *,
        erasure_id: str,
        requested_by: str,
        reason: str,
        requested_at: datetime,
        dry_run: bool,
    ) -> ErasureResult:
        """In ONE transaction, under a lock that keeps the tenant's ingest out: tombstone every
        version and ledger row in scope, redact the query log, purge dead letters, write the
        erasure log (pending until ``complete``). ``dry_run`` counts and rolls back. Nothing in
        scope (erased already) is a no-op: no log row, ``erasure_id`` None."""
        ...

    async def pending(self, tenant_id: str) -> list[PendingErasure]: ...

    async def complete(self, erasure_ids: Sequence[str], at: datetime) -> None: ...

    async def vacuum(self) -> None:
        """VACUUM the tables an erasure touches (outside any transaction)."""
        ...

    async def marks(self, tenant_id: str, memory_key: str) -> dict[str, ErasureMark]:
        """The erased versions of one memory, by version_id."""
        ...

    async def log(self, tenant_id: str) -> list[dict[str, Any]]:
        """The tenant's erasure log, oldest first (no personal data in it)."""
        ...
