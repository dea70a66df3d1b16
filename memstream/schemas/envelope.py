"""The security envelope on the wire: credentials, signed tokens, sealed requests and replies.

Credential: ``msk1.<key_id>.<secret>.<service public key>`` (base64url). The secret is 32
random bytes, the seed of an Ed25519 key: the client signs with it, the service stores only the
public key and a SHA-256 of the secret. A slow KDF would add nothing: it protects guessable
passwords, and 256 random bits are not guessable; a stolen table gives neither the secret nor a
way to sign. The service's X25519 public key rides in the credential so one string is all a
client needs.

Token (header ``ms-auth``): ``v1.<key_id>.<expires_ms>.<nonce>.<signature>``, an Ed25519
signature over the kind (``request`` / ``event``), key id, expiry, nonce (the request id / event
id) and the SHA-256 of the record value and of the addressing headers — so a captured token is
worthless for another record, another reply address, or after it expires (request nonces are
also remembered until then).

Sealing (requests and replies): the client makes a fresh X25519 key per request and sends its
public half (header ``ms-reply-key``); ECDH with the service's static key, HKDF-SHA256, gives
two ChaCha20-Poly1305 keys: one seals the request body, one the reply. Only the service (static
private key) and that client (ephemeral private key) can derive them, so a reply that opens is
authentic and bound to its request (the request id is the associated data); another consumer
of the topic reads ciphertext. Must not import anything from ``memstream.services``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "msk1"
AUTH_HEADER = "ms-auth"
REPLY_KEY_HEADER = "ms-reply-key"
SEALED = b"MS1"  # magic of a sealed value
_RAW = serialization.Encoding.Raw
_RAW_PUBLIC = serialization.PublicFormat.Raw


class EnvelopeError(ValueError):
    """A credential, token or sealed value that is malformed or does not verify."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise EnvelopeError("not base64url") from exc


def new_key_id() -> str:
    return "k" + secrets.token_hex(8)


def secret_hash(seed: bytes) -> bytes:
    return hashlib.sha256(b"memstream-credential|" + seed).digest()


def verify_key(seed: bytes) -> bytes:
    """The Ed25519 public key (raw 32 bytes) that checks this secret's signatures."""
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(_RAW, _RAW_PUBLIC)


@dataclass(frozen=True, slots=True)
class Credential:
    key_id: str
    seed: bytes
    service_public: bytes

    @classmethod
    def new(cls, key_id: str, service_public: bytes) -> Credential:
        return cls(key_id, secrets.token_bytes(32), service_public)

    @classmethod
    def parse(cls, text: str) -> Credential:
        parts = text.strip().split(".")
        if len(parts) != 4 or parts[0] != PREFIX:
            raise EnvelopeError("not a memstream credential (msk1.<key id>.<secret>.<service>)")
        seed, service = unb64(parts[2]), unb64(parts[3])
        if len(seed) != 32 or len(service) != 32:
            raise EnvelopeError("not a memstream credential (bad secret or service key length)")
        return cls(parts[1], seed, service)

    def __str__(self) -> str:
        return f"{PREFIX}.{self.key_id}.{b64(self.seed)}.{b64(self.service_public)}"

    def __repr__(self) -> str:  # never print the secret by accident
        return f"Credential(key_id={self.key_id!r})"

    @property
    def secret_hash(self) -> bytes:
        return secret_hash(self.seed)

    @property
    def public_key(self) -> bytes:
        return verify_key(self.seed)

    def signer(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.seed)


@dataclass(frozen=True, slots=True)
class Token:
    key_id: str
    expires_ms: int
    nonce: str
    signature: bytes


def _signed(
    kind: str, key_id: str, expires_ms: int, nonce: str, value: bytes, bound: bytes
) -> bytes:
    return b"|".join(
        [
            b"memstream-v1",
            kind.encode(),
            key_id.encode(),
            str(expires_ms).encode(),
            nonce.encode(),
            hashlib.sha256(value).digest(),
            hashlib.sha256(bound).digest(),
        ]
    )


def sign(
    credential: Credential,
    signer: Ed25519PrivateKey,
    kind: str,
    value: bytes,
    nonce: str,
    expires_ms: int,
    bound: bytes = b"",
) -> str:
    """The ``ms-auth`` header value for one record."""
    if not nonce:
        raise EnvelopeError("a token nonce is a non-empty id")
    message = _signed(kind, credential.key_id, expires_ms, nonce, value, bound)
    signature = signer.sign(message)
    return f"v1.{credential.key_id}.{expires_ms}.{nonce}.{b64(signature)}"


