"""``memstream replay``: rebuild derived state from the Postgres ledger, and verify it.

(``--from-topic`` reads the events topic by explicit offset ranges instead:
``services.handlers.rebuild_topic``.)

Postgres (``event_ledger`` + ``memory_versions``) is the source of truth; this module rebuilds
what derives from it and checks the result. This module is the entry point: it validates the
arguments, finds the stack's PostgreSQL (or starts it alone), asks ``services.bootstrap`` for
the tools and calls one handler (``services.handlers.rebuild`` / ``rebuild_topic`` /
``verify``; checksums: ``services.domain.checksum``).

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress

from memstream.ops.health import check_postgres
from memstream.ops.migrate import MigrationError, migrate
from memstream.ops.stack import EmbeddedStack, StackError, read_runtime
from memstream.services import bootstrap
from memstream.services.domain.validation import parse_timestamp
from memstream.services.handlers.rebuild import (
    Feedback,
    Options,
    RebuildTools,
    rebuild_index,
    replay_ledger,
)
from memstream.services.handlers.rebuild_topic import refuse_without_broker, replay_topic
from memstream.services.handlers.verify import verify_copy, verify_index
from memstream.services.ports import AdapterError, OffsetRange, Refused
from memstream.services.settings import Settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_RANGE = re.compile(r"^(\d+):(\d+)-(\d*)$")


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
    # A bad range is refused here, before anything starts.
    ranges = tuple(parse_ranges(args.offsets or ())) if args.from_topic else ()
    return Options(
        args.index, args.into_schema, tuple(args.tenant) if args.tenant else None, until,
        args.into_dsn, args.into_vectors, args.no_vectors, args.verify, args.batch,
        args.from_topic, args.topic, ranges, args.into_live,
    )  # fmt: skip


def parse_ranges(specs: Sequence[str]) -> list[OffsetRange]:
    """``P:FIRST-LAST`` / ``P:FIRST-`` → ranges; a bad one raises StackError (exit 2)."""
    ranges: dict[int, OffsetRange] = {}
    for spec in specs:
        match = _RANGE.match(spec.strip())
        if match is None:
            raise StackError(
                "replay", f"--offsets {spec!r} is not PARTITION:FIRST-LAST",
                "write e.g. 0:0-1999, or 0:2000- to read to the partition's end",
            )  # fmt: skip
        part, first = int(match[1]), int(match[2])
        last = int(match[3]) if match[3] else None
        if last is not None and last < first:
            raise StackError("replay", f"--offsets {spec!r} ends before it starts", "swap them")
        if part in ranges:
            raise StackError("replay", f"--offsets names partition {part} twice", "merge them")
        ranges[part] = OffsetRange(part, first, last)
    return [ranges[p] for p in sorted(ranges)]


def replay(settings: Settings, options: Options) -> int:
    """The CLI entry: a failure ends with one line (``memstream: replay: …``) and exit 1; a
    misuse with ``memstream: PART: problem. Fix: …`` and exit 2."""
    try:
        with _postgres(settings, live_index=options.index) as live:
            return asyncio.run(_run(live, options))
    except Refused as exc:
        raise StackError(exc.part, exc.problem, exc.fix) from None
    except (AdapterError, MigrationError, psycopg.Error) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        err.print(f"memstream: replay: {first}", markup=False)
        return 1


def feedback() -> Feedback:
    def progress(label: str, total: int | None) -> contextlib.AbstractContextManager[
            Callable[[int], None]]:  # fmt: skip
        return _bar(label, total)

    return Feedback(lambda line: out.print(line, markup=False), progress)


@contextlib.contextmanager
def _bar(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    with Progress(*Progress.get_default_columns(), MofNCompleteColumn(), console=err) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def tools(settings: Settings) -> RebuildTools:
    return bootstrap.rebuild_tools(settings, migrate)


def copy_root(settings: Settings, options: Options) -> Path | None:
    """Where the copy's vectors go; None without vectors (or into the live store)."""
    if options.no_vectors or options.into_live or options.schema is None:
        return None
    return options.into_vectors or settings.data_dir / f"replay-{options.schema}"


async def _run(settings: Settings, options: Options) -> int:
    assert settings.postgres_dsn is not None
    source, kit, fb = settings.postgres_dsn, tools(settings), feedback()
    if options.index and options.verify:
        return await verify_index(kit, fb, source, options.tenants)
    if options.index:
        await rebuild_index(kit, fb, source, options.tenants, options.batch)
        return 0
    if options.from_topic and not options.verify:
        broker = refuse_without_broker(settings.broker, settings.data_dir)
        topic = options.topic or settings.topics.events
        await replay_topic(kit, fb, source, broker, topic, options, copy_root(settings, options))
        return 0
    assert options.schema is not None
    if options.verify:
        live_points = settings.qdrant_url is not None or read_runtime(settings.data_dir) is None
        return await verify_copy(kit, fb, source, options, live_points=live_points)
    await replay_ledger(kit, fb, source, options, copy_root(settings, options))
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
        assert self.endpoints is not None
        return {"postgres": check_postgres(self.endpoints.postgres_dsn)}
