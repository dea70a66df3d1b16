"""``memstream replay``: rebuild derived state from the Postgres ledger, and verify it.

(``--from-topic`` reads the events topic by explicit offset ranges instead: ``ops.replay_topic``.)

Postgres (``event_ledger`` + ``memory_versions``) is the source of truth; this module rebuilds
what derives from it and checks the result (checksums: ``memstream.ops.replay_verify``).

- ``--index``: rebuild the live vector index. For each tenant: mark its versions pending
  (``indexed_at = NULL``), drop its shard / collection, index every UPSERT version again through
  the ``Indexer`` (embedding included) in batches of memories, then re-index any version whose
  point is still missing. Qdrant Edge opens a shard in one process only, so with Edge shards it
  must run while no worker holds them: a stack running on the data dir is refused (stop
  ``memstream up`` first; with no stack and no ``MEMSTREAM_POSTGRES_DSN`` the embedded
  PostgreSQL is started alone for the run). With a Qdrant server it can run live.
- ``--into-schema NAME``: replay the ledger into an audit copy: schema NAME in the same database
  (or ``--into-dsn``), migrated, fed every ledger event through the real write path
  (``PostgresMemoryRepository.record``) with the ledger's topic/partition/offset as position and
  its ``received_at`` as transaction time, ordered by (received_at, topic, partition, offset,
  tenant_id, event_id) with ``COLLATE "C"``; ``--until`` keeps events received up to then.
  Vectors go to a separate Qdrant Edge root (``--into-vectors``, default
  ``DATA_DIR/replay-NAME``) unless ``--no-vectors``. The copy keeps the source's received_at in
  its own ledger and its parameters in a ``replay_meta`` table.
- Pages of the ledger are recorded in ``WRITERS`` lanes split by memory (each memory's events in
  order), the next page once the whole page is in.
- Resumable: ``record`` is idempotent on event_id, and a restart starts, per tenant, one page
  before the last event the copy holds (its own ledger joined to its versions, whose recorded_at
  is the source's received_at): a killed run's lanes may have left holes in its last page.
  Vectors are written once every event is recorded, from what the copy marks pending (so each
  version is embedded once, with its final is_current / valid_to, and a killed run's leftovers
  are indexed by the next). Re-running later catches the copy up.
- ``--verify``: only compare (exit 0 when identical, 1 otherwise): the copy against the live
  state (as known at ``--until``), or with ``--index`` the live index against Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress

from memstream.ops import replay_verify as rv
from memstream.ops.migrate import MigrationError, migrate
from memstream.ops.stack import EmbeddedStack, StackError, read_runtime
from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.model import MemoryEvent
from memstream.services.domain.validation import parse_timestamp, validate_event
from memstream.services.handlers.index import Indexer
from memstream.services.ports import (
    AdapterError,
    DeadLetter,
    Embedder,
    Position,
    Recorded,
    VectorIndex,
)
from memstream.services.settings import Settings

out = rv.out
err = Console(stderr=True, highlight=False, soft_wrap=True)

_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_KEY = 'l.received_at, l.topic COLLATE "C", l."partition", l."offset", l.tenant_id COLLATE "C",' \
    ' l.event_id COLLATE "C"'  # fmt: skip
_KEY_NAMES = ("at", "topic", "part", "off", "tenant", "event")
_ROW_KEY = ("received_at", "topic", "partition", "offset", "tenant_id", "event_id")
_START = (datetime.min.replace(tzinfo=UTC), "", -1, -1, "", "")
# The events still to replay: in scope, and after the last one the copy holds of their tenant.
_SCOPE = (
    " FROM event_ledger l LEFT JOIN unnest(%(d_tenant)s::text[], %(d_at)s::timestamptz[],"
    " %(d_topic)s::text[], %(d_part)s::int[], %(d_off)s::bigint[], %(d_event)s::text[])"
    ' AS d(tenant_id, received_at, topic, "partition", "offset", event_id)'
    " ON d.tenant_id = l.tenant_id"
    " WHERE (%(tenants)s::text[] IS NULL OR l.tenant_id = ANY(%(tenants)s::text[]))"
    " AND (%(until)s::timestamptz IS NULL OR l.received_at <= %(until)s)"
    " AND l.erased_at IS NULL"  # erased events are never replayed (their payload is gone)
    " AND (d.tenant_id IS NULL OR (" + _KEY + ') > (d.received_at, d.topic, d."partition",'
    ' d."offset", d.tenant_id, d.event_id))'
)
_PAGE = (
    'SELECT l.tenant_id, l.event_id, l.payload, l.received_at, l.topic, l."partition", l."offset"'
    + _SCOPE
    + " AND l.received_at >= %(c_at)s AND (" + _KEY + ") > (%(c_at)s, %(c_topic)s, %(c_part)s,"
    " %(c_off)s, %(c_tenant)s, %(c_event)s) ORDER BY " + _KEY + " LIMIT %(limit)s"
)  # fmt: skip
# In the copy, a version's recorded_at is the source's received_at of its event.
_LAST_DONE = (
    'SELECT DISTINCT ON (l.tenant_id) m.recorded_at, l.topic, l."partition", l."offset",'
    " l.tenant_id, l.event_id FROM event_ledger l JOIN memory_versions m USING (version_id)"
    ' ORDER BY l.tenant_id, m.recorded_at DESC, l.topic COLLATE "C" DESC, l."partition" DESC,'
    ' l."offset" DESC, l.event_id COLLATE "C" DESC'
)


_STEP_BACK = (
    "SELECT " + _KEY + " FROM event_ledger l"
    " WHERE (%(tenants)s::text[] IS NULL OR l.tenant_id = ANY(%(tenants)s::text[]))"
    " AND (" + _KEY + ') <= (%(m_at)s, %(m_topic)s, %(m_part)s, %(m_off)s, %(m_tenant)s,'
    " %(m_event)s) ORDER BY " + _KEY.replace(",", " DESC,") + " DESC OFFSET %(page)s LIMIT 1"
)  # fmt: skip
PAGE_MAX = 1024  # events per page of a ledger replay
WRITERS = 4  # concurrent lanes recording a page (split by memory: per-memory order kept)


def _params(options: Options, done: dict[str, Any]) -> dict[str, Any]:
    """The scope's query parameters: ``done`` is, per tenant, the last event not to replay."""
    return {
        "tenants": list(options.tenants) if options.tenants else None,
        "until": options.until,
        "page": PAGE_MAX,
        **{f"d_{n}": [k[i] for k in done.values()] for i, n in enumerate(_KEY_NAMES)},
    }


