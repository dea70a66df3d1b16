"""Who is calling: a bearer credential → the ``Principal`` of the tenant's credential store, or
a refusal.

``Authenticator`` is the one seam every door checks credentials through: the
``CredentialStore`` port (``authenticate(secret) -> Principal``), built by
``bootstrap.credential_store``. What a caller may do is decided by the identity rules of the
domain (``may_ask``, ``may_publish``, ``may_erase``); a refusal is a ``DoorError`` with the
public message of its code, never the reason.
"""

from __future__ import annotations

from typing import Protocol

from memstream.services.domain.identity import (
    PUBLIC_MESSAGE,
    AuthError,
    Principal,
    may_ask,
    may_erase,
    may_publish,
)

__all__ = [
    "Authenticator",
    "DoorError",
    "Principal",
    "bearer",
    "erasable_tenant",
    "readable_tenant",
    "writable",
]


class DoorError(Exception):
    """A refusal every door answers alike: a machine-readable ``code``, a message, and the HTTP
    status the gateway answers it with."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def refused(exc: AuthError) -> DoorError:
    status = 401 if exc.code == "unauthenticated" else 403
    return DoorError(exc.code, PUBLIC_MESSAGE.get(exc.code, exc.code), status)


class Authenticator(Protocol):
    async def authenticate(self, secret: str) -> Principal:
        """The caller ``secret`` belongs to; raises ``AuthError`` when it belongs to none."""
        ...


def bearer(header: str | None) -> str:
    """The credential of an ``Authorization: Bearer …`` header (401 when absent or another
    scheme)."""
    if not header:
        raise DoorError(
            "unauthenticated", "send the credential as `Authorization: Bearer <credential>`", 401
        )
    scheme, _, secret = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise DoorError(
            "unauthenticated", "the Authorization header must be `Bearer <credential>`", 401
        )
    return secret.strip()


def readable_tenant(principal: Principal, requested: str | None) -> str:
    """The tenant an agent (or admin) reads: its credential's; naming another is refused."""
    try:
        return may_ask(principal, requested)
    except AuthError as exc:
        raise refused(exc) from None


def writable(principal: Principal, tenant: object, source_system: object) -> str:
    try:
        return may_publish(principal, tenant, source_system)
    except AuthError as exc:
        raise refused(exc) from None


def erasable_tenant(principal: Principal) -> str:
    """The tenant an admin erases in: its credential's (every other role: 403)."""
    try:
        return may_erase(principal)
    except AuthError as exc:
        raise refused(exc) from None
