"""Guard: verifies a request or event before any work, opens sealed requests, seals replies.

Requests (in this order, nothing read from the payload before the token is good):
1. the reply key (``ms-reply-key``) gives the session keys, so even a refusal is sealed and
   authenticated to whoever asked; the reply address is checked against the reply topics;
2. the token (``ms-auth``): a known, active key; an Ed25519 signature over this record's
   bytes and addressing; not expired; its nonce (the request id) never seen before in another
   record (the same record read again, a consumer's redelivery, is ``ReadAgain``: no reply);
3. the body opens with the session key and decodes; its request id is the token's nonce;
4. the payload's tenant is the credential's or absent (another tenant, existing or not, gets
   the same ``forbidden``).
Events: the same token checks (nonce = event id; expiry against the record's publish time, so a
backlog after an outage still ingests), then the tenant and ``source_system`` rules.
Every refusal writes an audit row. Must not import adapters or streams.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from memstream.schemas import envelope
from memstream.services.domain.identity import (
    CLOCK_SKEW,
    AuthError,
    BadReplyAddress,
    Forbidden,
    Principal,
    Unauthenticated,
    check_expiry,
    check_key,
    may_ask,
    may_publish,
    reply_address,
)
from memstream.services.ports import (
    AdapterError,
    CredentialStore,
    NonceStore,
    Position,
    Refusal,
)

log = logging.getLogger(__name__)


def _text(headers: Mapping[str, bytes], name: str) -> str:
    value = headers.get(name) or b""
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        return ""


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Opened:
    """A verified request: who asked, what, and where its sealed reply goes."""

    principal: Principal
    request: dict[str, Any]
    request_id: str
    address: tuple[str, int]
    keys: envelope.SessionKeys


@dataclass(frozen=True, slots=True)
class ReadAgain:
    """A request record this service has opened before, read again from the same position (a
    consumer's redelivery): it was answered, or is being answered, once; not again."""

    request_id: str
    position: Position


@dataclass(frozen=True, slots=True)
class Refused:
    """A refused request: what the client is told, and whether it can be told at all."""

    code: str
    reason: str
    request_id: str | None
    address: tuple[str, int] | None
    keys: envelope.SessionKeys | None

    @property
    def answerable(self) -> bool:
        return bool(self.request_id and self.address and self.keys)


class Guard:
    def __init__(
        self,
        credentials: CredentialStore,
        nonces: NonceStore,
        service_key: X25519PrivateKey,
        reply_topics: Mapping[str, int],
        default_reply_topic: str,
        decode_request: Callable[[bytes], Mapping[str, Any]],
        clock: Callable[[], datetime],
    ) -> None:
        self._credentials = credentials
        self._nonces = nonces
        self._service_key = service_key
        self._reply_topics = reply_topics  # not copied: with rotation it follows the clock
        self._default = default_reply_topic
        self._decode = decode_request
        self._clock = clock

    # --- requests ------------------------------------------------------------------------

    async def open_request(
        self, value: bytes | None, headers: Mapping[str, bytes], position: Position
    ) -> Opened | ReadAgain | Refused:
        request_id = _text(headers, "correlation_id") or None
        reply_to, partition_text = _text(headers, "reply_to"), _text(headers, "reply_partition")
        reply_key_text = _text(headers, envelope.REPLY_KEY_HEADER)
        keys: envelope.SessionKeys | None = None
        try:
            keys = envelope.server_session(self._service_key, envelope.unb64(reply_key_text))
        except envelope.EnvelopeError:
            keys = None
        address = self._fallback_address(reply_to, _int(partition_text))
        token: envelope.Token | None = None
        principal: Principal | None = None
        try:
            if keys is None:
                raise Unauthenticated("no usable reply key")
            if address is None or address[0] != reply_to:
                raise BadReplyAddress(f"reply_to {reply_to!r} / partition {partition_text!r}")
            token, principal = await self._verify(
                headers,
                "request",
                value or b"",
                envelope.request_binding(reply_key_text.encode(), reply_to, partition_text),
                self._clock(),
            )
            if token.nonce != request_id:
                raise Unauthenticated("token nonce is not the correlation id")
            claim = await self._nonces.claim(
                token.key_id, token.nonce, self._until(token.expires_ms), position
            )
            if claim == "again":
                return ReadAgain(token.nonce, position)
            if claim != "first":
                raise Unauthenticated("token replayed")
            try:
                body = envelope.open_sealed(keys.request, value or b"", envelope.REQUEST_AAD)
                request = dict(self._decode(body))
            except Exception as exc:  # garbage inside a signed envelope: the client's bug
                raise Forbidden(f"sealed body does not open or decode: {exc}") from exc
            if request.get("request_id") != token.nonce:
                raise Forbidden("body request id differs from the token")
            request["tenant_id"] = may_ask(principal, request.get("tenant_id"))
            for name, signed in (("reply_to", reply_to), ("reply_partition", address[1])):
                if request.get(name) not in (None, signed):
                    raise BadReplyAddress(f"body {name} differs from the signed header")
            return Opened(principal, request, token.nonce, address, keys)
        except AuthError as exc:
            refusal = Refused(exc.code, exc.reason, request_id, address, keys)
        except BadReplyAddress as exc:
            refusal = Refused("bad_reply_address", exc.detail, request_id, address, keys)
        except AdapterError as exc:  # a store is down: refuse, never guess
            refusal = Refused("unavailable", str(exc), request_id, address, keys)
        await self._credentials.refused(
            Refusal(
                "request",
                refusal.code,
                refusal.reason,
                token.key_id if token else None,
                principal.tenant_id if principal else None,
                request_id,
                position,
            )
        )
        return refusal

    def _fallback_address(self, reply_to: str, partition: int | None) -> tuple[str, int] | None:
        """Where a reply may go: the address asked for when it is a reply topic's partition;
        else the default reply topic's same partition, if that exists; else nowhere."""
        try:
            return reply_address(reply_to, partition, self._reply_topics)
        except BadReplyAddress:
            pass
        try:
            return reply_address(self._default, partition, self._reply_topics)
        except BadReplyAddress:
            return None

    def seal_reply(self, keys: envelope.SessionKeys, request_id: str, reply: bytes) -> bytes:
        return envelope.seal(keys.reply, reply, envelope.reply_aad(request_id))

    # --- events --------------------------------------------------------------------------

    async def verify_event(
        self,
        value: bytes,
        headers: Mapping[str, bytes],
        published_at: datetime | None,
        now: datetime,
    ) -> tuple[envelope.Token, Principal]:
        """The producer of an event record (raises ``AuthError``)."""
        return await self._verify(headers, "event", value, b"", published_at or now)

    @staticmethod
    def authorize_event(
        token: envelope.Token, principal: Principal, raw: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The decoded event with the credential's tenant (raises ``AuthError``)."""
        if raw.get("event_id") != token.nonce:
            raise Unauthenticated("token nonce is not the event id")
        tenant = may_publish(principal, raw.get("tenant_id"), raw.get("source_system"))
        return {**raw, "tenant_id": tenant}

    async def refused_event(
        self, exc: AuthError, token: envelope.Token | None, position: Position, event_id: object
    ) -> None:
        await self._credentials.refused(
            Refusal(
                "event",
                exc.code,
                exc.reason,
                token.key_id if token else None,
                None,
                event_id if isinstance(event_id, str) else None,
                position,
            )
        )

    # --- both ----------------------------------------------------------------------------

    async def _verify(
        self, headers: Mapping[str, bytes], kind: str, value: bytes, bound: bytes, at: datetime
    ) -> tuple[envelope.Token, Principal]:
        text = _text(headers, envelope.AUTH_HEADER)
        if not text:
            raise Unauthenticated("no token")
        try:
            token = envelope.parse_token(text)
        except envelope.EnvelopeError as exc:
            raise Unauthenticated(str(exc)) from None
        record = await self._credentials.key(token.key_id)
        principal = check_key(record, self._clock())
        assert record is not None
        if not envelope.verify(record.public_key, token, kind, value, bound):
            raise Unauthenticated(f"bad signature for key {token.key_id}")
        check_expiry(self._moment(token.expires_ms), at)
        return token, principal

    @staticmethod
    def _moment(ms: int) -> datetime:
        try:
            return datetime.fromtimestamp(ms / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            raise Unauthenticated("token expiry out of range") from None

    def _until(self, expires_ms: int) -> datetime:
        return max(self._moment(expires_ms), self._clock()) + CLOCK_SKEW
