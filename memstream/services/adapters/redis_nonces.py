"""RedisNonceStore: the request nonces seen while their tokens are still valid.

Implements ``services.ports.NonceStore`` with one ``SET key 1 NX PXAT until`` per request: the
first claim wins, a replay of the same token finds the key and is refused; Redis forgets it when
the token expires (after which the token is refused for its expiry anyway). Unlike the caches,
an outage is not a miss: it raises ``TransientError`` and the request is refused (fail closed).
Must not import handlers or streams.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import redis
import redis.asyncio as aioredis

from memstream.services.ports import TransientError


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

    async def claim(self, key_id: str, nonce: str, until: datetime) -> bool:
        digest = hashlib.sha256(f"{key_id}|{nonce}".encode()).hexdigest()[:40]
        try:
            created = await self._client.set(
                self._prefix + digest, b"1", nx=True, pxat=int(until.timestamp() * 1000)
            )
        except redis.RedisError as exc:
            raise TransientError(f"nonce store unreachable: {exc}") from exc
        return bool(created)

    async def close(self) -> None:
        await self._client.aclose()