@dataclass(frozen=True)
class Options:
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
    offsets: tuple[str, ...] = ()
    into_live: bool = False


def options_from(args: Any) -> Options:
    """The CLI's arguments as Options; a misuse raises StackError (one line, exit 2)."""
    try:
        until = parse_timestamp(args.until) if args.until is not None else None
    except ValueError as exc:
        raise StackError(
            "replay", f"--until {args.until!r} is not an ISO time with a timezone ({exc})",
            "write it like 2026-03-01T12:00:00Z",
        ) from None  # fmt: skip
    copy_only = [flag for flag, value in (
        ("--until", args.until), ("--into-dsn", args.into_dsn),
        ("--into-vectors", args.into_vectors), ("--no-vectors", args.no_vectors or None),
    ) if value is not None]  # fmt: skip
    if (args.index or args.into_live) and copy_only:
        raise StackError("replay", f"{copy_only[0]} is for --into-schema", "drop it")
    topic_only = [flag for flag, value in (
        ("--topic", args.topic), ("--offsets", args.offsets or None),
        ("--into-live", args.into_live or None),
    ) if value is not None]  # fmt: skip
    if topic_only and not args.from_topic:
        raise StackError("replay", f"{topic_only[0]} needs --from-topic", "add --from-topic")
    if args.from_topic and args.index:
        raise StackError(
            "replay", "--from-topic rebuilds versions, --index only the vector index",
            "use --from-topic with --into-schema NAME or --into-live",
        )  # fmt: skip
    if args.from_topic and args.verify and args.into_live:
        raise StackError("replay", "--verify compares an audit copy", "use --into-schema NAME")
    if args.into_schema is not None and not _SCHEMA.match(args.into_schema):
        raise StackError(
            "replay", f"--into-schema {args.into_schema!r} is not a plain lower-case SQL name",
            "use letters, digits and underscores, starting with a letter",
        )  # fmt: skip
    if args.batch < 1:
        raise StackError("replay", f"--batch {args.batch} is not positive", "use e.g. 256")
    options = Options(
        args.index, args.into_schema, tuple(args.tenant) if args.tenant else None, until,
        args.into_dsn, args.into_vectors, args.no_vectors, args.verify, args.batch,
        args.from_topic, args.topic, tuple(args.offsets or ()), args.into_live,
    )  # fmt: skip
    if args.from_topic:
        from memstream.ops.replay_topic import parse_ranges

        parse_ranges(options.offsets)  # a bad range is refused before anything starts
    return options


