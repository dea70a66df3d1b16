"""Credentials, nonces and the audit trail of refusals.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from memstream.services.domain.identity import KeyRecord, Principal
from memstream.services.ports.memory import Position


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused request or event, for the audit trail (``reason`` is never sent back)."""

    kind: str  # request | event
    code: str  # unauthenticated | forbidden | bad_reply_address
    reason: str
    key_id: str | None = None
    tenant_id: str | None = None
    subject_id: str | None = None  # the request id / event id, when known
    position: Position | None = None


class CredentialStore(Protocol):
    """Tenants' credentials (only hashes and public keys are stored)."""

    async def authenticate(self, secret: str) -> Principal:
        """The principal of a full credential string presented as a bearer secret (the HTTP
        gateway); raises ``Unauthenticated`` for an unknown, expired or revoked one."""
        ...

    async def key(self, key_id: str) -> KeyRecord | None:
        """The stored key (whatever its state), or None; may be cached for a few seconds."""
        ...

    async def refused(self, refusal: Refusal) -> None:
        """One audit row; never raises for an outage (logged instead)."""
        ...


# What a nonce's claim found: the first claim; the same record read again (a consumer's
# redelivery after a rebalance or a restart: the broker gives every record its own offset, so
# a copy sent again by anyone is never at the claim's position); another record with it.
Claim = Literal["first", "again", "replayed"]


class NonceStore(Protocol):
    """Nonces seen within their token's lifetime: a token is good for one record only."""

    async def claim(self, key_id: str, nonce: str, until: datetime, where: Position) -> Claim:
        """``"first"`` the first time (key_id, nonce) is claimed before ``until``, remembering
        ``where`` its record was read; then ``"again"`` for the record at that position and
        ``"replayed"`` for any other. Raises ``TransientError`` when the store is unreachable
        (the caller refuses)."""
        ...
