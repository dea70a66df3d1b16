"""Who is calling: a bearer credential → a ``Principal`` (tenant, role), or a refusal.

``Authenticator`` is the one seam every door checks credentials through (its shape is the
``CredentialStore`` port's: ``authenticate(secret) -> Principal``). ``StaticCredentials`` holds
the credentials of a JSON file (``DATA_DIR/credentials.json``); ``authenticator_for`` picks what
a gateway process uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

CREDENTIALS_FILE = "credentials.json"

ROLES = ("agent", "producer", "admin")


class DoorError(Exception):
    """A refusal every door answers alike: a machine-readable ``code``, a message, and the HTTP
    status the gateway answers it with."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def unauthenticated(message: str) -> DoorError:
    return DoorError("unauthenticated", message, 401)


def forbidden(message: str) -> DoorError:
    return DoorError("forbidden", message, 403)


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. ``tenant_id`` None: every tenant (an operator's admin key)."""

    tenant_id: str | None
    role: str
    key_id: str
    sources: tuple[str, ...] = ()

    def may(self, *roles: str) -> bool:
        return self.role == "admin" or self.role in roles

    def tenant_for(self, requested: str | None) -> str:
        """The tenant a call acts on: the credential's own, which a request may repeat but not
        change; an all-tenant credential must name one."""
        if self.tenant_id is None:
            if not requested:
                raise DoorError("missing_tenant", "name the tenant (tenant_id)", 422)
            return requested
        if requested and requested != self.tenant_id:
            raise forbidden(
                f"credential {self.key_id!r} is for tenant {self.tenant_id!r}, not {requested!r}"
            )
        return self.tenant_id


class Authenticator(Protocol):
    async def authenticate(self, secret: str) -> Principal:
        """The caller ``secret`` belongs to; raises DoorError (401) when it belongs to none."""
        ...


class StaticCredentials:
    """A fixed set of credentials (from a file, or given by a test)."""

    def __init__(self, entries: Mapping[str, Principal]) -> None:
        self._entries = dict(entries)

    async def authenticate(self, secret: str) -> Principal:
        principal = self._entries.get(secret)
        if principal is None:
            raise unauthenticated("the credential is not known to this gateway")
        return principal

    @classmethod
    def from_file(cls, path: Path) -> StaticCredentials:
        """``[{"secret", "tenant_id", "role", "key_id"?}, …]`` or ``{name: {…}, …}``."""
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
        items: Iterable[tuple[str, Any]] = (
            raw.items() if isinstance(raw, dict) else ((str(i), e) for i, e in enumerate(raw))
        )
        entries: dict[str, Principal] = {}
        for name, entry in items:
            if not isinstance(entry, dict):
                continue
            secret = entry.get("secret") or entry.get("credential") or entry.get("key")
            role = str(entry.get("role") or name)
            if not isinstance(secret, str) or role not in ROLES:
                continue
            entries[secret] = Principal(
                tenant_id=entry.get("tenant_id") or entry.get("tenant"),
                role=role,
                key_id=str(entry.get("key_id") or name),
                sources=tuple(entry.get("sources") or ()),
            )
        return cls(entries)


def bearer(header: str | None) -> str:
    """The credential of an ``Authorization: Bearer …`` header (401 when absent or another
    scheme)."""
    if not header:
        raise unauthenticated("send the credential as `Authorization: Bearer <credential>`")
    scheme, _, secret = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise unauthenticated("the Authorization header must be `Bearer <credential>`")
    return secret.strip()


def authenticator_for(data_dir: Path) -> Authenticator:
    """The credentials a gateway on this data dir accepts."""
    path = data_dir / CREDENTIALS_FILE
    if not path.is_file():
        return StaticCredentials({})
    return StaticCredentials.from_file(path)