class Silent:
    """A ChangeSink that announces nothing: a rebuild changes derived state, no memory."""

    async def versioned(self, recorded: Recorded) -> None:
        return None

    async def dead_lettered(self, letter: DeadLetter) -> None:
        return None

    async def scored(self, version: Any, scores: Any, at: datetime) -> None:
        return None


def replay(settings: Settings, options: Options) -> int:
    """The CLI entry: a failure ends with one line (``memstream: replay: …``) and exit 1."""
    try:
        with _postgres(settings, live_index=options.index) as live:
            return asyncio.run(_run(live, options))
    except (AdapterError, MigrationError, psycopg.Error) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        err.print(f"memstream: replay: {first}", markup=False)
        return 1


async def _run(settings: Settings, options: Options) -> int:
    if options.index and options.verify:
        return await rv.verify_index(settings, options.tenants)
    if options.index:
        await rebuild_index(settings, options.tenants, options.batch)
        return 0
    if options.from_topic and not options.verify:
        from memstream.ops.replay_topic import replay_topic

        await replay_topic(settings, options)
        return 0
    assert options.schema is not None
    if options.verify:
        return await rv.verify_copy(
            settings, options.schema, into_dsn=options.into_dsn,
            into_vectors=options.into_vectors, tenants=options.tenants, until=options.until,
        )  # fmt: skip
    await replay_ledger(settings, options)
    return 0


@contextlib.contextmanager
def _postgres(settings: Settings, *, live_index: bool) -> Iterator[Settings]:
    """``settings`` with a Postgres DSN: set, from the stack running on the data dir, or the
    embedded PostgreSQL started alone for this command (then no worker holds the shards)."""
    info = read_runtime(settings.data_dir)
    if live_index and info is not None and settings.qdrant_url is None:
        raise StackError(
            "replay --index",
            f"the stack running on {settings.data_dir} (pid {info.get('pid')}) holds the Qdrant "
            f"Edge shards in {settings.vector_root}",
            "stop `memstream up` first (replay then starts its PostgreSQL alone), or use a "
            "Qdrant server (MEMSTREAM_QDRANT_URL)",
        )
    if info is not None:  # a running stack's broker too (replay --from-topic)
        settings = settings.with_endpoints(broker=info.get("broker"))
    if settings.postgres_dsn is not None:
        yield settings
    elif info is not None:
        yield settings.with_endpoints(postgres_dsn=info["postgres_dsn"])
    elif (settings.data_dir / "postgres").is_dir():
        only = _PostgresOnly(replace(settings, broker="-", redis_url="-"), write_runtime=False)
        with only as started:
            yield replace(settings, postgres_dsn=started.postgres_dsn)
    else:
        raise StackError(
            "replay",
            f"MEMSTREAM_POSTGRES_DSN is unset and {settings.data_dir} holds no PostgreSQL",
            "set MEMSTREAM_POSTGRES_DSN, or MEMSTREAM_DATA_DIR to the stack's data dir",
        )


class _PostgresOnly(EmbeddedStack):
    """The embedded stack's PostgreSQL alone (under the stack's lock), for offline rebuilds."""

    def check(self) -> dict[str, str]:
        from memstream.ops.health import check_postgres

        assert self.endpoints is not None
        return {"postgres": check_postgres(self.endpoints.postgres_dsn)}


def progress_bar() -> Progress:
    return Progress(*Progress.get_default_columns(), MofNCompleteColumn(), console=err)


# -- rebuilding the live index ---------------------------------------------------------------


