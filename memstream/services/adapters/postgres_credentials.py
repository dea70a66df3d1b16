"""PostgresCredentialStore: tenants and credentials in Postgres (migration 0006).

Implements ``services.ports.CredentialStore`` for the worker and the HTTP gateway, and the
administration the CLI needs (tenants create/list/show, keys create/list/rotate/revoke). A key
looked up for a token is cached for ``cache_seconds`` (unknown keys too, so random key ids cost
the database nothing): a revocation takes effect within that time. Must not import handlers or
streams.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.schemas.envelope import Credential, EnvelopeError, new_key_id
from memstream.services.adapters.postgres_rows import translate
from memstream.services.domain.identity import (
    SOURCE_SYSTEM,
    KeyRecord,
    Principal,
    Role,
    Unauthenticated,
    check_key,
    valid_tenant_id,
)
from memstream.services.ports import AdapterError, Refusal

log = logging.getLogger(__name__)

_KEY_COLUMNS = (
    "SELECT key_id, tenant_id, role, sources, secret_hash, public_key, created_at, expires_at,"
    " revoked_at, replaced_by FROM credentials"
)


class CredentialError(AdapterError):
    """An administration request that cannot be done (unknown tenant, bad role, …)."""


def _record(row: dict[str, Any]) -> KeyRecord:
    return KeyRecord(
        key_id=row["key_id"],
        tenant_id=row["tenant_id"],
        role=Role(row["role"]),
        sources=frozenset(row["sources"] or ()),
        secret_hash=bytes(row["secret_hash"]),
        public_key=bytes(row["public_key"]),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        replaced_by=row["replaced_by"],
    )


class PostgresCredentialStore:
    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        clock: Callable[[], datetime],
        cache_seconds: float = 5.0,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, KeyRecord | None]] = {}

    @classmethod
    async def connect(
        cls, dsn: str, clock: Callable[[], datetime], cache_seconds: float = 5.0
    ) -> PostgresCredentialStore:
        """A store on a pool of its own (``close`` closes it)."""
        from memstream.services.adapters.postgres import PostgresMemoryRepository

        repo = await PostgresMemoryRepository.connect(dsn, max_size=4)
        store = cls(repo.pool, clock, cache_seconds)
        store._owned = repo
        return store

    _owned: Any = None

    async def close(self) -> None:
        if self._owned is not None:
            await self._owned.close()

    # --- the port ------------------------------------------------------------------------

    async def authenticate(self, secret: str) -> Principal:
        try:
            credential = Credential.parse(secret)
        except EnvelopeError:
            raise Unauthenticated("malformed credential") from None
        record = await self.key(credential.key_id)
        if record is None or not hmac.compare_digest(record.secret_hash, credential.secret_hash):
            raise Unauthenticated("unknown key")
        return check_key(record, self._clock())

    async def key(self, key_id: str) -> KeyRecord | None:
        now = time.monotonic()
        cached = self._cache.get(key_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        record = await self._fetch(key_id)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key_id] = (now + self._cache_seconds, record)
        return record

    async def refused(self, refusal: Refusal) -> None:
        position = refusal.position
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "INSERT INTO auth_audit (kind, code, reason, key_id, tenant_id, subject_id,"
                    ' topic, partition, "offset") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)',
                    (
                        refusal.kind,
                        refusal.code,
                        refusal.reason,
                        refusal.key_id,
                        refusal.tenant_id,
                        refusal.subject_id,
                        position.topic if position else None,
                        position.partition if position else None,
                        position.offset if position else None,
                    ),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            log.error("refusal not audited (%s: %s): %s", refusal.code, refusal.reason, exc)

    async def _fetch(self, key_id: str) -> KeyRecord | None:
        rows = await self._query(_KEY_COLUMNS + " WHERE key_id = %s", (key_id,))
        return _record(rows[0]) if rows else None

    async def _query(self, query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(query.encode(), params)
                return await cur.fetchall() if cur.description else []
        except psycopg.errors.IntegrityError as exc:
            raise CredentialError(str(exc).splitlines()[0]) from exc
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "reading credentials") from exc

    # --- administration (CLI, `memstream up`, tests) -------------------------------------

    async def create_tenant(self, tenant_id: str, name: str = "") -> bool:
        """True when created now, False when it existed."""
        if not valid_tenant_id(tenant_id):
            raise CredentialError(
                f"tenant id {tenant_id!r}: use 1-63 of a-z 0-9 _ - (starting with a letter/digit)"
            )
        rows = await self._query(
            "INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)"
            " ON CONFLICT DO NOTHING RETURNING tenant_id",
            (tenant_id, name),
        )
        return bool(rows)

    async def tenants(self) -> list[dict[str, Any]]:
        return await self._query(
            "SELECT t.tenant_id, t.name, t.created_at, count(c.key_id) AS keys,"
            " count(c.key_id) FILTER (WHERE c.revoked_at IS NULL AND (c.expires_at IS NULL"
            " OR c.expires_at > now())) AS active_keys"
            " FROM tenants t LEFT JOIN credentials c USING (tenant_id)"
            " GROUP BY t.tenant_id ORDER BY t.tenant_id"
        )

    async def tenant(self, tenant_id: str) -> dict[str, Any] | None:
        rows = await self._query(
            "SELECT tenant_id, name, created_at FROM tenants WHERE tenant_id = %s", (tenant_id,)
        )
        return rows[0] if rows else None

    async def create_key(
        self,
        tenant_id: str,
        role: Role,
        service_public: bytes,
        sources: Sequence[str] = (),
        expires_at: datetime | None = None,
    ) -> tuple[Credential, KeyRecord]:
        """A new credential; its full string exists only in the return value."""
        sources = sorted(set(sources))
        if role is Role.PRODUCER and not sources:
            raise CredentialError("a producer key needs at least one --source")
        if role is not Role.PRODUCER and sources:
            raise CredentialError(f"only producer keys are bound to sources, not {role}")
        for source in sources:
            if not SOURCE_SYSTEM.match(source):
                raise CredentialError(f"source_system {source!r} is not a valid name")
        if await self.tenant(tenant_id) is None:
            raise CredentialError(f"no tenant {tenant_id!r}: create it first")
        credential = Credential.new(new_key_id(), service_public)
        rows = await self._query(
            "INSERT INTO credentials (key_id, tenant_id, role, sources, secret_hash, public_key,"
            " expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING *",
            (
                credential.key_id,
                tenant_id,
                role.value,
                list(sources),
                credential.secret_hash,
                credential.public_key,
                expires_at,
            ),
        )
        return credential, _record(rows[0])

    async def keys(self, tenant_id: str | None = None) -> list[KeyRecord]:
        if tenant_id is None:
            rows = await self._query(_KEY_COLUMNS + " ORDER BY tenant_id, created_at")
        else:
            rows = await self._query(
                _KEY_COLUMNS + " WHERE tenant_id = %s ORDER BY created_at", (tenant_id,)
            )
        return [_record(r) for r in rows]

    async def rotate(
        self, key_id: str, service_public: bytes, overlap: timedelta
    ) -> tuple[Credential, KeyRecord]:
        """A new key with the same tenant, role and sources; the old one stays valid for
        ``overlap`` (so its users can switch) and then expires."""
        old = await self._fetch(key_id)
        if old is None:
            raise CredentialError(f"no key {key_id!r}")
        if old.state(self._clock()) != "active":
            raise CredentialError(f"key {key_id} is {old.state(self._clock())}: create a new one")
        credential, new = await self.create_key(
            old.tenant_id, old.role, service_public, sorted(old.sources), old.expires_at
        )
        until = self._clock() + overlap
        await self._query(
            "UPDATE credentials SET replaced_by = %s,"
            " expires_at = LEAST(coalesce(expires_at, %s), %s) WHERE key_id = %s",
            (new.key_id, until, until, key_id),
        )
        self._cache.pop(key_id, None)
        return credential, new

    async def revoke(self, key_id: str) -> bool:
        rows = await self._query(
            "UPDATE credentials SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL"
            " RETURNING key_id",
            (self._clock(), key_id),
        )
        self._cache.pop(key_id, None)
        return bool(rows)

    async def refusals(self, limit: int = 100) -> list[dict[str, Any]]:
        return await self._query("SELECT * FROM auth_audit ORDER BY id DESC LIMIT %s", (limit,))
