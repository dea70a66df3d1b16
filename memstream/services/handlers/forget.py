"""handle_forget: erase a data subject everywhere memstream copied it, and prove it.

Two phases. (1) One Postgres transaction (``ErasureRepository.erase``): tombstones, query-log
redaction, dead-letter purge and the erasure log, pending. (2) Completion, for every pending
erasure of the tenant (this one and any that a crash or an outage left behind): the vector
points go and the tenant's shard is rewritten, the cached replies and trust entries go, and the
log entry is marked completed. Phase 2 is idempotent, so an erasure interrupted anywhere is
finished by running any erasure of the tenant again (the same request is then a no-op in
Postgres and completes the rest).

Then the touched tables are VACUUMed: after the completion, because a VACUUM removes nothing
that could be read (the rows are gone at the commit) and its bytes stay in PostgreSQL's freed
space either way (docs/erasure.md, "Where bytes linger"); it visits whole tables, 6.5 s of an
8.5 s erasure in a tenant of 10^6 memories. ``vacuum="inline"`` (``memstream forget``) runs it
before returning, timed as ``vacuum``; ``"background"`` (the worker) starts it and returns: one
VACUUM at a time, erasures completed while it runs get one more after it; ``close`` awaits it.
A failed VACUUM is logged; the erasure stays completed.

Authorisation is the caller's: ``actor`` is the identity (credential / key id) that asked, and
is recorded as given. Must not import adapters or streams.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from memstream.services.domain.erasure import (
    ErasureResult,
    ErasureScope,
    InvalidScope,
    checked_reason,
    erasure_id_of_event,
    scope_of_event,
)
from memstream.services.ports import AdapterError, Cache, ErasureRepository, VectorIndex

log = logging.getLogger(__name__)


class Forgetter:
    def __init__(
        self,
        repo: ErasureRepository,
        index: VectorIndex,
        cache: Cache,
        clock: Callable[[], datetime],
        *,
        vacuum: Literal["inline", "background"] = "inline",
        writes: asyncio.Lock | None = None,
    ) -> None:
        self._repo = repo
        # The indexer's lock on the stores' writes (the composition root's): a pass that read a
        # version before this erasure writes it before the deletion or not at all.
        self._writes = writes or asyncio.Lock()
        self._index = index
        self._cache = cache
        self._clock = clock
        self._vacuum = vacuum
        self._vacuuming: asyncio.Task[None] | None = None
        self._vacuum_again = False
        self.vacuums = 0  # VACUUMs finished (background ones included)

    async def forget(
        self,
        tenant_id: str,
        scope: ErasureScope | str,
        reason: str | None,
        actor: str,
        dry_run: bool = False,
        *,
        erasure_id: str | None = None,
    ) -> ErasureResult:
        """Erase ``scope`` (an ``ErasureScope`` or ``entity:TYPE:ID`` / ``memory:KEY``) of
        ``tenant_id``; ``dry_run`` only counts. Raises ``InvalidScope`` for a bad request and
        ``AdapterError`` when Postgres fails (nothing is then changed). A failure of the vector
        store or the cache after the commit is reported in ``pending`` / ``error``, not raised:
        the data is already unreadable through Postgres, and the next run finishes the rest."""
        if isinstance(scope, str):
            scope = ErasureScope.parse(tenant_id, scope)
        elif scope.tenant_id != tenant_id:
            raise ValueError(f"scope of tenant {scope.tenant_id!r} given for {tenant_id!r}")
        if not actor.strip():
            raise ValueError("an erasure needs the identity of whoever asked for it")
        started = time.perf_counter()
        result = await self._repo.erase(
            scope,
            erasure_id=erasure_id or str(uuid.uuid4()),
            requested_by=actor.strip(),
            reason=checked_reason(reason),
            requested_at=self._clock(),
            dry_run=dry_run,
        )
        result = dataclasses.replace(result, seconds={"postgres": time.perf_counter() - started})
        if dry_run:
            return result
        return await self.complete(tenant_id, result)

    async def erase_event(self, raw: Mapping[str, Any], actor: str | None = None) -> ErasureResult:
        """An ``op: ERASE`` event from the events topic: its scope is its ``memory_key`` when
        set, else its entity; its erasure id derives from its event id (a redelivery is the
        same erasure, a no-op); its ``content`` is the reason. ``actor`` is the verified key id of
        the admin credential that signed it; where events are not verified, the event's source
        system stands in."""
        scope = scope_of_event(raw)
        event_id = str(raw.get("event_id") or "")
        if not event_id:
            raise InvalidScope("an ERASE event needs an event_id")
        actor = actor or f"event:{raw.get('source_system') or 'unknown'}"
        reason = raw.get("content")  # an ERASE event's content is the reason for it
        return await self.forget(
            scope.tenant_id,
            scope,
            reason if isinstance(reason, str) else None,
            actor,
            erasure_id=erasure_id_of_event(scope.tenant_id, event_id),
        )

    async def complete(self, tenant_id: str, result: ErasureResult) -> ErasureResult:
        """Phase 2 for every pending erasure of ``tenant_id``; folded into ``result``."""
        pending = await self._repo.pending(tenant_id)
        if not pending:
            return result
        ids = sorted({v for p in pending for v in p.version_ids})
        vectors = keys = 0
        seconds = dict(result.seconds)
        lap = time.perf_counter()

        def phase(name: str) -> None:
            nonlocal lap
            now = time.perf_counter()
            seconds[name], lap = now - lap, now

        try:
            async with self._writes:
                vectors = await self._index.delete(tenant_id, ids)
                phase("vector_delete")
                await self._index.compact(tenant_id)
                phase("vector_compaction")
            keys = await self._cache.purge_tenant(tenant_id, ids)
            phase("cache_purge")
            done = tuple(p.erasure_id for p in pending)
            await self._repo.complete(done, self._clock())
        except AdapterError as exc:
            log.error("erasure of tenant %s committed, completion pending: %s", tenant_id, exc)
            return dataclasses.replace(
                result,
                vectors_deleted=vectors,
                cache_keys_deleted=keys,
                pending=tuple(p.erasure_id for p in pending),
                error=str(exc),
                seconds=seconds,
            )
        if self._vacuum == "inline":
            await self._vacuum_once()
            phase("vacuum")
        else:
            self._schedule_vacuum()
        return dataclasses.replace(
            result,
            vectors_deleted=vectors,
            cache_keys_deleted=keys,
            completed=done,
            seconds=seconds,
        )

    async def _vacuum_once(self) -> None:
        try:
            await self._repo.vacuum()
        except AdapterError as exc:  # the erasure is complete: nothing readable is left
            log.warning("VACUUM after an erasure failed (the erasure is complete): %s", exc)
        else:
            self.vacuums += 1

    def _schedule_vacuum(self) -> None:
        if self._vacuuming is not None and not self._vacuuming.done():
            self._vacuum_again = True  # this erasure's dead rows may predate its scan
            return
        self._vacuuming = asyncio.ensure_future(self._vacuum_loop())

    async def _vacuum_loop(self) -> None:
        while True:
            self._vacuum_again = False
            await self._vacuum_once()
            if not self._vacuum_again:
                return

    async def vacuumed(self) -> None:
        """Wait for the VACUUM started in the background, if one is running."""
        task = self._vacuuming
        if task is not None:
            await asyncio.shield(task)

    async def close(self) -> None:
        """Wait for a background VACUUM to end (a stop does not leave one half-run)."""
        await self.vacuumed()
