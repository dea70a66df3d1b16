"""``Cache`` on Redis (``redis.asyncio``): embeddings and per-tenant replies.

Key layout (``ns`` is the namespace; hashes are lowercase hex sha256, ``h32`` its first 32 chars;
``q()`` is ``urllib.parse.quote(s, safe="")``, so no key part can contain ``:``):

* ``{ns}:emb:{q(model_id)}:{sha256(text)}`` → the vector as little-endian float32 bytes
  (``embedding_ttl_s``).
* ``{ns}:gen:{h32(tenant_id)}`` → the tenant's reply generation (an integer string; TTL
  ``_GEN_TTL_S``, refreshed by each invalidation).
* ``{ns}:reply:{h32(tenant_id)}:{generation}:{sha256(request_key)}`` → the reply bytes
  (``reply_ttl_s``).

Replies: ``get_reply`` is one round trip (a Lua script reads the generation and the reply key built
from it); ``invalidate_tenant`` is O(1) (INCR of the generation). A missing generation is created
from the server clock in microseconds (never an earlier value, so losing the key to expiry or
eviction can't revive old replies). ``put_reply`` stores only if the generation is still the one
its ``get_reply`` miss saw, so a reply computed across an invalidation is not cached under the new
generation (a put without a preceding miss uses the current generation). The scripts build the
reply key themselves, so this adapter targets a standalone Redis, not Redis Cluster.

Outage policy: a failure to talk to Redis (any ``redis.RedisError`` but an error reply, or an
``OSError``/timeout) is logged (one warning per ``_WARN_EVERY_S``, debug otherwise), counted in
``errors`` and opens a circuit breaker: for ``breaker_s`` every call is a miss / no-op without
touching Redis (counted in ``skipped``); then one call probes again. An error reply
(``redis.ResponseError``: OOM, WRONGTYPE, ...) is logged and counted, and behaves as a miss / no-op,
but does not open the breaker. Nothing here raises for an outage.

The client must not decode responses; :meth:`from_url` builds one with short timeouts and at most
one immediate retry on a connection error (a stale pooled connection after a restart).
The adapter owns its client: :meth:`close` closes it. Nothing connects before the first call.

Must not import ``services.handlers`` nor ``streams``: only the ports, the stdlib and the driver.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar
from urllib.parse import quote

import numpy as np
import redis
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from memstream.services.ports import AdapterError

log = logging.getLogger(__name__)

T = TypeVar("T")

KINDS: Final = ("embedding", "reply")
_WARN_EVERY_S: Final = 30.0
_GEN_TTL_S: Final = 7 * 86400.0
_PENDING_MAX: Final = 10_000
PURGE_TRIES: Final = 4  # an erasure's purge, each try after a pause of PURGE_PAUSE_S x its number
PURGE_PAUSE_S: Final = 0.25
_ANY_GEN: Final = "*"
_OUTAGE: Final = (redis.RedisError, OSError)

_NEW_GEN_LUA: Final = """
local t = redis.call('TIME')
local g = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('SET', KEYS[1], g, 'PX', ARGV[1])
return g
"""

# KEYS[1] = generation key; ARGV = reply key prefix, request hash.
# Returns {} (no generation), {gen} (miss) or {gen, reply} (hit).
_GET_REPLY_LUA: Final = """
local g = redis.call('GET', KEYS[1])
if not g then return {} end
local v = redis.call('GET', ARGV[1] .. g .. ':' .. ARGV[2])
if not v then return {g} end
return {g, v}
"""

# KEYS[1] = generation key; ARGV = reply key prefix, request hash, expected generation ('' for
# none, '*' for any), reply, reply ttl ms, generation ttl ms. Returns 1 if stored.
_PUT_REPLY_LUA: Final = """
local g = redis.call('GET', KEYS[1])
if ARGV[3] ~= '*' and (g or '') ~= ARGV[3] then return 0 end
if not g then
  local t = redis.call('TIME')
  g = t[1] .. string.format('%06d', tonumber(t[2]))
  redis.call('SET', KEYS[1], g, 'PX', ARGV[6])
