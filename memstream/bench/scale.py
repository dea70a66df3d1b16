"""``memstream bench scale``: what memstream's costs do as the store grows, one run.

A fresh embedded stack (PostgreSQL, Redis, Tansu unused) in a temporary data dir and, in this
process, the worker's own composition root (``bootstrap.build``: ingest and retrieval handlers,
indexer, rescorer, erasure, on the real Postgres and Qdrant Edge adapters). One tenant's store
grows through ``--sizes`` (each size adds to the last: ``scale_store``, real embeddings reused
across texts from a ``VectorCache``); at each size, in order:

1. bytes per memory: the database's size on disk, and the tenant's shard's;
2. query p50 / p95, idle: distinct questions through the retrieval handler (real model);
3. ingest: new events (real model) through the ingest handler and indexer: events/s and CPU
   ms per event (this process + PostgreSQL), outside the model = less the model's own;
4. query p50 / p95 under ingest: as many other questions while another lot is ingested;
5. the rescoring timer: the pass that catches up with the build (bounded in time), then the
   next one a period later (what the timer costs each period: the core share);
6. erasure of one customer (``SUBJECT_MEMORIES`` memories): transaction, vectors, compaction;
7. replay from the ledger into a copy schema (no vectors), bounded in time: events/s;
8. the process's RSS and memory maps.

Then ``--tenants`` small tenants (``--tenant-memories`` each), questions over them with a Zipf
popularity (s = 1.1), the first ones (cold) and, ``WARM_ROUNDS`` times as many questions later,
the measured ones (steady), beside the same questions all asked of one tenant; the shard budget
(``shard_budget``) and the maps and memory each open shard took. Nothing is asserted.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from memstream.bench import scale_measure as m
from memstream.bench.kit import synthetic_events, with_encoder
from memstream.bench.scale_store import (
    SUBJECT_MEMORIES,
    VectorCache,
    Writer,
    memory_events,
    pool_texts,
)
from memstream.ops.migrate import migrate
from memstream.ops.stack import EmbeddedStack
from memstream.services import bootstrap
from memstream.services.ports import SilentSink
from memstream.services.settings import Settings

err = Console(stderr=True, highlight=False)
TENANT = "scale"
# A tenant of the smallest size, written first and asked right after the grown tenant at every
# size: its latency is the same machine's at the same minute, so the growth's own cost can be
# read apart from the machine's drift over a run of half an hour.
REFERENCE = "scale-reference"
ERASE_BESIDE = 3_000  # questions at most asked during an erasure (the reference tenant, the erased)
ZIPF_S = 1.1


@dataclass(frozen=True)
class ScaleOptions:
    sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)
    tenants: int = 1_000
    tenant_memories: int = 5
    questions: int = 100
    ingest_events: int = 300
    pool: int = 2_000
    lanes: int = 4
    # The catch-up must end for the next pass to show the timer's steady cost (a bulk load of
    # 10^6 memories leaves ~225,000 open complaints due at once: 120 s did not end it at 10^6
    # with 16 parts on a slow VM, and the next pass measured the catch-up's rest).
    rescore_budget_s: float = 900.0
    replay_budget_s: float = 10.0
    build_wait_s: float = 600.0  # for the vector index builds before the idle questions


def say(line: str) -> None:
    err.print(f"[{time.strftime('%H:%M:%S')}] {line}", markup=False)


def fresh_events(tenant: str, count: int, label: str) -> list[dict[str, Any]]:
    """``count`` new memories whose texts are outside the cache's pool (the real model)."""
    raws = synthetic_events(tenant, count, seed=zlib.crc32(label.encode()) % 10_000)
    for raw in raws:
        raw["event_id"] = raw["memory_key"] = f"{label}-{raw['event_id']}"
        raw["content"] = f"{raw['content']} ({label})"
        raw["entity_id"] = f"N-{raw['entity_id']}"  # not one of the store's customers (erased)
    return raws