async def rebuild_index(settings: Settings, tenants: Sequence[str] | None, batch: int) -> None:
    """Re-index ``tenants`` (default every one) with the configured encoder. A change of
    encoder (other vectors than the index records) re-indexes every tenant, then is recorded;
    with ``tenants`` it is refused: the other tenants' vectors would not match."""
    from memstream.services.adapters.postgres_encoder import PostgresIndexEncoder
    from memstream.services.bootstrap import index_encoder

    assert settings.postgres_dsn is not None
    embedder = await asyncio.to_thread(rv.load_embedder, settings)
    repo = await PostgresMemoryRepository.connect(settings.postgres_dsn)
    encoders = PostgresIndexEncoder(repo.pool)
    current = index_encoder(settings, embedder)
    recorded = await encoders.recorded()
    if tenants and recorded is not None and not recorded.same_vectors(current):
        await repo.close()
        raise AdapterError(
            f"the index holds {recorded.describe()}, the encoder now writes "
            f"{current.describe()}: re-index every tenant (drop --tenant) to switch"
        )
    index = rv.live_index(settings, embedder.dimension)
    indexer = Indexer(repo, index, embedder, Silent())
    started, done = time.monotonic(), 0
    try:
        async with rv.connect(settings.postgres_dsn) as conn:
            for tenant in await rv.tenants_of(conn, tenants):
                done += await _rebuild_tenant(conn, index, indexer, tenant, batch)
        if not tenants:
            await encoders.record(current, replace=True)
    finally:
        await index.close()
        await repo.close()
    elapsed = time.monotonic() - started
    out.print(f"replay --index: {done} versions indexed in {elapsed:.1f} s", markup=False)


async def _rebuild_tenant(
    conn: psycopg.AsyncConnection[Any],
    index: VectorIndex,
    indexer: Indexer,
    tenant: str,
    batch: int,
) -> int:
    # Pending first, then drop: a crash in between leaves Postgres saying "to index", never
    # "indexed" for a point that is gone.
    await conn.execute(
        "UPDATE memory_versions SET indexed_at = NULL, index_dirty = false WHERE tenant_id = %s",
        (tenant,),
    )
    await index.drop_tenant(tenant)
    cur = await conn.execute(
        "SELECT memory_key, count(*) FROM memory_versions WHERE tenant_id = %s AND op = 'UPSERT'"
        ' AND erased_at IS NULL GROUP BY memory_key ORDER BY memory_key COLLATE "C"',
        (tenant,),
    )
    groups: list[list[tuple[str, str]]] = [[]]
    size = total = done = 0
    for key, count in await cur.fetchall():
        if size >= batch:  # batches of whole memories, about ``batch`` versions each
            groups.append([])
            size = 0
        groups[-1].append((tenant, key))
        size, total = size + count, total + count
    with progress_bar() as progress:
        bar = progress.add_task(f"indexing {tenant}", total=total)
        for keys in groups:
            indexed = await indexer.index_keys(keys)
            done += indexed
            progress.advance(bar, indexed)
    # A point lost to a writer racing the drop (Qdrant server, live) is indexed once more.
    cur = await conn.execute(
        "SELECT version_id::text, memory_key FROM memory_versions"
        " WHERE tenant_id = %s AND op = 'UPSERT' AND erased_at IS NULL",
        (tenant,),
    )
    rows = await cur.fetchall()
    missing = {vid for vid, _ in rows} - await index.point_ids(tenant)
    if missing:
        await conn.execute(
            "UPDATE memory_versions SET indexed_at = NULL WHERE version_id = ANY(%s::uuid[])",
            (list(missing),),
        )
        done += await indexer.index_keys(sorted({(tenant, k) for v, k in rows if v in missing}))
    return done


# -- replaying the ledger into an audit copy ---------------------------------------------------


async def _identity(conn: psycopg.AsyncConnection[Any]) -> str:
    cur = await conn.execute(
        "SELECT coalesce(host(inet_server_addr()), 'local'), inet_server_port(),"
        " current_database(), current_schema()"
    )
    row = await cur.fetchone()
    assert row is not None
    return f"{row[0]}:{row[1]}/{row[2]}/{row[3]}"


