"""``memstream replay --from-topic``: re-read the events topic by explicit offset ranges.

The ledger keeps (topic, partition, offset) of every event it recorded and of every dead letter,
so the ranges to re-read are known without asking the broker for offsets by time (Tansu's time
index and latest offsets are wrong, DESIGN.md). By default each partition is read from the first
to the last offset the ledger holds for the scope (``--tenant``, ``--until``); ``--offsets
P:FIRST-LAST`` names the ranges instead (``P:FIRST-`` reads to the end of the partition: until
it has nothing more to give for a few seconds).

Every message goes through the real ingest path (``Ingestor``: decode, validate, ``record`` in one
transaction, or a dead letter with its reason), with its original position, and as transaction
time the ``received_at`` the source ledger recorded for that position (else the dead letter's
``failed_at``, else the record's broker timestamp). Targets:

- ``--into-schema NAME``: an audit copy, as a ledger replay makes it (``--verify`` compares it
  with the live state the same way); vectors are indexed once every event is recorded.
- ``--into-live``: the live store, after a loss in Postgres (a restore from an older backup):
  ``record`` is idempotent on event_id, so what the ledger holds already changes nothing and what
  it lost is recorded again; the running worker's index sweep embeds the new versions.

Resumable: a partition restarts after the last offset the target holds for it (so a copy grows
forward: replay another tenant's events of the same offsets into a fresh schema).
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from aiokafka import AIOKafkaConsumer, TopicPartition

from memstream.ops.stack import StackError
from memstream.schemas.codec import CodecError, decode
from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.handlers.ingest import BatchReport, Envelope, Ingestor, epoch_moment
from memstream.services.ports import Position
from memstream.services.settings import Settings

if TYPE_CHECKING:
    from memstream.ops.replay import Options

_RANGE = re.compile(r"^(\d+):(\d+)-(\d*)$")
IDLE_END_S = 3.0  # an open range ends when the partition gives nothing for this long
STALL_S = 30.0  # a bounded range that stops giving records is an error after this long


@dataclass(frozen=True)
class OffsetRange:
    """Offsets FIRST..LAST (inclusive) of one partition; LAST None: to the partition's end."""

    partition: int
    first: int
    last: int | None

    def __str__(self) -> str:
        return f"{self.partition}:{self.first}-{'' if self.last is None else self.last}"


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


async def ledger_ranges(
    conn: psycopg.AsyncConnection[Any],
    topic: str,
    tenants: Sequence[str] | None,
    until: datetime | None,
) -> list[OffsetRange]:
    """Per partition, the first and last offset of ``topic`` the ledger (and, for every
    tenant, the dead letters) recorded within the scope."""
    params = {"topic": topic, "tenants": list(tenants) if tenants else None, "until": until}
    cur = await conn.execute(
        'SELECT "partition", min("offset"), max("offset") FROM ('
        ' SELECT "partition", "offset" FROM event_ledger WHERE topic = %(topic)s'
        "  AND (%(tenants)s::text[] IS NULL OR tenant_id = ANY(%(tenants)s::text[]))"
        "  AND (%(until)s::timestamptz IS NULL OR received_at <= %(until)s)"
        ' UNION ALL SELECT "partition", "offset" FROM dead_letters WHERE topic = %(topic)s'
        "  AND %(tenants)s::text[] IS NULL"
        "  AND (%(until)s::timestamptz IS NULL OR failed_at <= %(until)s)"
        ') AS recorded GROUP BY 1 ORDER BY 1',
        params,
    )  # fmt: skip
    return [OffsetRange(p, first, last) for p, first, last in await cur.fetchall()]


async def held_offsets(conn: psycopg.AsyncConnection[Any], topic: str) -> dict[int, int]:
    """The last offset of each partition of ``topic`` the target holds (recorded or dead)."""
    cur = await conn.execute(
        'SELECT "partition", max("offset") FROM (SELECT "partition", "offset" FROM event_ledger'
        ' WHERE topic = %(t)s UNION ALL SELECT "partition", "offset" FROM dead_letters'
        ' WHERE topic = %(t)s) AS held GROUP BY 1',
        {"t": topic},
    )  # fmt: skip
    return {int(p): int(o) for p, o in await cur.fetchall()}