def run_scale(options: ScaleOptions) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-bench-scale-"))
    data_dir.chmod(0o755)  # the embedded PostgreSQL runs as another user
    base = Settings.from_env()
    settings = with_encoder(
        Settings(
            data_dir=data_dir,
            model_path=base.model_path,
            web_port=0,
            embed_threads=base.embed_threads,
            rescore_seconds=base.rescore_seconds,
            max_open_shards=base.max_open_shards,
            vector_parts=base.vector_parts,
            vector_build_from=base.vector_build_from,
        ),
        base.encoder,
    )
    stack = EmbeddedStack(settings, write_runtime=False)
    started = time.perf_counter()
    try:
        resolved = stack.start()
        assert resolved.postgres_dsn is not None
        migrate(resolved.postgres_dsn)
        document = asyncio.run(_run(resolved, options, data_dir))
    finally:
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    document["seconds"] = time.perf_counter() - started
    return document


def _model_alone(model: Any, count: int) -> tuple[float, float]:
    """The model alone on ``count`` new texts: texts/s and CPU ms per text (this process)."""
    texts = [r["content"] for r in fresh_events("model", count, "model-alone")]
    model.embed_sync(texts[:32])  # warm-up
    cpu, started = time.process_time(), time.perf_counter()
    model.embed_sync(texts)
    seconds, spent = time.perf_counter() - started, time.process_time() - cpu
    return count / seconds, spent * 1000 / count