end
redis.call('SET', ARGV[1] .. g .. ':' .. ARGV[2], ARGV[4], 'PX', ARGV[5])
return 1
"""

# KEYS[1] = generation key; ARGV[1] = generation ttl ms. Returns the new generation.
_INVALIDATE_LUA: Final = (
    """
if redis.call('EXISTS', KEYS[1]) == 1 then
  local g = redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return tostring(g)
end
"""
    + _NEW_GEN_LUA
)


class _Failed:
    """The result of a call that did not reach Redis (an error, or skipped by the breaker)."""


_FAILED: Final = _Failed()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


class RedisCache:
    """The ``Cache`` port on one Redis; see the module docstring for keys and outage policy."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        namespace: str = "ms",
        reply_ttl_s: float = 30.0,
        embedding_ttl_s: float = 86400.0,
        model_id: str = "default",
        breaker_s: float = 2.0,
    ) -> None:
        if client.connection_pool.connection_kwargs.get("decode_responses"):
            raise ValueError("RedisCache needs a client with decode_responses=False")
        self._client = client
        self._ns = namespace
        self._emb_prefix = f"{namespace}:emb:{quote(model_id, safe='', errors='surrogatepass')}:"
        self._reply_ms = _ms(reply_ttl_s)
        self._embedding_ms = _ms(embedding_ttl_s)
        self._gen_ms = _ms(max(_GEN_TTL_S, 10 * reply_ttl_s))
        self._breaker_s = breaker_s
        self._get_reply = client.register_script(_GET_REPLY_LUA)
        self._put_reply = client.register_script(_PUT_REPLY_LUA)
        self._invalidate = client.register_script(_INVALIDATE_LUA)
        # (tenant hash, request hash) → generation seen by a get_reply miss, until its put_reply.
        self._pending: dict[tuple[str, str], str] = {}
        self._open_until = 0.0
        self._healthy = True
        self._last_warning = -math.inf
        self.hits: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.misses: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.errors: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.skipped: dict[str, int] = dict.fromkeys(KINDS, 0)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        socket_timeout: float = 0.25,
        socket_connect_timeout: float = 0.25,
        **kw: Any,
    ) -> RedisCache:
        """A cache on a new client for ``url`` with short timeouts (``kw`` go to the cache)."""
        client = aioredis.Redis.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_connect_timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
            decode_responses=False,
        )
        return cls(client, **kw)

    @property
    def healthy(self) -> bool:
        """False from a connection failure until a call succeeds again."""
        return self._healthy

    # -- embeddings -------------------------------------------------------------------------

    async def get_embedding(self, text: str) -> list[float] | None:
        raw = await self._run("embedding", lambda: self._client.get(self._emb_key(text)))
        if isinstance(raw, _Failed):
            return None
        if not isinstance(raw, bytes) or len(raw) % 4:
            self.misses["embedding"] += 1
            return None
        self.hits["embedding"] += 1
        return [float(x) for x in np.frombuffer(raw, dtype="<f4")]

    async def put_embedding(self, text: str, vector: Sequence[float]) -> None:
        data = np.asarray(vector, dtype="<f4").tobytes()
        key = self._emb_key(text)
        await self._run("embedding", lambda: self._client.set(key, data, px=self._embedding_ms))

    # -- replies ----------------------------------------------------------------------------

    async def get_reply(self, tenant_id: str, request_key: str) -> bytes | None:
        tenant_h, request_h = _sha(tenant_id)[:32], _sha(request_key)
        out = await self._run(
            "reply",
            lambda: self._get_reply(
                keys=[self._gen_key(tenant_h)], args=[self._reply_prefix(tenant_h), request_h]
            ),
        )
        if isinstance(out, _Failed):
            return None
        if len(out) == 2 and out[1] is not None:
            self.hits["reply"] += 1
            return bytes(out[1])
        self.misses["reply"] += 1
        if len(self._pending) >= _PENDING_MAX:
            self._pending.pop(next(iter(self._pending)))
        self._pending[(tenant_h, request_h)] = out[0].decode() if out else ""
        return None

    async def put_reply(self, tenant_id: str, request_key: str, reply: bytes) -> None:
        tenant_h, request_h = _sha(tenant_id)[:32], _sha(request_key)
        expected = self._pending.pop((tenant_h, request_h), _ANY_GEN)
        key, prefix = self._gen_key(tenant_h), self._reply_prefix(tenant_h)
        args = (prefix, request_h, expected, reply, self._reply_ms, self._gen_ms)
        await self._run("reply", lambda: self._put_reply(keys=[key], args=args))

    async def invalidate_tenant(self, tenant_id: str) -> None:
        key = self._gen_key(_sha(tenant_id)[:32])
        await self._run("reply", lambda: self._invalidate(keys=[key], args=[self._gen_ms]))

    async def purge_tenant(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        """Erasure: bump the generation (no reply computed before can be stored after), then
        DELETE every reply key of the tenant (SCAN, every generation); nothing else of a version is
        cached. Unlike the other calls this one raises ``AdapterError`` on failure — after
        ``PURGE_TRIES`` tries: the client's timeouts are a query's (0.25 s), and a process busy
        for longer than that (a large shard swapped in) must not leave an erasure pending."""
        for attempt in range(1, PURGE_TRIES + 1):
            try:
                return await self._purge(tenant_id)
            except (redis.RedisError, OSError) as exc:
                if attempt == PURGE_TRIES:
                    raise AdapterError(
                        f"cannot purge the cached replies of tenant {tenant_id!r} "
                        f"({attempt} tries): {exc}"
                    ) from exc
                log.warning("purging the cached replies of %r: %s; trying again", tenant_id, exc)
                await asyncio.sleep(PURGE_PAUSE_S * attempt)
        raise AssertionError("unreachable")

    async def _purge(self, tenant_id: str) -> int:
        """One try: the generation bumped (again, harmless), then every reply key deleted."""
        tenant_h = _sha(tenant_id)[:32]
        pattern = (
            "".join("\\" + c if c in "\\*?[]" else c for c in self._reply_prefix(tenant_h)) + "*"
        )
        await self._invalidate(keys=[self._gen_key(tenant_h)], args=[self._gen_ms])
        deleted = 0
        batch: list[bytes] = []
        async for key in self._client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(await self._client.delete(*batch))
                batch = []
        if batch:
            deleted += int(await self._client.delete(*batch))
        return deleted

    async def close(self) -> None:
        try:
            await self._client.aclose()
        except (redis.RedisError, OSError) as exc:
            log.debug("closing the Redis cache client failed: %s", exc)

    # -- internals --------------------------------------------------------------------------

    def _emb_key(self, text: str) -> str:
        return self._emb_prefix + _sha(text)

    def _gen_key(self, tenant_h: str) -> str:
        return f"{self._ns}:gen:{tenant_h}"

    def _reply_prefix(self, tenant_h: str) -> str:
        return f"{self._ns}:reply:{tenant_h}:"

    async def _run(self, kind: str, call: Callable[[], Awaitable[T]]) -> T | _Failed:
        """``call()``, or ``_FAILED`` when the breaker is open or Redis fails (logged, counted)."""
        now = time.monotonic()
        if now < self._open_until:
            self.skipped[kind] += 1
            return _FAILED
        if not self._healthy:
            # Half-open: this call probes; concurrent ones keep skipping until it answers.
            self._open_until = now + self._breaker_s
        try:
            result = await call()
        except redis.ResponseError as exc:  # Redis answered: reachable, but this call failed
            self._healthy, self._open_until = True, 0.0
            self._report(kind, "error reply", exc)
            return _FAILED
        except _OUTAGE as exc:
            self._healthy = False
            self._open_until = time.monotonic() + self._breaker_s
            self._report(kind, "unavailable", exc)
            return _FAILED
        if not self._healthy:
            log.info("Redis cache reachable again")
        self._healthy = True
        self._open_until = 0.0
        return result

    def _report(self, kind: str, what: str, exc: BaseException) -> None:
        self.errors[kind] += 1
        now = time.monotonic()
        if now - self._last_warning >= _WARN_EVERY_S:
            self._last_warning = now
            log.warning(
                "Redis cache %s for %s (%s: %s); serving misses (next warning in %.0f s at most)",
                what,
                kind,
                type(exc).__name__,
                exc,
                _WARN_EVERY_S,
            )
        else:
            log.debug("Redis cache %s for %s: %r", what, kind, exc)
