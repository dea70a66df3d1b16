"""handle_rebuild: rebuild derived state from the Postgres ledger (``memstream replay``).

Postgres (``event_ledger`` + ``memory_versions``) is the source of truth; this module rebuilds
what derives from it, through the existing handlers:

- ``rebuild_index``: the live vector index. For each tenant: mark its versions pending, drop its
  shard / collection, index every UPSERT version again through the ``Indexer`` in batches of
  whole memories, then re-index any version whose point is still missing (a writer racing the
  drop, with a live Qdrant server).
- ``replay_ledger``: an audit copy (another schema, migrated) fed every ledger event of the
  scope through the ingest write path (``record_event``) with the ledger's position and its
  ``received_at`` as transaction time, in replay order. Pages of the ledger are recorded in
  ``WRITERS`` lanes split by memory (each memory's events in order), the next page once the
  whole page is in. Resumable: recording is idempotent on event_id, and a restart starts, per
  tenant, one page before the last event the copy holds (a killed run's lanes may have left
  holes in its last page). Vectors are indexed once every event is recorded, from what the copy
  marks pending (each version embedded once, with its final derived state).

Errors: ``Refused`` for a misuse found before anything changes; ``AdapterError`` otherwise.
Takes its dependencies (``RebuildTools``, built by ``services.bootstrap``) and reports through
``Feedback``; imports no driver, no adapter, no ops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent
from memstream.services.domain.validation import validate_event
from memstream.services.handlers.index import Indexer
from memstream.services.handlers.recording import record_event
from memstream.services.ports import (
    AdapterError,
    CopyMeta,
    Embedder,
    Ledger,
    LedgerEvent,
    LedgerKey,
    MemoryRepository,
    OffsetRange,
    Refused,
    ReplayScope,
    SilentSink,
    TopicReader,
    VectorIndex,
)

PAGE_MAX = 1024  # events per page of a ledger replay
WRITERS = 4  # concurrent lanes recording a page (split by memory: per-memory order kept)
START: LedgerKey = (datetime.min.replace(tzinfo=UTC), "", -1, -1, "", "")


@dataclass(frozen=True)
class RebuildTools:
    """What a rebuild needs from the composition root (``bootstrap.rebuild_tools``)."""

    open_ledger: Callable[[str], Awaitable[Ledger]]
    open_repo: Callable[[str, int], Awaitable[MemoryRepository]]  # (dsn, pool size)
    load_embedder: Callable[[], Embedder]  # slow: called in a thread
    dimension: Callable[[], int]  # the model's vector size, without loading it when possible
    live_index: Callable[[int], VectorIndex]
    copy_index: Callable[[Path, int], VectorIndex]  # Edge shards under a root
    schema_dsn: Callable[[str, str], str]  # (dsn, schema) → a DSN using that schema
    migrate: Callable[[str], object]
    decode: Callable[[bytes], Mapping[str, Any]]  # a MemoryEvent message → its record
    topic_reader: Callable[[str, str], TopicReader]  # (broker, topic)
    # (dsn, embedder, partial) → what records the embedder's encoder on the index once every
    # tenant is re-indexed; AdapterError for a partial re-index that would switch encoders.
    encoder_switch: Callable[[str, Embedder, bool], Awaitable[Callable[[], Awaitable[None]]]]


@dataclass(frozen=True)
class Feedback:
    """How a rebuild reports: finished lines, and progress bars (label, total) → advance."""

    say: Callable[[str], None]
    progress: Callable[[str, int | None], AbstractContextManager[Callable[[int], None]]]


@dataclass(frozen=True)
class Options:
    """One ``memstream replay`` run, validated by the CLI."""

    index: bool = False
    schema: str | None = None
    tenants: tuple[str, ...] | None = None
    until: datetime | None = None
    into_dsn: str | None = None
    into_vectors: Path | None = None
    no_vectors: bool = False
    verify: bool = False
    batch: int = 256
    from_topic: bool = False
    topic: str | None = None
    ranges: tuple[OffsetRange, ...] = ()
    into_live: bool = False

    @property
    def scope(self) -> ReplayScope:
        return ReplayScope(self.tenants, self.until)


@contextlib.asynccontextmanager
async def opened(tools: RebuildTools, dsn: str) -> AsyncIterator[Ledger]:
    ledger = await tools.open_ledger(dsn)
    try:
        yield ledger
    finally:
        await ledger.close()


# -- rebuilding the live index ---------------------------------------------------------------


async def rebuild_index(
    tools: RebuildTools,
    feedback: Feedback,
    source: str,
    tenants: tuple[str, ...] | None,
    batch: int,
) -> int:
    """Re-index every UPSERT version of ``tenants`` (all: None) with the configured encoder;
    returns how many. A change of encoder (other vectors than the index records) re-indexes
    every tenant, then is recorded; with ``tenants`` it is refused: the other tenants' vectors
    would not match."""
    embedder = await asyncio.to_thread(tools.load_embedder)
    record_encoder = await tools.encoder_switch(source, embedder, bool(tenants))
    repo = await tools.open_repo(source, 8)
    index = tools.live_index(embedder.dimension)
    indexer = Indexer(repo, index, embedder, SilentSink())
    started, done = time.monotonic(), 0
    try:
        async with opened(tools, source) as ledger:
            for tenant in await ledger.tenants(tenants):
                done += await _rebuild_tenant(ledger, index, indexer, tenant, batch, feedback)
        if not tenants:
            await record_encoder()
    finally:
        await index.close()
        await repo.close()
    elapsed = time.monotonic() - started
    feedback.say(f"replay --index: {done} versions indexed in {elapsed:.1f} s")
    return done


async def _rebuild_tenant(
    ledger: Ledger, index: VectorIndex, indexer: Indexer, tenant: str, batch: int, fb: Feedback
) -> int:
    # Pending first, then drop: a crash in between leaves Postgres saying "to index", never
    # "indexed" for a point that is gone.
    await ledger.reset_index(tenant)
    await index.drop_tenant(tenant)
    groups: list[list[tuple[str, str]]] = [[]]
    size = total = done = 0
    for key, count in await ledger.upsert_counts(tenant):
        if size >= batch:  # batches of whole memories, about ``batch`` versions each
            groups.append([])
            size = 0
        groups[-1].append((tenant, key))
        size, total = size + count, total + count
    with fb.progress(f"indexing {tenant}", total) as advance:
        for keys in groups:
            indexed = await indexer.index_keys(keys)
            done += indexed
            advance(indexed)
    # A point lost to a writer racing the drop (Qdrant server, live) is indexed once more.
    rows = await ledger.upsert_ids(tenant)
    missing = {vid for vid, _ in rows} - await index.point_ids(tenant)
    if missing:
        await ledger.mark_unindexed(sorted(missing))
        done += await indexer.index_keys(sorted({(tenant, k) for v, k in rows if v in missing}))
    return done


# -- replaying the ledger into an audit copy ---------------------------------------------------


async def prepare_copy(tools: RebuildTools, source: str, base: str, schema: str) -> str:
    """Create and migrate the copy's schema; refuse the live one. Returns the copy's DSN."""
    async with opened(tools, base) as ledger:
        await ledger.create_schema(schema)
    target = tools.schema_dsn(base, schema)
    async with opened(tools, source) as live, opened(tools, target) as copy:
        if await live.identity() == await copy.identity():
            raise Refused("replay", f"schema {schema} is the live one", "name another schema")
    await asyncio.to_thread(tools.migrate, target)
    return target


async def register_copy(src: Ledger, dst: Ledger, options: Options, root: Path | None) -> None:
    """Refuse a copy of another source; record this run's scope in the copy's parameters."""
    origin, meta = await src.identity(), await dst.read_meta()
    if meta is not None and meta.source != origin:
        raise Refused(
            "replay",
            f"schema {options.schema} is a copy of {meta.source}, not of {origin}",
            "replay into a fresh --into-schema",
        )
    tenants = options.tenants  # the copy's scope: every tenant, or those replayed so far
    if meta is not None:
        tenants = tuple(sorted({*meta.tenants, *tenants})) if tenants and meta.tenants else None
    # No root keeps the vectors the copy has (the adapter keeps a stored root over None).
    await dst.write_meta(CopyMeta(origin, tenants, options.until, str(root) if root else None))


async def replay_ledger(
    tools: RebuildTools, feedback: Feedback, source: str, options: Options, root: Path | None
) -> None:
    """Replay the ledger's scope into the copy ``options.schema`` (vectors under ``root``)."""
    assert options.schema is not None
    target = await prepare_copy(tools, source, options.into_dsn or source, options.schema)
    scope = options.scope
    async with opened(tools, source) as src, opened(tools, target) as dst:
        if options.tenants:
            await src.tenants(options.tenants)  # an unknown tenant is an error
        done = await dst.last_replayed()
        in_scope = [k for t, k in done.items() if not options.tenants or t in options.tenants]
        if options.until is not None and any(key[0] > options.until for key in in_scope):
            raise Refused(
                "replay",
                f"copy {options.schema} already holds events received after --until "
                f"{options.until.isoformat()}",
                "replay into a fresh --into-schema",
            )
        total = await src.count_to_replay(scope, done)
        # A killed run may have left holes in its last page (its lanes run side by side): feed
        # again from one page before the last event the copy holds (duplicates change nothing).
        if in_scope:
            back = await src.step_back(ReplayScope(options.tenants), max(in_scope), PAGE_MAX)
            done = {t: min(k, back) if back else START for t, k in done.items()}
        await register_copy(src, dst, options, root)
        already = await dst.count_events()
        resuming = f" (resuming: {already} events already in the copy)" if already else ""
        feedback.say(f"replay: {total} events to replay into {options.schema}{resuming}")
        started = time.monotonic()
        to_feed = await src.count_to_replay(scope, done)
        await _feed(tools, feedback, src, target, scope, done, to_feed, options.batch)
        elapsed = time.monotonic() - started
        await dst.keep_transaction_time()
    line = f"replay: {total} events replayed into {options.schema} in {elapsed:.1f} s"
    await finish_copy(tools, feedback, target, root, options.batch, line, total, elapsed)