async def _moments(
    conn: psycopg.AsyncConnection[Any], topic: str, partition: int, offsets: list[int]
) -> dict[int, datetime]:
    """When the source received each of ``offsets``: its ledger row, else its dead letter."""
    cur = await conn.execute(
        'SELECT "offset", received_at FROM event_ledger WHERE topic = %(t)s AND'
        ' "partition" = %(p)s AND "offset" = ANY(%(o)s) UNION ALL SELECT "offset", failed_at'
        ' FROM dead_letters WHERE topic = %(t)s AND "partition" = %(p)s AND "offset" = ANY(%(o)s)',
        {"t": topic, "p": partition, "o": offsets},
    )  # fmt: skip
    found: dict[int, datetime] = {}
    for offset, at in await cur.fetchall():
        found.setdefault(int(offset), at)  # the ledger row first
    return found


@dataclass
class TopicReplayReport:
    read: int = 0
    recorded: int = 0
    duplicates: int = 0
    dead: int = 0
    skipped: int = 0  # another tenant's, or received after --until

    def add(self, report: BatchReport) -> None:
        self.recorded += len(report.recorded) - report.duplicates
        self.duplicates += report.duplicates
        self.dead += len(report.dead)


class TopicReader:
    """Reads explicit offset ranges of one topic (no consumer group, nothing committed)."""

    def __init__(self, broker: str, topic: str) -> None:
        self._topic = topic
        self._ranges: dict[int, OffsetRange] = {}
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=broker,
            group_id=None,
            client_id=f"memstream-replay-{uuid.uuid4().hex[:8]}",
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=200,
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        self._open: set[int] = set()
        self._last_seen = time.monotonic()

    async def open(self, partitions: Sequence[int]) -> None:
        """Connect; refuse, in one line, a topic or a partition the broker does not have."""
        await self._consumer.start()
        known = self._consumer.partitions_for_topic(self._topic)
        problem = None
        if known is None:
            problem = StackError(
                "replay", f"the broker has no topic {self._topic}",
                "name the topic the events were published to (--topic), or replay from the "
                "ledger (without --from-topic)",
            )  # fmt: skip
        elif missing := sorted(set(partitions) - set(known)):
            problem = StackError(
                "replay", f"topic {self._topic} has no partition {missing[0]}",
                f"its partitions are {', '.join(map(str, sorted(known)))}",
            )  # fmt: skip
        if problem is not None:
            await self.stop()
            raise problem

    def read(self, ranges: Sequence[OffsetRange]) -> None:
        """Read these ranges from now on (``next_batch``)."""
        self._ranges = {r.partition: r for r in ranges}
        parts = [TopicPartition(self._topic, p) for p in self._ranges]
        self._consumer.assign(parts)
        for tp in parts:
            self._consumer.seek(tp, self._ranges[tp.partition].first)
        self._open = set(self._ranges)
        self._last_seen = time.monotonic()

    async def stop(self) -> None:
        try:
            await self._consumer.stop()
        except asyncio.CancelledError:
            # aiokafka cancels its own committed-offsets task on a stop right after a start,
            # and that cancellation escapes stop(); only a cancellation of ours goes on.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise

    async def next_batch(self, size: int) -> dict[int, list[Any]]:
        """The next records of the open ranges by partition; {} once every range is read."""
        from aiokafka.errors import OffsetOutOfRangeError

        while self._open:
            try:
                got = await self._consumer.getmany(
                    *[TopicPartition(self._topic, p) for p in self._open],
                    timeout_ms=500,
                    max_records=size,
                )
            except OffsetOutOfRangeError as exc:
                raise StackError(
                    "replay", f"the broker no longer holds those offsets of {self._topic} ({exc})",
                    "replay from the ledger (without --from-topic): Tansu keeps nothing across a "
                    "restart",
                ) from None  # fmt: skip
            batch: dict[int, list[Any]] = {}
            for tp, messages in got.items():
                wanted = self._ranges[tp.partition]
                keep = [m for m in messages if wanted.last is None or m.offset <= wanted.last]
                if keep:
                    batch[tp.partition] = keep
                if wanted.last is not None and messages and messages[-1].offset >= wanted.last:
                    self._close(tp.partition)
            if batch:
                self._last_seen = time.monotonic()
                return batch
            self._close_idle()
        return {}

    def _close(self, partition: int) -> None:
        self._open.discard(partition)
        self._consumer.pause(TopicPartition(self._topic, partition))

    def _close_idle(self) -> None:
        idle = time.monotonic() - self._last_seen
        for partition in list(self._open):
            wanted = self._ranges[partition]
            if wanted.last is None and idle >= IDLE_END_S:
                self._close(partition)  # an open range ends where the partition does
            elif wanted.last is not None and idle >= STALL_S:
                position = self._consumer.highwater(TopicPartition(self._topic, partition))
                raise StackError(
                    "replay", f"partition {partition} of {self._topic} gave no record for "
                    f"{STALL_S:.0f} s before offset {wanted.last} (high watermark {position})",
                    "the broker no longer holds them (Tansu keeps nothing across a restart): "
                    "replay from the ledger (without --from-topic)",
                )  # fmt: skip


