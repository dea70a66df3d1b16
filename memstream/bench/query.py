"""``memstream bench query``: retrieval latency through Kafka next to embed + search alone.

One run, this machine: a fresh embedded stack, one worker process, N memories for one tenant
(published and ingested), then
- uncached: distinct questions, one at a time, client send → reply received (MemoryClient);
- cached: one question repeated (the reply cache answers);
- with ``--via-http``, both again through a ``memstream gateway`` (bench_http);
- the server's time per stage (the replies' ``latency_ms``);
- under ingest: as many other distinct questions, one at a time, while a burst of events
  (``--burst``, default 5,000) is being ingested into the same tenant; only the answers that came
  while the burst was still being ingested count;
- alone: embedding the same questions plus one Qdrant Edge top-10 search, in-process, once the
  worker has released the shard.
Each encoder runs on a stack of its own (an index holds one encoder's vectors), side by side.
Prints p50 / p95 / p99; nothing is asserted.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memstream.bench.kit import (
    publish_events,
    start_worker,
    stop_worker,
    synthetic_events,
    with_encoder,
)
from memstream.ops.ingest_status import wait_for
from memstream.ops.stack import EmbeddedStack
from memstream.ops.up import prepare
from memstream.services import bootstrap
from memstream.services.ports import VectorFilter
from memstream.services.settings import Settings
from memstream.streams.client import MemoryClient

out = Console(highlight=False)

QUESTIONS = [
    "what did customer C-{n} return?",
    "is the complaint of C-{n} about the {item} resolved?",
    "which {item} did C-{n} order last?",
    "did C-{n} ask for a refund on the {item}?",
]
ITEMS = ["XR-500 headphones", "X1 phone", "trail shoes", "coffee grinder", "USB-C charger"]


def questions(count: int) -> list[str]:
    return [
        QUESTIONS[i % len(QUESTIONS)].format(n=i + 1, item=ITEMS[i % len(ITEMS)])
        for i in range(count)
    ]


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(samples, n=100)
    return statistics.median(samples), cuts[94], cuts[98]


async def _ask_all(
    settings: Settings, tenant: str, texts: list[str]
) -> tuple[list[float], list[dict[str, Any]]]:
    assert settings.broker is not None
    times, replies = [], []
    from memstream.ops.identity import credential_for

    key = credential_for(settings, "agent", tenant=tenant)
    async with MemoryClient(settings.broker, settings.topics, timeout=30, credential=key) as client:
        await client.retrieve("warm-up", tenant, force=True)
        for text in texts:
            started = time.perf_counter()
            reply = await client.retrieve(text, tenant, force=True, limit=10)
            times.append((time.perf_counter() - started) * 1000)
            replies.append(reply)
    return times, replies


def _burst_done(settings: Settings, tenant: str, target: int, stop: threading.Event) -> None:
    """Sets ``stop`` once ``target`` versions of ``tenant`` are indexed (one count a second)."""
    assert settings.postgres_dsn is not None
    with bootstrap.event_status(settings.postgres_dsn) as status:
        while not stop.is_set():
            if status.indexed(tenant) >= target:
                stop.set()
                return
            time.sleep(1.0)


async def _ask_under_ingest(
    settings: Settings, tenant: str, texts: list[str], done: threading.Event
) -> tuple[list[float], list[dict[str, Any]]]:
    """Questions one at a time until ``done`` (the burst is in) or ``texts`` run out; only the
    answers received before ``done`` count."""
    from memstream.ops.identity import credential_for
    from memstream.streams.client import MemoryClient

    assert settings.broker is not None
    times, replies = [], []
    key = credential_for(settings, "agent", tenant=tenant)
    async with MemoryClient(settings.broker, settings.topics, timeout=60, credential=key) as client:
        for text in texts:
            if done.is_set():
                break
            started = time.perf_counter()
            reply = await client.retrieve(text, tenant, force=True, limit=10)
            if not done.is_set():
                times.append((time.perf_counter() - started) * 1000)
                replies.append(reply)
    return times, replies


async def _alone(settings: Settings, tenant: str, texts: list[str]) -> list[float]:
    embedder = bootstrap.load_embedder(settings)
    index = bootstrap.build_index(settings, embedder.dimension)
    times = []
    try:
        embedder.embed_sync(["warm-up"])
        await index.search(tenant, embedder.embed_sync(["warm-up"])[0], VectorFilter(), 10)
        for text in texts:
            started = time.perf_counter()
            vector = embedder.embed_sync([text])[0]
            await index.search(tenant, vector, VectorFilter(), 10)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await index.close()
    return times


async def _security(settings: Settings, tenant: str, count: int) -> list[float]:
    """What identity costs one request, both sides: the client seals and signs, the worker's
    guard verifies (real credential store, real nonce store) and opens, seals the reply, the
    client opens it."""
    from memstream.ops.identity import credential_for
    from memstream.schemas import codec, envelope
    from memstream.services.handlers.guard import Guard, Opened
    from memstream.services.ports import Position

    assert settings.postgres_dsn is not None and settings.redis_url is not None
    credential = envelope.Credential.parse(credential_for(settings, "agent", tenant=tenant))
    signer = credential.signer()
    store = await bootstrap.credential_store(settings, bootstrap.utcnow)
    nonces = bootstrap.nonce_store(settings.redis_url)
    replies = settings.topics.replies
    guard = Guard(
        store,
        nonces,
        bootstrap.service_key(settings),
        {replies: settings.topics.reply_partitions},
        replies,
        lambda data: codec.decode("RetrievalRequest", data),
        bootstrap.utcnow,
    )
    reply = codec.encode(
        "RetrievalReply",
        {"request_id": "x", "status": "ok", "gate": {"decision": "forced", "reason": "r"},
         "results": [], "latency_ms": {}, "error": None, "served_at": bootstrap.utcnow()},
    )  # fmt: skip
    times = []
    try:
        for n in range(count + 1):
            started = time.perf_counter()
            rid = uuid.uuid4().hex
            plain = codec.encode(
                "RetrievalRequest",
                {"request_id": rid, "tenant_id": tenant, "query": QUESTIONS[0], "user_id": None,
                 "anchors": [], "context": {"active_task": None, "active_entities": [],
                 "time_window": None}, "as_of": None, "known_at": None, "limit": 10,
                 "force": True, "reply_to": replies, "reply_partition": 0, "deadline_ms": None},
            )  # fmt: skip
            mine, keys = envelope.client_session(credential.service_public)
            value = envelope.seal(keys.request, plain, envelope.REQUEST_AAD)
            mine_text = envelope.b64(mine)
            token = envelope.sign(
                credential, signer, "request", value, rid, int(time.time() * 1000) + 60_000,
                envelope.request_binding(mine_text.encode(), replies, "0"),
            )  # fmt: skip
            headers = {
                "correlation_id": rid.encode(),
                "reply_to": replies.encode(),
                "reply_partition": b"0",
                envelope.AUTH_HEADER: token.encode(),
                envelope.REPLY_KEY_HEADER: mine_text.encode(),
            }
            opened = await guard.open_request(value, headers, Position("bench", 0, n))
            if not isinstance(opened, Opened):
                raise RuntimeError(f"the guard refused an honest request: {opened}")
            sealed = guard.seal_reply(opened.keys, rid, reply)
            envelope.open_sealed(keys.reply, sealed, envelope.reply_aad(rid))
            if n:  # the first one warms the key cache
                times.append((time.perf_counter() - started) * 1000)
    finally:
        await nonces.close()
        await store.close()
    return times


def _over_http(settings: Settings, tenant: str, texts: list[str]) -> dict[str, Any]:
    from memstream.bench.http import ask_over_http, start_gateway

    out.print(f"through the HTTP gateway: {len(texts)} other questions, then one repeated …")
    gateway, url, key = start_gateway(settings, tenant)
    fresh = questions(2 * len(texts))[len(texts) :]  # not in the reply cache yet
    try:
        return {
            "http_uncached": percentiles(ask_over_http(url, key, fresh)),
            "http_cached": percentiles(ask_over_http(url, key, [texts[0]] * len(texts))),
        }
    finally:
        gateway.terminate()
        gateway.wait(30)


def bench_query(
    memories: int, count: int, encoders: list[str], burst: int, *, via_http: bool = False
) -> list[dict[str, Any]]:
    return [_bench_one(memories, count, e, burst, via_http=via_http) for e in encoders]


def _bench_one(
    memories: int, count: int, encoder: str, burst: int, *, via_http: bool
) -> dict[str, Any]:

    data_dir = Path(tempfile.mkdtemp(prefix="memstream-bench-"))
    data_dir.chmod(0o755)
    base = Settings.from_env()
    settings = with_encoder(
        Settings(
            data_dir=data_dir,
            model_path=base.model_path,
            web_port=0,
            fetch_wait_ms=base.fetch_wait_ms,
            fetch_wait_active_ms=base.fetch_wait_active_ms,
            embed_threads=base.embed_threads,
        ),
        encoder,
    )
    tenant = f"bench-{uuid.uuid4().hex[:6]}"
    stack = EmbeddedStack(settings)
    resolved = stack.start()
    figures: dict[str, Any] = {
        "encoder": encoder, "memories": memories, "questions": count, "burst": burst
    }  # fmt: skip
    try:
        prepare(resolved)
        worker = start_worker(resolved)
        try:
            out.print(f"{encoder}: ingesting {memories} memories …")
            raws = synthetic_events(tenant, memories)
            for raw in raws:  # one version each: N memories
                raw["memory_key"] = raw["event_id"]
            publish_events(resolved, raws)
            status = wait_for(
                resolved,
                [(tenant, r["event_id"]) for r in raws],
                timeout=3600,
                console=Console(stderr=True),
                poll=0.5,
            )
            if status.pending:
                raise RuntimeError(f"{len(status.pending)} events not ingested")
            texts = questions(count)
            out.print(f"{encoder}: {count} distinct questions, then one repeated {count} times …")
            uncached, replies = asyncio.run(_ask_all(resolved, tenant, texts))
            cached, cached_replies = asyncio.run(_ask_all(resolved, tenant, [texts[0]] * count))
            if via_http:
                figures.update(_over_http(resolved, tenant, texts))
            out.print(f"{encoder}: questions while {burst} events are ingested …")
            busy, busy_replies = _under_ingest(resolved, tenant, memories, burst, count)
        finally:
            stop_worker(worker)
        stages: dict[str, list[float]] = defaultdict(list)
        for reply in replies:
            for stage, ms in reply["latency_ms"].items():
                stages[stage].append(ms)
        figures["uncached"] = percentiles(uncached)
        figures["cached"] = percentiles(cached)
        figures["under_ingest"] = percentiles(busy)
        figures["under_ingest_count"] = len(busy)
        figures["under_ingest_embed"] = percentiles(
            [r["latency_ms"].get("embed", 0.0) for r in busy_replies]
        )
        figures["cache_hits"] = sum(1 for r in cached_replies if r["latency_ms"].get("cache_hit"))
        figures["stages"] = {k: statistics.median(v) for k, v in stages.items()}
        figures["alone"] = percentiles(asyncio.run(_alone(resolved, tenant, texts)))
        figures["security"] = percentiles(asyncio.run(_security(resolved, tenant, count)))
    finally:
        stack.stop()
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)
    return figures


def _under_ingest(
    settings: Settings, tenant: str, memories: int, burst: int, count: int
) -> tuple[list[float], list[dict[str, Any]]]:
    """A burst of new memories published into the tenant while questions are asked."""
    raws = synthetic_events(tenant, burst, seed=3)
    for raw in raws:
        raw["event_id"] = f"burst-{raw['event_id']}"
        raw["memory_key"] = raw["event_id"]
    done = threading.Event()
    publisher = threading.Thread(target=publish_events, args=(settings, raws))
    watcher = threading.Thread(target=_burst_done, args=(settings, tenant, memories + burst, done))
    publisher.start()
    watcher.start()
    try:
        time.sleep(1.0)  # the burst has reached the worker
        # As many questions as idle, none asked before; they stop early if the burst is in.
        texts = [q.replace("C-", "C-9") for q in questions(count)]
        return asyncio.run(_ask_under_ingest(settings, tenant, texts, done))
    finally:
        publisher.join()
        done.set()
        watcher.join()


def print_query(runs: list[dict[str, Any]]) -> None:
    first = runs[0]
    table = Table(
        title=f"memstream bench query · {first['memories']} memories, "
        f"{first['questions']} questions; under ingest: a burst of {first['burst']} events",
        title_justify="left",
    )
    table.add_column("path (p50 / p95 / p99 ms)")
    for figures in runs:
        table.add_column(figures["encoder"], justify="right")
    for name, key in (
        ("end to end, uncached, idle (send → reply)", "uncached"),
        ("end to end, uncached, under ingest", "under_ingest"),
        ("  its embed stage (server)", "under_ingest_embed"),
        ("end to end, repeated request (reply cache)", "cached"),
        ("HTTP gateway, uncached (POST → JSON reply)", "http_uncached"),
        ("HTTP gateway, repeated request (reply cache)", "http_cached"),
        ("embed query + one vector search, alone", "alone"),
        ("identity: sign + seal, verify + open, seal + open reply", "security"),
    ):
        if key not in first:
            continue
        table.add_row(name, *("{:.1f} / {:.1f} / {:.1f}".format(*f[key]) for f in runs))
    table.add_row("questions answered under ingest", *(str(f["under_ingest_count"]) for f in runs))
    table.add_row(
        "under ingest p95 / idle p95",
        *(f"{f['under_ingest'][1] / f['uncached'][1]:.2f}" for f in runs),
    )
    table.add_row(
        "uncached p95 / alone p95", *(f"{f['uncached'][1] / f['alone'][1]:.2f}" for f in runs)
    )
    table.add_row("cache hits", *(f"{f['cache_hits']}/{f['questions']}" for f in runs))
    out.print(table)
    for figures in runs:
        out.print(
            f"{figures['encoder']}: server stages, median ms: "
            + ", ".join(f"{k} {v:.2f}" for k, v in figures["stages"].items())
        )