async def prepare_copy(source: str, base: str, schema: str) -> str:
    """Create and migrate the copy's schema; refuse the live one. Returns the copy's DSN."""
    async with rv.connect(base) as conn:
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    target = rv.schema_dsn(base, schema)
    async with rv.connect(source) as live, rv.connect(target) as copy:
        if await _identity(live) == await _identity(copy):
            raise StackError("replay", f"schema {schema} is the live one", "name another schema")
    await asyncio.to_thread(migrate, target)
    return target


async def count(conn: psycopg.AsyncConnection[Any], query: str, params: Any = None) -> int:
    row = await (await conn.execute(query, params)).fetchone()
    return int(row[0]) if row else 0


async def replay_ledger(settings: Settings, options: Options) -> None:
    assert settings.postgres_dsn is not None and options.schema is not None
    source = settings.postgres_dsn
    target = await prepare_copy(source, options.into_dsn or source, options.schema)
    root = copy_root(settings, options)
    async with rv.connect(source) as src, rv.connect(target) as dst:
        if options.tenants:
            await rv.tenants_of(src, options.tenants)  # an unknown tenant is an error
        done = {row[4]: row for row in await (await dst.execute(_LAST_DONE)).fetchall()}
        in_scope = [k for t, k in done.items() if not options.tenants or t in options.tenants]
        if options.until is not None and any(key[0] > options.until for key in in_scope):
            raise StackError(
                "replay",
                f"copy {options.schema} already holds events received after --until "
                f"{options.until.isoformat()}",
                "replay into a fresh --into-schema",
            )
        total = await count(src, "SELECT count(*)" + _SCOPE, _params(options, done))
        # A killed run may have left holes in its last page (its lanes run side by side): feed
        # again from one page before the last event the copy holds (duplicates change nothing).
        if in_scope:
            last = dict(zip((f"m_{n}" for n in _KEY_NAMES), max(in_scope), strict=True))
            row = await (await src.execute(_STEP_BACK, {**_params(options, {}), **last})).fetchone()
            done = {t: min(k, tuple(row)) if row else _START for t, k in done.items()}
        params = _params(options, done)
        await register_copy(src, dst, options, root)
        already = await count(dst, "SELECT count(*) FROM event_ledger")
        resuming = f" (resuming: {already} events already in the copy)" if already else ""
        out.print(f"replay: {total} events to replay into {options.schema}{resuming}", markup=False)
        started = time.monotonic()
        await _feed(src, target, params, await count(src, "SELECT count(*)" + _SCOPE, params),
                    options.batch)  # fmt: skip
        elapsed = time.monotonic() - started
        await keep_transaction_time(dst)
    line = f"replay: {total} events replayed into {options.schema} in {elapsed:.1f} s"
    await finish_copy(settings, target, root, options.batch, line, total, elapsed)


async def finish_copy(
    settings: Settings,
    target: str,
    root: Path | None,
    batch: int,
    line: str,
    total: int,
    elapsed: float,
) -> None:
    """Index the copy's pending versions (unless it has no vectors) and print the figures."""
    line += f" ({total / max(elapsed, 1e-9):.0f} events/s)"
    if root is None:
        out.print(f"{line} · no vectors", markup=False)
        return
    embedder = await asyncio.to_thread(rv.load_embedder, settings)
    began = time.monotonic()
    indexed = await index_copy(target, root, embedder, batch)
    spent = time.monotonic() - began
    out.print(
        f"{line} · {indexed} versions indexed in {spent:.1f} s into {root} · with vectors "
        f"{total / max(elapsed + spent, 1e-9):.0f} events/s",
        markup=False,
    )


def copy_root(settings: Settings, options: Options) -> Path | None:
    """Where the copy's vectors go; None without vectors."""
    if options.no_vectors:
        return None
    assert options.schema is not None
    return options.into_vectors or settings.data_dir / f"replay-{options.schema}"