async def feed_topic(
    reader: TopicReader,
    ingestor: Ingestor,
    source: psycopg.AsyncConnection[Any],
    topic: str,
    *,
    tenants: Sequence[str] | None,
    until: datetime | None,
    batch: int,
    on_progress: Any = None,
) -> TopicReplayReport:
    """Everything ``reader`` gives, through ``ingestor``, with the source's transaction times."""
    report = TopicReplayReport()
    now = datetime.now(UTC)
    while records := await reader.next_batch(batch):
        for partition, messages in records.items():
            moments = await _moments(source, topic, partition, [m.offset for m in messages])
            erased = await erased_events(source, [_event_id(m.value) for m in messages])
            envelopes = []
            for message in messages:
                # Not in the source: the broker's time, at worst now.
                broker_time = epoch_moment((message.timestamp or 0) / 1000)
                at = moments.get(message.offset) or broker_time or now
                if not _in_scope(message.value, at, tenants, until):
                    report.skipped += 1
                    continue
                if _event_id(message.value) in erased:  # by event id, wherever it was read
                    report.skipped += 1
                    continue
                position = Position(topic, partition, message.offset)
                envelopes.append(Envelope(message.key, message.value, position, at))
            report.read += len(messages)
            report.add(await ingestor.handle_batch(envelopes))
            if on_progress is not None:
                on_progress(len(messages))
    return report


def _event_id(value: bytes | None) -> tuple[str, str] | None:
    """(tenant_id, event_id) of a MemoryEvent message; None for one that does not decode."""
    try:
        record = decode("MemoryEvent", value or b"")
    except CodecError:
        return None
    return (str(record.get("tenant_id")), str(record.get("event_id")))


async def erased_events(
    conn: psycopg.AsyncConnection[Any], ids: Sequence[tuple[str, str] | None]
) -> set[tuple[str, str] | None]:
    """Which of these (tenant_id, event_id) the source's ledger holds as erased."""
    known = [i for i in ids if i is not None]
    if not known:
        return set()
    cur = await conn.execute(
        "SELECT l.tenant_id, l.event_id FROM event_ledger l"
        " JOIN unnest(%s::text[], %s::text[]) AS i(tenant_id, event_id)"
        " ON l.tenant_id = i.tenant_id AND l.event_id = i.event_id WHERE l.erased_at IS NOT NULL",
        ([t for t, _ in known], [e for _, e in known]),
    )
    return {(str(t), str(e)) for t, e in await cur.fetchall()}


def _in_scope(
    value: bytes | None, at: datetime, tenants: Sequence[str] | None, until: datetime | None
) -> bool:
    if until is not None and at > until:
        return False
    if not tenants:
        return True
    try:
        tenant = decode("MemoryEvent", value or b"").get("tenant_id")
    except CodecError:
        return False  # an undecodable message belongs to no tenant
    return tenant in tenants


def make_ingestor(repo: PostgresMemoryRepository, sink: Any) -> Ingestor:
    """The ingest path without an indexer: versions stay pending until they are indexed."""
    return Ingestor(
        repo, sink, None, lambda raw: decode("MemoryEvent", raw), lambda: datetime.now(UTC)
    )


