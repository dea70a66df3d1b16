"""Test helpers for identity: provisioning keys in a real schema, building signed requests."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstream.schemas import codec, envelope
from memstream.services import bootstrap
from memstream.services.adapters.postgres_credentials import PostgresCredentialStore
from memstream.services.domain.identity import Role
from memstream.services.settings import Settings


def utcnow() -> datetime:
    return datetime.now(UTC)


class Keyring:
    """Tenants and keys in one schema, signed for one service key (a data dir's)."""

    def __init__(self, dsn: str, data_dir: Path) -> None:
        self.dsn = dsn
        self.service = bootstrap.service_key(Settings(data_dir=data_dir))
        self.service_public = envelope.service_public(self.service)
        self._issued: dict[tuple[str, str, tuple[str, ...]], str] = {}

    async def issue_async(
        self, tenant: str, role: str, sources: Sequence[str] = (), **kw: Any
    ) -> str:
        store = await PostgresCredentialStore.connect(self.dsn, utcnow)
        try:
            await store.create_tenant(tenant)
            credential, _ = await store.create_key(
                tenant, Role(role), self.service_public, sources, **kw
            )
            return str(credential)
        finally:
            await store.close()

    def key(self, tenant: str, role: str = "agent", sources: Sequence[str] = ()) -> str:
        """A credential (one per tenant, role and sources; made on first use)."""
        ident = (tenant, role, tuple(sorted(sources)))
        if ident not in self._issued:
            self._issued[ident] = asyncio.run(self.issue_async(tenant, role, sources))
        return self._issued[ident]

    def event_headers(self, value: bytes) -> list[tuple[str, bytes]]:
        """Headers that sign one encoded MemoryEvent with its tenant's producer key for its
        source; undecodable bytes are signed by a key of their own (they must still reach
        the decoder, and be dead-lettered as undecodable)."""
        try:
            raw = codec.decode("MemoryEvent", value)
            tenant, source, nonce = raw["tenant_id"], raw["source_system"], raw["event_id"]
        except Exception:
            tenant, source, nonce = "garbage-producer", "crm", uuid.uuid4().hex
        signer = envelope.EventSigner(self.key(tenant, "producer", [source]))
        return signer.headers(value, nonce, int(time.time() * 1000))


def signed_request(
    credential: str | envelope.Credential,
    record: dict[str, Any],
    *,
    reply_to: str = "memory.replies",
    partition: int = 0,
    expires_ms: int | None = None,
    request_id: str | None = None,
) -> tuple[bytes, dict[str, bytes], envelope.SessionKeys]:
    """(sealed value, headers, session keys) of one request as MemoryClient sends it."""
    cred = (
        credential
        if isinstance(credential, envelope.Credential)
        else envelope.Credential.parse(credential)
    )
    request_id = request_id or uuid.uuid4().hex
    full = {
        "request_id": request_id,
        "tenant_id": "",
        "query": "q",
        "user_id": None,
        "anchors": [],
        "context": {"active_task": None, "active_entities": [], "time_window": None},
        "as_of": None,
        "known_at": None,
        "limit": 5,
        "force": True,
        "reply_to": reply_to,
        "reply_partition": partition,
        **record,
    }
    reply_key, keys = envelope.client_session(cred.service_public)
    value = envelope.seal(
        keys.request, codec.encode("RetrievalRequest", full), envelope.REQUEST_AAD
    )
    reply_key_text = envelope.b64(reply_key)
    expires = expires_ms if expires_ms is not None else int(time.time() * 1000) + 60_000
    token = envelope.sign(
        cred,
        cred.signer(),
        "request",
        value,
        request_id,
        expires,
        envelope.request_binding(reply_key_text.encode(), reply_to, str(partition)),
    )
    headers = {
        "correlation_id": request_id.encode(),
        "reply_to": reply_to.encode(),
        "reply_partition": str(partition).encode(),
        envelope.AUTH_HEADER: token.encode(),
        envelope.REPLY_KEY_HEADER: reply_key_text.encode(),
    }
    return value, headers, keys
