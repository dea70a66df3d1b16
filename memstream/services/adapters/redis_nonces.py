"""RedisNonceStore: the request nonces seen while their tokens are still valid.

Implements ``services.ports.NonceStore`` with one ``SET key <position> NX PXAT until`` per
request: the first claim wins and keeps where its record was read; a later claim reads the key
back (one more round trip, only then) to tell the same record read again from a replay of the
token in another record. Redis forgets it when the token expires (after which the token is
refused for its expiry anyway). Unlike the caches,
an outage is not a miss: it raises ``TransientError`` and the request is refused (fail closed).
Must not import handlers or streams.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import redis
import redis.asyncio as aioredis

from memstream.services.ports import Claim, Position, TransientError


class RedisNonceStore:
    def __init__(self, client: Any, prefix: str = "memstream:nonce:") -> None:
        self._client = client
        self._prefix = prefix

    @classmethod
    def from_url(cls, url: str, prefix: str = "memstream:nonce:") -> RedisNonceStore:
        client = aioredis.Redis.from_url(
            url, socket_timeout=1.0, socket_connect_timeout=1.0, decode_responses=False
        )
        return cls(client, prefix)

    async def claim(self, key_id: str, nonce: str, until: datetime, where: Position) -> Claim:
        key = self._prefix + hashlib.sha256(f"{key_id}|{nonce}".encode()).hexdigest()[:40]
        record = f"{where.topic}/{where.partition}/{where.offset}".encode()
        try:
            if await self._client.set(key, record, nx=True, pxat=int(until.timestamp() * 1000)):
                return "first"
            held = await self._client.get(key)  # written once, never changed: no race
        except redis.RedisError as exc:
            raise TransientError(f"nonce store unreachable: {exc}") from exc
        return "again" if held == record else "replayed"

    async def close(self) -> None:
        await self._client.aclose()
