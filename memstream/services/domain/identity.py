"""Identity: who may ask or write, decided from a credential, never from a payload.

A credential belongs to one tenant and has one role: ``agent`` (may ask), ``producer`` (may
publish, only for the ``source_system``s it is bound to, so a forum scraper cannot claim the
authority of ``official_doc``), ``admin`` (may ask and publish for any source of its tenant,
and erase). The tenant of a request or event is the credential's; a payload naming another tenant is
refused with the same answer whether that tenant exists or not (no enumeration).

Pure rules only (stdlib, no clock: ``now`` is a parameter). The cryptography lives in
``memstream.schemas.envelope``; storage in the credential store adapter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from memstream.services.domain.errors import DomainError

TENANT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
SOURCE_SYSTEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$")
KEY_ID = re.compile(r"^k[0-9a-f]{16}$")
# A token is good for this long at most (its expiry is signed by the client): long enough for
# clock skew and a queue, short enough that a captured token is worthless soon after.
MAX_TOKEN_LIFETIME = timedelta(minutes=15)
CLOCK_SKEW = timedelta(seconds=30)


class Role(StrEnum):
    AGENT = "agent"
    PRODUCER = "producer"
    ADMIN = "admin"


class AuthError(DomainError):
    """A refused request or event. ``code`` is what the client is told (``unauthenticated`` or
    ``forbidden``); ``reason`` is for the audit row only and is never sent back."""

    code = "unauthenticated"

    def __init__(self, reason: str) -> None:
        super().__init__(f"{self.code}: {reason}")
        self.reason = reason


class Unauthenticated(AuthError):
    code = "unauthenticated"


class Forbidden(AuthError):
    code = "forbidden"


class BadReplyAddress(DomainError):
    """``reply_to`` / ``reply_partition`` outside the configured reply topics."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


# What a refused client is told: one sentence per code, whatever the reason was.
PUBLIC_MESSAGE = {
    "unauthenticated": "the request carries no valid credential token",
    "forbidden": "the credential does not allow this",
}


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified credential is."""

    tenant_id: str
    role: Role
    sources: frozenset[str]
    key_id: str


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A stored credential: only the hash of its secret and its public verification key."""

    key_id: str
    tenant_id: str
    role: Role
    sources: frozenset[str]
    secret_hash: bytes
    public_key: bytes
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    replaced_by: str | None = None

    def principal(self) -> Principal:
        return Principal(self.tenant_id, self.role, self.sources, self.key_id)

    def state(self, now: datetime) -> str:
        if self.revoked_at is not None and self.revoked_at <= now:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


def valid_tenant_id(tenant_id: str) -> bool:
    """Lower-case ids only, no spaces: ``"acme "`` and ``"ACME"`` are not ``acme``."""
    return bool(TENANT_ID.match(tenant_id))


def check_key(record: KeyRecord | None, now: datetime) -> Principal:
    """The principal of a stored key that may be used at ``now``."""
    if record is None:
        raise Unauthenticated("unknown key")
    state = record.state(now)
    if state != "active":
        raise Unauthenticated(f"key {record.key_id} is {state}")
    return record.principal()


def check_expiry(expires_at: datetime, now: datetime) -> None:
    """A token's signed expiry: not past, and not further ahead than a token may live."""
    if expires_at <= now - CLOCK_SKEW:
        raise Unauthenticated("token expired")
    if expires_at > now + MAX_TOKEN_LIFETIME + CLOCK_SKEW:
        raise Unauthenticated("token lifetime too long")


def may_ask(principal: Principal, payload_tenant: object) -> str:
    """The tenant a request is answered for: the credential's. A payload may repeat it (or
    leave it empty); one that names anything else is refused."""
    if principal.role not in (Role.AGENT, Role.ADMIN):
        raise Forbidden(f"role {principal.role} may not ask")
    if payload_tenant not in (None, "", principal.tenant_id):
        raise Forbidden("payload names another tenant")
    return principal.tenant_id


def may_publish(principal: Principal, payload_tenant: object, source_system: object) -> str:
    """The tenant an event is recorded for; its ``source_system`` must be one the credential
    speaks for (an admin speaks for every source of its tenant)."""
    if principal.role not in (Role.PRODUCER, Role.ADMIN):
        raise Forbidden(f"role {principal.role} may not publish")
    if payload_tenant not in (None, "", principal.tenant_id):
        raise Forbidden("payload names another tenant")
    if principal.role is Role.PRODUCER and source_system not in principal.sources:
        raise Forbidden(unbound_source(principal, source_system))
    return principal.tenant_id


def unbound_source(principal: Principal, source_system: object) -> str:
    """Why a producer's event was refused, for the dead letter and the audit row (never sent
    to the client): the key, the sources it speaks for, and, for a well-formed source name,
    the command an operator runs for a key that speaks for those and the new one."""
    bound = sorted(principal.sources)
    reason = (
        f"source_system {source_system!r} is outside producer key {principal.key_id} "
        f"(it speaks for: {', '.join(bound) or 'none'})"
    )
    if not isinstance(source_system, str) or not SOURCE_SYSTEM.match(source_system):
        return reason
    sources = " ".join(f"--source {s}" for s in [*bound, source_system])
    return (
        f"{reason}; a key that also speaks for it: `memstream keys create --tenant "
        f"{principal.tenant_id} --role producer {sources} --save`"
    )


def may_erase(principal: Principal, payload_tenant: object = None) -> str:
    """The tenant an erasure is done for: only an admin credential may forget, and only in its
    own tenant (an erasure is an operator's act, never an agent's or a source's)."""
    if principal.role is not Role.ADMIN:
        raise Forbidden(f"role {principal.role} may not erase")
    if payload_tenant not in (None, "", principal.tenant_id):
        raise Forbidden("payload names another tenant")
    return principal.tenant_id


def reply_address(
    reply_to: object, partition: object, allowed: Mapping[str, int]
) -> tuple[str, int]:
    """The (topic, partition) a reply may be written to: a configured reply topic and one of
    its partitions. Anything else is refused: the worker writes nowhere else."""
    if not isinstance(reply_to, str) or reply_to not in allowed:
        raise BadReplyAddress(f"reply_to {reply_to!r} is not a reply topic")
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise BadReplyAddress(f"reply_partition {partition!r} is not a partition number")
    if not 0 <= partition < allowed[reply_to]:
        raise BadReplyAddress(
            f"reply_partition {partition} is outside 0..{allowed[reply_to] - 1} of {reply_to}"
        )
    return reply_to, partition