async def _run(settings: Settings, options: ScaleOptions, data_dir: Path) -> dict[str, Any]:
    assert settings.postgres_dsn is not None
    # A small run needs fewer distinct texts and ingest events: a fifth and a tenth of its size.
    biggest = max(options.sizes)
    options = replace(
        options,
        pool=min(options.pool, max(200, biggest // 5)),
        ingest_events=min(options.ingest_events, max(50, biggest // 10)),
    )
    say(f"loading the model; embedding the cache's {options.pool} distinct texts …")
    model = await asyncio.to_thread(bootstrap.load_embedder, settings)
    model_rate, model_ms = await asyncio.to_thread(
        _model_alone, model, max(64, options.ingest_events)
    )
    pool = pool_texts(options.pool)
    cache = VectorCache(model, pool, await asyncio.to_thread(model.embed_sync, pool))
    empty_db = bootstrap.database_bytes(settings.postgres_dsn)
    rss0, maps0 = m.rss_and_maps()
    clock = m.Clock()
    container = await bootstrap.build(settings, SilentSink(), embedder=cache, clock=clock)
    cpu = m.Cpu(data_dir)
    writer = Writer(container.ingestor, container.indexer, lanes=options.lanes)
    timer = m.Timer(container, clock)
    sizes: list[dict[str, Any]] = []
    reference = min(options.sizes) if len(options.sizes) > 1 else 0
    try:
        if reference:
            say(f"the reference tenant: {reference} memories …")
            await writer.write(memory_events(REFERENCE, 0, reference, pool, datetime.now(UTC)))
            await m.catch_up(timer, cpu, settings.rescore_seconds, options.rescore_budget_s)
            empty_db = bootstrap.database_bytes(settings.postgres_dsn)  # the grown tenant's own
        # m:0 … m:built-1 written; current versions held; the reference tenant's size (0: none)
        state = {"built": 0, "current": 0, "reference": reference}
        for n, size in enumerate(sorted(options.sizes)):
            sizes.append(await _one_size(settings, container, writer, cpu, timer, options, n,
                                         state, size, pool, model_ms, empty_db))  # fmt: skip
        tenants = await _tenants(container, options, pool)
        # The index's own budget (what it enforced); another index's would count more maps.
        budget = getattr(container.index, "budget", None) or bootstrap.shard_budget(
            settings.max_open_shards
        )
    finally:
        await container.close()
    last = sizes[-1] if sizes else {}
    return {
        "sizes": sizes,
        "tenants": tenants,
        "ingest": {
            "events_per_s": last.get("ingest_events_per_s", 0.0),
            "model_alone_texts_per_s": model_rate,
            "cpu_ms_outside_model": last.get("ingest_cpu_ms_outside_model", 0.0),
            "cpu_ms_per_event": last.get("ingest_cpu_ms_per_event", 0.0),
            "model_cpu_ms_per_text": model_ms,
            "at_memories": last.get("memories", 0),
        },
        "budget": {
            "max_open_shards": budget.max_open,
            "by_maps": budget.by_maps,
            "by_ram": budget.by_ram,
            "max_map_count": budget.max_map_count,
            "describe": budget.describe(),
        },
        "reference": {"tenant": REFERENCE, "memories": reference},
        "process": {"rss_before_bytes": rss0, "maps_before": maps0},
        "method": {
            "vector_cache_texts": options.pool,
            "model_texts_outside_cache": cache.model_texts,
            "lanes": options.lanes,
            "dead_letters": writer.dead,
        },
    }


async def _one_size(
    settings: Settings, container: bootstrap.Container, writer: Writer, cpu: m.Cpu,
    timer: m.Timer, options: ScaleOptions, n: int, state: dict[str, int], size: int,
    pool: list[str], model_ms: float, empty_db: int,
) -> dict[str, Any]:  # fmt: skip
    assert settings.postgres_dsn is not None
    figures: dict[str, Any] = {"memories": size}
    built = state["built"]
    if size > built:
        say(f"{size}: writing memories {built} … {size - 1} through the ingest handler …")
        started = time.perf_counter()
        await writer.write(memory_events(TENANT, built, size, pool, datetime.now(UTC)))
        figures["build_s"] = time.perf_counter() - started
        figures["build_events_per_s"] = (size - built) / figures["build_s"]
        state["current"] += size - built
        state["built"] = size
    current = state["current"]  # earlier sizes' ingest lots in, their erased subjects out
    figures["memories_held"] = current
    figures["bytes_per_memory_pg"] = (
        bootstrap.database_bytes(settings.postgres_dsn) - empty_db
    ) / current
    index = container.index
    shard = index.shard_dir(TENANT) if hasattr(index, "shard_dir") else None
    figures["bytes_per_memory_shard"] = m.disk_bytes(shard) / current if shard else 0.0
    if hasattr(index, "builds_done"):  # the HNSW builds the writes started (a child process)
        say(f"{size}: waiting for the vector index builds (at most {options.build_wait_s:.0f} s) …")
        started = time.perf_counter()
        figures["index_built"] = await index.builds_done(options.build_wait_s)
        figures["index_build_wait_s"] = time.perf_counter() - started
        figures["index_builds"] = getattr(index, "builds_finished", 0)
        figures["index_last_build"] = dict(getattr(index, "last_build", {}))
    say(f"{size}: {options.questions} questions, idle …")
    asks = [(TENANT, q) for q in m.questions(options.questions, f"idle {size}")]
    stages: list[Mapping[str, float]] = []
    figures["query_p50_ms"], figures["query_p95_ms"] = m.p50_p95(
        await m.ask_all(container, asks, stages)
    )
    figures["query_stage_p50_ms"] = m.stage_medians(stages)
    if state["reference"]:
        beside = [(REFERENCE, q) for q in m.questions(options.questions, f"reference {size}")]
        figures["reference_query_p50_ms"], figures["reference_query_p95_ms"] = m.p50_p95(
            await m.ask_all(container, beside)
        )
    say(f"{size}: ingesting {options.ingest_events} new events (the real model) …")
    figures.update(
        await m.ingest(
            writer, cpu, fresh_events(TENANT, options.ingest_events, f"ingest{size}"), model_ms
        )
    )
    say(f"{size}: questions under ingest …")
    busy = await m.queries_under_ingest(
        container,
        writer,
        TENANT,
        fresh_events(TENANT, options.ingest_events, f"busy{size}"),
        m.questions(options.questions, f"busy {size}"),
    )
    figures["query_under_ingest_p50_ms"], figures["query_under_ingest_p95_ms"] = m.p50_p95(busy)
    figures["query_under_ingest_count"] = len(busy)
    current = state["current"] = current + 2 * options.ingest_events
    say(f"{size}: rescoring, catching up (at most {options.rescore_budget_s:.0f} s), next pass …")
    figures.update(
        await m.rescore(
            timer, cpu, settings.rescore_seconds, options.rescore_budget_s, current, 2 * n + 1
        )
    )
    say(f"{size}: erasing one customer ({SUBJECT_MEMORIES} memories) …")
    subject = f"customer:C-{(size - 1) // SUBJECT_MEMORIES - 1}"
    # Asked meanwhile, in turn: the reference tenant (is the worker answering others?) and the
    # tenant erased from (is its shard?).
    askers = [REFERENCE, TENANT] if state["reference"] else [TENANT]
    questions = m.questions(ERASE_BESIDE, f"erasure {size}")
    beside = [(askers[i % len(askers)], q) for i, q in enumerate(questions)]
    figures.update(await m.erase(container, TENANT, subject, beside))
    say(f"{size}: replay into a copy (at most {options.replay_budget_s:.0f} s) …")
    figures["replay_events_per_s"] = await m.replay(
        settings, TENANT, f"scale_copy_{n}", options.replay_budget_s
    )
    rss, maps = m.rss_and_maps()
    figures["worker_rss_bytes"], figures["worker_maps"] = rss, maps
    state["current"] -= figures["erase_versions"]
    left = " (left pending: see the log above)" if figures["erase_pending"] else ""
    say(f"{size}: query p95 {figures['query_p95_ms']:.1f} ms · erasure "
        f"{figures['erase_subject_s']:.2f} s{left} · RSS {rss / 2**20:.0f} MiB")  # fmt: skip
    return figures


WARM_ROUNDS = 5  # Zipf questions asked before the measured ones, in multiples of them


def zipf_tenants(count: int, draws: int, seed: int = 5) -> list[int]:
    """``draws`` tenant ranks (0 = the most asked) with probability ∝ 1 / (rank + 1) ** s."""
    weights = 1.0 / np.arange(1, count + 1) ** ZIPF_S
    rng = np.random.default_rng(seed)
    return [int(r) for r in rng.choice(count, size=draws, p=weights / weights.sum())]


async def _tenants(
    container: bootstrap.Container, options: ScaleOptions, pool: list[str]
) -> dict[str, Any]:
    count = options.tenants
    if count < 1:
        return {"count": 0, "query_p95_ms": 0.0, "one_tenant_query_p95_ms": 0.0}
    names = [f"t{j:05d}" for j in range(count)]
    say(f"{count} tenants × {options.tenant_memories} memories …")
    rss0, maps0 = m.rss_and_maps()
    open0 = getattr(container.index, "open_shards", 0)
    started = time.perf_counter()
    raws = [
        raw
        for name in names
        for raw in memory_events(name, 0, options.tenant_memories, pool, datetime.now(UTC))
    ]
    # One lane: a tenant's few events arrive together (in four lanes each tenant's shard is
    # written four times, each write flushed: the same store, four times the shard writes).
    await Writer(container.ingestor, container.indexer, lanes=1).write(raws)
    build_s = time.perf_counter() - started
    rss1, maps1 = m.rss_and_maps()
    opened = max(1, getattr(container.index, "open_shards", 0) - open0)
    say(f"{count} tenants: questions, Zipf over the tenants, then all of one tenant …")
    # The first questions after the build find the shards the build opened last (the least
    # asked tenants, built last) and every popular tenant's closed: "cold". Then the Zipf draws
    # go on (``WARM_ROUNDS`` times as many), and the last ``questions`` are measured: the
    # steady state, where the popular tenants' shards stay open and the rest are reopened.
    texts = m.questions(options.questions * (WARM_ROUNDS + 1), "tenants")
    ranks = zipf_tenants(count, len(texts))
    stages: list[Mapping[str, float]] = []
    zipf = await m.ask_all(
        container, [(names[r], t) for r, t in zip(ranks, texts, strict=True)], stages
    )
    cold, steady = zipf[: options.questions], zipf[-options.questions :]
    # Where the slowest tenth of the measured questions spent their time, beside the rest.
    order = sorted(range(len(zipf) - len(steady), len(zipf)), key=lambda i: zipf[i])
    tenth = max(1, len(order) // 10)
    one = await m.ask_all(container, [(names[0], t + " again") for t in texts[-len(steady) :]])
    p50, p95 = m.p50_p95(steady)
    cold50, cold95 = m.p50_p95(cold)
    one50, one95 = m.p50_p95(one)
    return {
        "count": count,
        "query_p95_ms": p95,
        "one_tenant_query_p95_ms": one95,
        "query_p50_ms": p50,
        "one_tenant_query_p50_ms": one50,
        "cold_query_p50_ms": cold50,
        "cold_query_p95_ms": cold95,
        "asked_before_measuring": len(zipf) - len(steady),
        "stage_p50_ms": m.stage_medians([stages[i] for i in order[:-tenth]]),
        "slowest_tenth_stage_p50_ms": m.stage_medians([stages[i] for i in order[-tenth:]]),
        "distinct_tenants_asked": len(set(ranks)),
        "build_s": build_s,
        "open_shards": getattr(container.index, "open_shards", 0),
        "max_open_shards": getattr(container.index, "max_open", 0),
        "maps_per_open_shard": (maps1 - maps0) / opened,
        "rss_per_open_shard_bytes": (rss1 - rss0) / opened,
    }