async def replay_topic(settings: Settings, options: Options) -> None:
    """``replay --from-topic`` into an audit copy (``--into-schema``) or the live store."""
    from memstream.ops import replay as rp
    from memstream.ops import replay_verify as rv

    assert settings.postgres_dsn is not None
    if settings.broker is None:
        raise StackError(
            "replay --from-topic", "no broker: MEMSTREAM_BROKER is unset and no stack runs on "
            f"{settings.data_dir}",
            "start `memstream up` (its broker holds the topic) or set MEMSTREAM_BROKER",
        )  # fmt: skip
    source = settings.postgres_dsn
    topic = options.topic or settings.topics.events
    async with rv.connect(source) as src:
        if options.tenants:
            await rv.tenants_of(src, options.tenants)  # an unknown tenant is an error
        explicit = parse_ranges(options.offsets)
        wanted = explicit or await ledger_ranges(src, topic, options.tenants, options.until)
        if not wanted:
            rp.out.print(
                f"replay: the ledger records nothing from topic {topic} in this scope; name the"
                " ranges with --offsets PARTITION:FIRST-LAST", markup=False,
            )  # fmt: skip
            return
        reader = TopicReader(settings.broker, topic)
        await reader.open([r.partition for r in wanted])  # before anything is created
        try:
            root = None
            if options.into_live:
                target, name = source, "the live store"
            else:
                assert options.schema is not None
                target = await rp.prepare_copy(source, options.into_dsn or source, options.schema)
                root, name = rp.copy_root(settings, options), options.schema
            async with rv.connect(target) as dst:
                if not options.into_live:
                    await rp.register_copy(src, dst, options, root)
                held = await held_offsets(dst, topic)
                ranges = [
                    OffsetRange(r.partition, max(r.first, held.get(r.partition, -1) + 1), r.last)
                    for r in wanted
                ]
                ranges = [r for r in ranges if r.last is None or r.first <= r.last]
                origin = "--offsets" if explicit else "the ledger"
                resumed = " (resuming after the offsets it holds)" if any(
                    held.get(r.partition, -1) >= r.first for r in wanted) else ""  # fmt: skip
                plan = ", ".join(str(r) for r in ranges) or "nothing left"
                rp.out.print(
                    f"replay: reading {topic} offsets {plan} (ranges from {origin}) into "
                    f"{name}{resumed}", markup=False,
                )  # fmt: skip
                total = sum(r.last - r.first + 1 for r in ranges if r.last is not None)
                started = time.monotonic()
                report = TopicReplayReport()
                if ranges:
                    reader.read(ranges)
                    report = await _read_all(reader, topic, src, target, options, total)
                elapsed = time.monotonic() - started
                if not options.into_live:
                    await rp.keep_transaction_time(dst)
        finally:
            await reader.stop()
    line = (
        f"replay: {report.read} messages read from {topic} into {name} in {elapsed:.1f} s"
        f" · recorded {report.recorded} · duplicates {report.duplicates} · dead-lettered "
        f"{report.dead} · out of scope {report.skipped}"
    )
    if options.into_live:
        rp.out.print(
            f"{line} ({report.read / max(elapsed, 1e-9):.0f} messages/s) · new versions are "
            "indexed by the worker's sweep", markup=False,
        )  # fmt: skip
        return
    await rp.finish_copy(settings, target, root, options.batch, line, report.read, elapsed)


async def _read_all(
    reader: TopicReader,
    topic: str,
    src: psycopg.AsyncConnection[Any],
    target: str,
    options: Options,
    total: int,
) -> TopicReplayReport:
    from memstream.ops import replay as rp

    repo = await PostgresMemoryRepository.connect(target)
    try:
        with rp.progress_bar() as progress:
            bar = progress.add_task("replaying", total=total or None)
            return await feed_topic(
                reader, make_ingestor(repo, rp.Silent()), src, topic,
                tenants=options.tenants, until=options.until, batch=options.batch,
                on_progress=lambda n: progress.advance(bar, n),
            )  # fmt: skip
    finally:
        await repo.close()