async def register_copy(
    src: psycopg.AsyncConnection[Any],
    dst: psycopg.AsyncConnection[Any],
    options: Options,
    root: Path | None,
) -> None:
    """Refuse a copy of another source; record this run's scope in ``replay_meta``."""
    origin, meta = await _identity(src), await rv.read_meta(dst)
    if meta is not None and meta["source"] != origin:
        raise StackError(
            "replay",
            f"schema {options.schema} is a copy of {meta['source']}, not of {origin}",
            "replay into a fresh --into-schema",
        )
    tenants = options.tenants  # the copy's scope: every tenant, or those replayed so far
    if meta is not None:
        tenants = tuple(sorted({*meta["tenants"], *tenants})) if tenants and meta[
            "tenants"] else None  # fmt: skip
    await dst.execute(
        "INSERT INTO replay_meta (source, tenants, until, vectors) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (id) DO UPDATE SET tenants = excluded.tenants, until = excluded.until,"
        " vectors = coalesce(excluded.vectors, replay_meta.vectors), updated_at = now()",
        (origin, list(tenants) if tenants else None, options.until, root and str(root)),
    )


async def keep_transaction_time(dst: psycopg.AsyncConnection[Any]) -> None:
    """The copy's own ledger keeps the source's transaction time too."""
    await dst.execute(
        "UPDATE event_ledger l SET received_at = m.recorded_at FROM memory_versions m"
        " WHERE m.version_id = l.version_id AND l.received_at IS DISTINCT FROM m.recorded_at"
    )


async def _feed(
    src: psycopg.AsyncConnection[Any], target: str, params: dict[str, Any], total: int, batch: int
) -> None:
    """Record every event of the scope through the real write path: page by page in ledger
    order, each page by ``WRITERS`` concurrent lanes that split it by memory (so each memory's
    events keep their order), the next page only once the whole page is recorded."""
    repo = await PostgresMemoryRepository.connect(target, max_size=WRITERS)
    cursor: tuple[Any, ...] = _START
    now = datetime.now(UTC)
    try:
        with progress_bar() as progress:
            bar = progress.add_task("replaying", total=total)
            while True:
                page = {**params, "limit": min(batch, PAGE_MAX), **{f"c_{n}": v for n, v in zip(
                    _KEY_NAMES, cursor, strict=True)}}  # fmt: skip
                cur = src.cursor(row_factory=dict_row)
                rows = await (await cur.execute(_PAGE, page)).fetchall()
                if not rows:
                    return
                lanes: list[list[tuple[dict[str, Any], MemoryEvent]]] = [[]] * WRITERS
                lanes = [[] for _ in lanes]
                for row in rows:
                    event = _validated(row, now)
                    lane = zlib.crc32(f"{event.tenant_id}|{event.memory_key}".encode())
                    lanes[lane % WRITERS].append((row, event))
                async with asyncio.TaskGroup() as group:
                    for items in lanes:
                        if items:
                            group.create_task(_record_lane(repo, items))
                progress.advance(bar, len(rows))
                cursor = tuple(rows[-1][k] for k in _ROW_KEY)
    finally:
        await repo.close()


async def _record_lane(
    repo: PostgresMemoryRepository, items: list[tuple[dict[str, Any], MemoryEvent]]
) -> None:
    for row, event in items:
        position = Position(row["topic"], row["partition"], row["offset"])
        await repo.record(event, row["payload"], position, row["received_at"])


async def index_copy(target: str, root: Path, embedder: Embedder, batch: int) -> int:
    """Index whatever the copy marks pending (this run's versions, or a killed run's), once
    every event is recorded: each version is embedded once, with its final derived state."""
    repo = await PostgresMemoryRepository.connect(target)
    index = rv.copy_index(root, embedder.dimension)
    indexer = Indexer(repo, index, embedder, Silent())
    done = 0
    try:
        async with rv.connect(target) as conn:
            pending = await count(conn, "SELECT count(*) FROM memory_versions WHERE op = "
                                   "'UPSERT' AND (indexed_at IS NULL OR index_dirty)")  # fmt: skip
        with progress_bar() as progress:
            bar = progress.add_task("indexing", total=pending)
            while indexed := await indexer.sweep(limit=batch):
                done += indexed
                progress.advance(bar, indexed)
    finally:
        await index.close()
        await repo.close()
    return done


def _validated(row: dict[str, Any], now: datetime) -> MemoryEvent:
    try:
        return validate_event(row["payload"], now)
    except InvalidEvent as exc:
        raise AdapterError(
            f"ledger event {row['event_id']!r} of {row['tenant_id']!r} cannot be replayed: "
            f"{exc.reason}: {exc.detail}"
        ) from exc