def parse_token(text: str) -> Token:
    parts = text.split(".")  # the nonce (a request / event id) may itself contain dots
    nonce = ".".join(parts[3:-1])
    if len(parts) < 5 or parts[0] != "v1" or not nonce:
        raise EnvelopeError("malformed token")
    try:
        expires_ms = int(parts[2])
    except ValueError:
        raise EnvelopeError("malformed token expiry") from None
    signature = unb64(parts[-1])
    if len(signature) != 64:
        raise EnvelopeError("malformed token signature")
    return Token(parts[1], expires_ms, nonce, signature)


def verify(public_key: bytes, token: Token, kind: str, value: bytes, bound: bytes = b"") -> bool:
    message = _signed(kind, token.key_id, token.expires_ms, token.nonce, value, bound)
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(token.signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def request_binding(reply_key: bytes, reply_to: str, reply_partition: str) -> bytes:
    """The headers a request token also covers (where the reply goes, and sealed to whom)."""
    return b"|".join([reply_key, reply_to.encode(), reply_partition.encode()])


# --- sealing --------------------------------------------------------------------------------


def service_public(private: X25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(_RAW, _RAW_PUBLIC)


def load_service_key(data: bytes) -> X25519PrivateKey:
    if len(data) != 32:
        raise EnvelopeError("a service key is 32 raw bytes")
    return X25519PrivateKey.from_private_bytes(data)


def service_key_bytes(private: X25519PrivateKey) -> bytes:
    return private.private_bytes(
        _RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


@dataclass(frozen=True, slots=True)
class SessionKeys:
    request: ChaCha20Poly1305
    reply: ChaCha20Poly1305


def _derive(shared: bytes, client_public: bytes, server_public: bytes) -> SessionKeys:
    okm = HKDF(
        algorithm=hashes.SHA256(),
        length=64,
        salt=client_public + server_public,
        info=b"memstream-v1 seal",
    ).derive(shared)
    return SessionKeys(ChaCha20Poly1305(okm[:32]), ChaCha20Poly1305(okm[32:]))


def client_session(service_public_key: bytes) -> tuple[bytes, SessionKeys]:
    """A fresh ephemeral key for one request: (its public half to send, the session keys)."""
    ephemeral = X25519PrivateKey.generate()
    mine = ephemeral.public_key().public_bytes(_RAW, _RAW_PUBLIC)
    try:
        shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(service_public_key))
    except ValueError as exc:
        raise EnvelopeError("bad service public key") from exc
    return mine, _derive(shared, mine, service_public_key)


def server_session(private: X25519PrivateKey, client_public: bytes) -> SessionKeys:
    if len(client_public) != 32:
        raise EnvelopeError("a reply key is 32 bytes")
    try:
        shared = private.exchange(X25519PublicKey.from_public_bytes(client_public))
    except ValueError as exc:  # a low-order point: no shared secret
        raise EnvelopeError("bad reply key") from exc
    return _derive(shared, client_public, service_public(private))


def seal(aead: ChaCha20Poly1305, plaintext: bytes, associated: bytes) -> bytes:
    nonce = os.urandom(12)
    return SEALED + nonce + aead.encrypt(nonce, plaintext, associated)


def open_sealed(aead: ChaCha20Poly1305, value: bytes, associated: bytes) -> bytes:
    if len(value) < len(SEALED) + 12 + 16 or not value.startswith(SEALED):
        raise EnvelopeError("not a sealed value")
    nonce = value[len(SEALED) : len(SEALED) + 12]
    try:
        return aead.decrypt(nonce, value[len(SEALED) + 12 :], associated)
    except InvalidTag as exc:
        raise EnvelopeError("sealed value does not open with this key") from exc


REQUEST_AAD = b"memstream-v1 request"


def reply_aad(request_id: str) -> bytes:
    return b"memstream-v1 reply|" + request_id.encode()


class EventSigner:
    """Signs MemoryEvent records for the events topic with a producer credential."""

    def __init__(self, credential: str | Credential, lifetime_ms: int = 600_000) -> None:
        self.credential = (
            credential if isinstance(credential, Credential) else Credential.parse(credential)
        )
        self._signer = self.credential.signer()
        self._lifetime_ms = lifetime_ms

    def headers(self, value: bytes, event_id: str, now_ms: int) -> list[tuple[str, bytes]]:
        """The ``ms-auth`` header for one event record (nonce = its event id)."""
        token = sign(
            self.credential, self._signer, "event", value, event_id, now_ms + self._lifetime_ms
        )
        return [(AUTH_HEADER, token.encode())]