async def finish_copy(
    tools: RebuildTools,
    feedback: Feedback,
    target: str,
    root: Path | None,
    batch: int,
    line: str,
    total: int,
    elapsed: float,
) -> None:
    """Index the copy's pending versions (unless it has no vectors) and report the figures."""
    line += f" ({total / max(elapsed, 1e-9):.0f} events/s)"
    if root is None:
        feedback.say(f"{line} · no vectors")
        return
    embedder = await asyncio.to_thread(tools.load_embedder)
    began = time.monotonic()
    indexed = await index_copy(tools, feedback, target, root, embedder, batch)
    spent = time.monotonic() - began
    feedback.say(
        f"{line} · {indexed} versions indexed in {spent:.1f} s into {root} · with vectors "
        f"{total / max(elapsed + spent, 1e-9):.0f} events/s"
    )


async def _feed(
    tools: RebuildTools,
    feedback: Feedback,
    src: Ledger,
    target: str,
    scope: ReplayScope,
    done: Mapping[str, LedgerKey],
    total: int,
    batch: int,
) -> None:
    """Record every event of the scope through the real write path: page by page in ledger
    order, each page by ``WRITERS`` concurrent lanes that split it by memory (so each memory's
    events keep their order), the next page only once the whole page is recorded."""
    repo = await tools.open_repo(target, WRITERS)
    cursor = START
    now = datetime.now(UTC)
    try:
        with feedback.progress("replaying", total) as advance:
            while rows := await src.page_to_replay(scope, done, cursor, min(batch, PAGE_MAX)):
                lanes: list[list[tuple[LedgerEvent, MemoryEvent]]] = [[] for _ in range(WRITERS)]
                for row in rows:
                    event = _validated(row, now)
                    lane = zlib.crc32(f"{event.tenant_id}|{event.memory_key}".encode())
                    lanes[lane % WRITERS].append((row, event))
                async with asyncio.TaskGroup() as group:
                    for items in lanes:
                        if items:
                            group.create_task(_record_lane(repo, items))
                advance(len(rows))
                cursor = rows[-1].key
    finally:
        await repo.close()


