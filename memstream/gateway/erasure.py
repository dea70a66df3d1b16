"""``POST /v1/forget``: an admin's erasure over HTTP, on the path ``memstream forget`` takes.

The scope comes as JSON (``{entity_type, entity_id}`` or ``{memory_key}``) and the tenant is the
admin credential's. The erasure runs through ``ops.forget.run_forget`` (the Postgres transaction,
then the vectors, caches and VACUUM); while a worker holds the tenant's Qdrant Edge shard, which
is never opened here, the committed erasure is handed to it as an ``op: ERASE`` event signed with
the caller's admin credential (``ops.forget.hand_to_worker``), and ``wait`` polls the erasure log
until the worker has completed it. Not an MCP tool: agents ask and remember, they do not forget.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memstream.services.domain.erasure import ErasureResult, ErasureScope, InvalidScope

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2


def erasure_scope(tenant_id: str, scope: Mapping[str, Any]) -> ErasureScope:
    """The scope of a request body's ``scope``: ``{entity_type, entity_id}`` or
    ``{memory_key}``, exactly one of the two. Raises ``InvalidScope`` saying what is wrong."""
    key = scope.get("memory_key")
    entity_type, entity_id = scope.get("entity_type"), scope.get("entity_id")
    if key is not None and (entity_type is not None or entity_id is not None):
        raise InvalidScope(
            "a scope is {entity_type, entity_id} or {memory_key}, not both: send one of them"
        )
    if key is not None:
        return ErasureScope.memory(tenant_id, str(key))
    if entity_type is None or entity_id is None:
        raise InvalidScope("a scope needs entity_type and entity_id, or memory_key")
    if ":" in str(entity_type):
        raise InvalidScope(f"entity_type {entity_type!r} may not contain ':'")
    return ErasureScope.entity(tenant_id, f"{entity_type}:{entity_id}")


@dataclass
class Forgotten:
    """An erasure as the gateway reports it: the ``ErasureResult`` (counts, erasure id,
    digests: no personal data) and whether the worker was handed the rest."""

    result: ErasureResult
    handed_to_worker: str | None = None  # the ERASE event id
    completed_by_worker: bool = False

    @property
    def status(self) -> str:
        if self.result.dry_run:
            return "dry_run"
        if self.result.pending and not self.completed_by_worker:
            return "completing" if self.handed_to_worker else "pending"
        if self.result.noop and not self.result.completed and not self.completed_by_worker:
            return "nothing_to_erase"
        return "completed"

    @property
    def settled(self) -> bool:
        return self.status != "completing" and self.status != "pending"

    def to_json(self) -> dict[str, Any]:
        body = self.result.as_dict()
        if self.handed_to_worker is not None:
            body["error"] = None  # the shard is the worker's: not a failure (and no paths)
        if self.completed_by_worker:
            body["completed"] = sorted({*body["completed"], *body["pending"]})
            body["pending"] = []
        return {
            "status": self.status,
            **body,
            "handed_to_worker": self.handed_to_worker,
        }


async def wait_completed(
    pending: Any, tenant_id: str, erasure_ids: tuple[str, ...], timeout: float
) -> bool:
    """Whether every erasure in ``erasure_ids`` is completed within ``timeout`` seconds
    (``pending(tenant_id)`` reads the log's pending entries)."""
    deadline = time.monotonic() + timeout
    waiting = set(erasure_ids)
    while True:
        left = {p.erasure_id for p in await pending(tenant_id)} & waiting
        if not left:
            return True
        if time.monotonic() >= deadline:
            log.warning("erasures %s of %s still pending after %.0fs", left, tenant_id, timeout)
            return False
        await asyncio.sleep(POLL_SECONDS)
