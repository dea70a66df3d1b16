"""handle_topic_replay: re-read the events topic by explicit offset ranges
(``memstream replay --from-topic``).

The ledger keeps (topic, partition, offset) of every event it recorded and of every dead letter,
so the ranges to re-read are known without asking the broker for offsets by time (Tansu's time
index and latest offsets are wrong, DESIGN.md). By default each partition is read from the first
to the last offset the ledger holds for the scope; explicit ranges name them instead (an open
range reads until the partition has nothing more to give for a few seconds).

Every message goes through the real ingest path (``Ingestor``: decode, validate, record in one
unit of work, or a dead letter with its reason), with its original position, and as transaction
time the ``received_at`` the source ledger recorded for that position (else the dead letter's
``failed_at``, else the record's broker timestamp). Targets: an audit copy (as a ledger replay
makes it; vectors indexed once every event is recorded) or the live store (``into_live``: after
a loss in Postgres; what the ledger holds already changes nothing, the worker's sweep embeds
the new versions). Resumable: a partition restarts after the last offset the target holds.

Takes its dependencies (``RebuildTools``); imports no driver, no adapter, no ops.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memstream.services.handlers.ingest import BatchReport, Envelope, Ingestor, epoch_moment
from memstream.services.handlers.rebuild import (
    Feedback,
    Options,
    RebuildTools,
    finish_copy,
    opened,
    prepare_copy,
    register_copy,
)
from memstream.services.ports import (
    Ledger,
    MemoryRepository,
    OffsetRange,
    Position,
    Refused,
    SilentSink,
    TopicReader,
)


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


async def feed_topic(
    reader: TopicReader,
    ingestor: Ingestor,
    tools: RebuildTools,
    source: Ledger,
    topic: str,
    options: Options,
    on_progress: Callable[[int], None],
) -> TopicReplayReport:
    """Everything ``reader`` gives, through ``ingestor``, with the source's transaction times."""
    report = TopicReplayReport()
    now = datetime.now(UTC)
    while records := await reader.next_batch(options.batch):
        for partition, messages in records.items():
            moments = await source.received(topic, partition, [m.offset for m in messages])
            ids = {m.offset: _event_id(tools, m.value) for m in messages}
            erased = await source.erased_events([i for i in ids.values() if i is not None])
            envelopes = []
            for message in messages:
                # Not in the source: the broker's time, at worst now.
                broker_time = epoch_moment((message.timestamp_ms or 0) / 1000)
                at = moments.get(message.offset) or broker_time or now
                if not _in_scope(tools, message.value, at, options.tenants, options.until):
                    report.skipped += 1
                    continue
                if ids[message.offset] in erased:  # by event id, wherever it was read
                    report.skipped += 1
                    continue
                position = Position(topic, partition, message.offset)
                envelopes.append(Envelope(message.key, message.value, position, at))
            report.read += len(messages)
            report.add(await ingestor.handle_batch(envelopes))
            on_progress(len(messages))
    return report


def _event_id(tools: RebuildTools, value: bytes | None) -> tuple[str, str] | None:
    """(tenant_id, event_id) of a MemoryEvent message; None for one that does not decode."""
    try:
        record = tools.decode(value or b"")
    except Exception:  # the decoder may raise anything for garbage
        return None
    return (str(record.get("tenant_id")), str(record.get("event_id")))


def _in_scope(
    tools: RebuildTools,
    value: bytes | None,
    at: datetime,
    tenants: Sequence[str] | None,
    until: datetime | None,
) -> bool:
    if until is not None and at > until:
        return False
    if not tenants:
        return True
    try:
        tenant = tools.decode(value or b"").get("tenant_id")
    except Exception:  # the decoder may raise anything for garbage
        return False  # an undecodable message belongs to no tenant
    return tenant in tenants


def make_ingestor(tools: RebuildTools, repo: MemoryRepository) -> Ingestor:
    """The ingest path without an indexer: versions stay pending until they are indexed."""
    return Ingestor(repo, SilentSink(), None, tools.decode, lambda: datetime.now(UTC))


async def replay_topic(
    tools: RebuildTools,
    feedback: Feedback,
    source: str,
    broker: str,
    topic: str,
    options: Options,
    root: Path | None,
) -> None:
    """``replay --from-topic`` into an audit copy (``options.schema``) or the live store."""
    async with opened(tools, source) as src:
        if options.tenants:
            await src.tenants(options.tenants)  # an unknown tenant is an error
        explicit = list(options.ranges)
        wanted = explicit or await src.topic_ranges(topic, options.scope)
        if not wanted:
            feedback.say(
                f"replay: the ledger records nothing from topic {topic} in this scope; name the"
                " ranges with --offsets PARTITION:FIRST-LAST"
            )
            return
        reader = tools.topic_reader(broker, topic)
        await reader.open([r.partition for r in wanted])  # before anything is created
        try:
            if options.into_live:
                target, name, root = source, "the live store", None
            else:
                assert options.schema is not None
                base = options.into_dsn or source
                target = await prepare_copy(tools, source, base, options.schema)
                name = options.schema
            async with opened(tools, target) as dst:
                if not options.into_live:
                    await register_copy(src, dst, options, root)
                held = await dst.held_offsets(topic)
                ranges = [
                    OffsetRange(r.partition, max(r.first, held.get(r.partition, -1) + 1), r.last)
                    for r in wanted
                ]
                ranges = [r for r in ranges if r.last is None or r.first <= r.last]
                origin = "--offsets" if explicit else "the ledger"
                resumed = " (resuming after the offsets it holds)" if any(
                    held.get(r.partition, -1) >= r.first for r in wanted) else ""  # fmt: skip
                plan = ", ".join(str(r) for r in ranges) or "nothing left"
                feedback.say(
                    f"replay: reading {topic} offsets {plan} (ranges from {origin}) into "
                    f"{name}{resumed}"
                )
                total = sum(r.last - r.first + 1 for r in ranges if r.last is not None)
                started = time.monotonic()
                report = TopicReplayReport()
                if ranges:
                    reader.read(ranges)
                    repo = await tools.open_repo(target, 8)
                    try:
                        with feedback.progress("replaying", total or None) as advance:
                            report = await feed_topic(
                                reader, make_ingestor(tools, repo), tools, src, topic, options,
                                advance,
                            )  # fmt: skip
                    finally:
                        await repo.close()
                elapsed = time.monotonic() - started
                if not options.into_live:
                    await dst.keep_transaction_time()
        finally:
            await reader.stop()
    line = (
        f"replay: {report.read} messages read from {topic} into {name} in {elapsed:.1f} s"
        f" · recorded {report.recorded} · duplicates {report.duplicates} · dead-lettered "
        f"{report.dead} · out of scope {report.skipped}"
    )
    if options.into_live:
        feedback.say(
            f"{line} ({report.read / max(elapsed, 1e-9):.0f} messages/s) · new versions are "
            "indexed by the worker's sweep"
        )
        return
    await finish_copy(tools, feedback, target, root, options.batch, line, report.read, elapsed)


def refuse_without_broker(broker: str | None, data_dir: Path) -> str:
    """The broker to read from, or Refused (no broker configured nor running)."""
    if broker is None:
        raise Refused(
            "replay --from-topic", "no broker: MEMSTREAM_BROKER is unset and no stack runs on "
            f"{data_dir}",
            "start `memstream up` (its broker holds the topic) or set MEMSTREAM_BROKER",
        )  # fmt: skip
    return broker