async def _record_lane(
    repo: MemoryRepository, items: list[tuple[LedgerEvent, MemoryEvent]]
) -> None:
    for row, event in items:
        await record_event(repo, event, row.payload, row.position, row.received_at)


async def index_copy(
    tools: RebuildTools, feedback: Feedback, target: str, root: Path, embedder: Embedder, batch: int
) -> int:
    """Index whatever the copy marks pending (this run's versions, or a killed run's), once
    every event is recorded: each version is embedded once, with its final derived state."""
    repo = await tools.open_repo(target, 8)
    index = tools.copy_index(root, embedder.dimension)
    indexer = Indexer(repo, index, embedder, SilentSink())
    done = 0
    try:
        async with opened(tools, target) as ledger:
            pending = await ledger.pending_count(None)
        with feedback.progress("indexing", pending) as advance:
            while indexed := await indexer.sweep(limit=batch):
                done += indexed
                advance(indexed)
    finally:
        await index.close()
        await repo.close()
    return done


def _validated(row: LedgerEvent, now: datetime) -> MemoryEvent:
    try:
        return validate_event(row.payload, now)
    except InvalidEvent as exc:
        raise AdapterError(
            f"ledger event {row.event_id!r} of {row.tenant_id!r} cannot be replayed: "
            f"{exc.reason}: {exc.detail}"
        ) from exc
