"""The worker's reader of the requests topic's generations (rotation on: the embedded broker).

Where the broker deletes nothing (Tansu, memory storage), clients send requests to
``<requests>.g<N>`` and read replies on ``<replies>.g<N>``, N named by the clock
(``memstream.services.domain.generations``). Subscribing Faust's consumer group to each new
generation would change the group's subscription, and on Tansu every join is held ~5 s: every
request would stall at each turn. So the group keeps its one stable subscription to the
configured requests topic (where a client's first request still goes, and every request on a
Kafka deployment), and it decides which worker owns which partition number; this reader reads
the same partition numbers of the live generations with a plain assigned consumer (no group:
a turn costs no rebalance). Its offsets are committed under its own group id, with no members,
when a partition is handed to another worker and every second, so the next owner starts where
this one stopped.

Every worker keeps the current and the next generation created and deletes the generations
whose every request is past any token's lifetime (``generations.expired``): a request sent to
an old generation is read while that generation is readable (and after, until the reader has
caught up with it), else its client gets its timeout error; it is never deleted while it could
still be answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from memstream.services.domain import generations as gens
from memstream.services.settings import Settings
from memstream.streams.stalls import LOWER, RAISE, StallWatch, lagging
from memstream.streams.transport import FetchPace

log = logging.getLogger(__name__)

UPKEEP_SECONDS = 5.0  # topics created ahead / deleted this often (a generation lasts ≥ 10 s)
COMMIT_SECONDS = 1.0
DRAIN_SECONDS = 5.0  # a partition handed away, or a stop, waits this long for its answers
CLOSE_SPARE_SECONDS = 5.0  # close(): the commit and the consumer's stop, beyond the drain
MAX_RECORDS = 256


def _now_ms() -> int:
    return int(time.time() * 1000)


class GenerationReader:
    """Reads the owned partitions of the live request generations and hands each record to
    ``handle`` (at most ``concurrency`` at once)."""

    def __init__(
        self,
        settings: Settings,
        handle: Callable[[Any], Awaitable[None]],
        concurrency: int,
        clock_ms: Callable[[], int] = _now_ms,
        on_deleted: Callable[[list[str]], None] | None = None,
    ) -> None:
        assert settings.broker is not None and settings.rotate_ms > 0
        self.settings = settings
        self.period_ms = settings.rotate_ms
        self.base = settings.topics.requests
        self._handle = handle
        self._slots = asyncio.Semaphore(concurrency)
        self._clock_ms = clock_ms
        self._on_deleted = on_deleted  # told the topics it deleted (streams.tracked.forget)
        self._grace_ms = settings.rotate_grace_ms
        self._owned: set[int] = set()
        self._assigned: set[TopicPartition] = set()
        self._next: dict[TopicPartition, int] = {}  # next offset to hand over, per partition
        self._committed: dict[TopicPartition, int] = {}
        self._inflight: dict[TopicPartition, set[int]] = {}  # handed over, not yet answered
        self._existing: set[str] = set()
        self._dirty = asyncio.Event()
        self._applied = asyncio.Event()
        self._closing = False  # close() asked: read nothing more
        self._closed = asyncio.Event()  # run() has answered, committed and stopped
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._consumer: AIOKafkaConsumer | None = None  # while run() reads (describe())
        self.pace = FetchPace.of_requests(settings.fetch_wait_ms, settings.fetch_wait_active_ms)
        self._stalls = StallWatch()
        self.live = False  # the current and next generations exist: clients may be told
        self.deleted: list[str] = []
        self.handled = 0

    # --- ownership (from the consumer group's assignment of the configured topic) --------

    def own(self, partitions: Iterable[int]) -> None:
        self._call(self._set_owned, set(partitions))

    async def disown(self, partitions: Iterable[int]) -> None:
        """Stop reading ``partitions`` and commit where this worker stopped, before the group
        hands them to another worker."""
        parts = set(partitions)
        if self._loop is None or not parts or self._closing:  # closing: it commits on its own
            self._owned -= parts
            return
        if asyncio.get_running_loop() is self._loop:
            await self._release(parts)
        else:
            await asyncio.wrap_future(
                asyncio.run_coroutine_threadsafe(self._release(parts), self._loop)
            )

    def _call(self, fn: Callable[[set[int]], None], parts: set[int]) -> None:
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop:
            fn(parts)
        else:
            loop.call_soon_threadsafe(fn, parts)

    def _set_owned(self, parts: set[int]) -> None:
        self._owned = parts
        self._dirty.set()

    async def _release(self, parts: set[int]) -> None:
        self._owned -= parts
        self._applied.clear()
        self._dirty.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._applied.wait(), 5.0)

    # --- stopping -------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop reading, let the requests already handed over be answered (at most
        ``DRAIN_SECONDS``), commit where this worker stopped and stop the consumer, so the next
        owner of its partitions starts right after the last answered request.

        A worker calls it before its producer stops: a reader still reading then fails every
        request it reads (no producer to reply with) and commits past them. Idempotent; a
        reader that never ran is only marked closed (its ``run`` then returns at once)."""
        self._closing = True
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            await self._wait_closed()
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._wait_closed(), loop))

    async def _wait_closed(self) -> None:
        self._dirty.set()  # wakes a loop waiting for partitions
        try:
            await asyncio.wait_for(self._closed.wait(), DRAIN_SECONDS + CLOSE_SPARE_SECONDS)
        except TimeoutError:  # a handler stuck in the hand-over: stopping goes on
            log.warning("the request generations' reader did not stop in time")

    def describe(self) -> str:
        """One line for an operator (a worker's SIGUSR1): what this reader owns and reads,
        how far it has handed requests over, what the broker holds and how many are in flight."""
        parts = []
        for tp in sorted(self._assigned):
            high = self._consumer.highwater(tp) if self._consumer is not None else None
            held = len(self._inflight.get(tp, ()))
            parts.append(f"{tp.topic}/{tp.partition} next {self._next.get(tp)} high {high} {held}")
        return (
            f"generations reader: live {self.live}, closing {self._closing}, owned "
            f"{sorted(self._owned)}, existing {sorted(self._existing)}, handled {self.handled}; "
            + ("; ".join(parts) or "nothing assigned")
        )

    # --- the loop -------------------------------------------------------------------------

    async def run(self) -> None:
        if self._closing:  # closed before it started
            return
        self._loop = asyncio.get_running_loop()
        try:
            await self._read()
        finally:
            self._closed.set()

    async def _read(self) -> None:
        s = self.settings
        options = s.kafka.aiokafka_options()
        admin = AIOKafkaAdminClient(bootstrap_servers=s.broker, **options)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=s.broker,
            group_id=f"{s.app_id}.generations",  # offsets only: this consumer never joins
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=MAX_RECORDS,
            fetch_max_wait_ms=s.fetch_wait_ms,
            **options,
        )
        await admin.start()
        await consumer.start()
        self._consumer = consumer
        self.pace.attach(consumer)
        upkeep: asyncio.Task[None] | None = None
        try:
            await self._upkeep_once(admin)
            self.live = True
            upkeep = asyncio.get_running_loop().create_task(self._upkeep(admin))
            last_commit = time.monotonic()
            while not self._closing:
                if self._dirty.is_set():
                    await self._reassign(consumer)
                if not self._assigned:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._dirty.wait(), 0.2)
                    continue
                try:
                    batches = await consumer.getmany(timeout_ms=200)
                except KafkaError as exc:
                    log.warning("reading request generations failed (%s); retrying", exc)
                    await asyncio.sleep(0.5)
                    continue
                delivered = await self._dispatch(batches)
                behind = not delivered and lagging(consumer, self._assigned)
                verdict = self._stalls.observe(delivered, behind)
                if verdict == RAISE:
                    self.pace.stalled()
                elif verdict == LOWER:
                    self.pace.calmed()
                if time.monotonic() - last_commit >= COMMIT_SECONDS:
                    await self._commit(consumer, self._assigned)
                    last_commit = time.monotonic()
        finally:
            if upkeep is not None:
                upkeep.cancel()
            with contextlib.suppress(BaseException):  # a stop: answer what was handed over
                await self._drain(self._assigned, DRAIN_SECONDS)
            with contextlib.suppress(BaseException):
                await self._commit(consumer, self._assigned)
            with contextlib.suppress(Exception):
                await consumer.stop()
            with contextlib.suppress(Exception):
                await admin.close()

    async def _dispatch(self, batches: dict[TopicPartition, list[Any]]) -> bool:
        delivered = False
        for tp, messages in batches.items():
            if tp not in self._assigned:  # handed away meanwhile: the next owner reads them
                continue
            for message in messages:
                if self._closing:  # not handed over: the next owner reads it
                    return delivered
                if message.offset < self._next.get(tp, 0):
                    continue
                self._next[tp] = message.offset + 1
                self._inflight.setdefault(tp, set()).add(message.offset)
                delivered = True
                self.pace.activity()
                await self._slots.acquire()
                task = asyncio.get_running_loop().create_task(self._one(message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        return delivered

    async def _one(self, message: Any) -> None:
        try:
            await self._handle(message)
            self.handled += 1
        except Exception:
            log.exception(
                "request at %s/%s/%s failed", message.topic, message.partition, message.offset
            )
        finally:
            self._slots.release()
            tp = TopicPartition(message.topic, message.partition)
            self._inflight.get(tp, set()).discard(message.offset)

    def _desired(self, consumer: AIOKafkaConsumer) -> set[TopicPartition]:
        now = self._clock_ms()
        base = self.settings.topics.requests
        wanted = {
            TopicPartition(gens.named(base, g), p)
            for g in gens.readable(now, self.period_ms)
            if gens.named(base, g) in self._existing
            for p in self._owned
        }
        for tp in self._assigned - wanted:  # an older generation: kept until read to its end
            gen = gens.parse(base, tp.topic)
            high = consumer.highwater(tp)
            if (
                tp.partition in self._owned
                and gen is not None
                and tp.topic in self._existing
                and not gens.expired(gen, now, self.period_ms, self._grace_ms)
                and high is not None
                and self._next.get(tp, 0) < high
            ):
                wanted.add(tp)
        return wanted

    async def _reassign(self, consumer: AIOKafkaConsumer) -> None:
        self._dirty.clear()
        desired = self._desired(consumer)
        if desired != self._assigned:
            removed = self._assigned - desired
            await self._drain(removed, DRAIN_SECONDS)  # the next owner starts after them
            await self._commit(consumer, removed)
            kept = {tp: self._next[tp] for tp in self._assigned & desired if tp in self._next}
            consumer.assign(list(desired))
            for tp in desired:
                if tp in kept:
                    consumer.seek(tp, kept[tp])
                    continue
                committed = await consumer.committed(tp)
                if committed is not None:
                    consumer.seek(tp, committed)
                    self._next[tp] = committed
                else:
                    await consumer.seek_to_beginning(tp)
                    self._next.pop(tp, None)
            for tp in removed:
                self._next.pop(tp, None)
                self._committed.pop(tp, None)
                if not self._inflight.get(tp):
                    self._inflight.pop(tp, None)
            self._assigned = desired
            log.info(
                "reading %d partitions of request generations %s",
                len(desired), sorted({tp.topic for tp in desired}),
            )  # fmt: skip
        self._applied.set()

    async def _drain(self, tps: Iterable[TopicPartition], seconds: float) -> None:
        """Wait (at most ``seconds``) until the requests handed over from ``tps`` are answered."""
        if any(self._inflight.get(tp) for tp in tps) and self._tasks:
            await asyncio.wait(set(self._tasks), timeout=seconds)  # ≤ concurrency requests

    def _committable(self, tp: TopicPartition) -> int:
        """The first offset not yet answered: a request handed over but unanswered when this
        worker stops is read again by the next owner, never skipped."""
        pending = self._inflight.get(tp)
        return min(pending) if pending else self._next[tp]

    async def _commit(self, consumer: AIOKafkaConsumer, tps: Iterable[TopicPartition]) -> None:
        offsets = {
            tp: self._committable(tp)
            for tp in tps
            if tp in self._next and self._committed.get(tp) != self._committable(tp)
        }
        if not offsets:
            return
        try:
            await consumer.commit(offsets)
            self._committed.update(offsets)
        except KafkaError as exc:  # the next commit carries them; a crash rereads ≤ 1 s
            log.warning("committing request generation offsets failed: %s", exc)

    # --- topics ---------------------------------------------------------------------------

    async def _upkeep(self, admin: AIOKafkaAdminClient) -> None:
        while True:
            await asyncio.sleep(UPKEEP_SECONDS)
            try:
                await self._upkeep_once(admin)
            except (KafkaError, OSError) as exc:
                log.warning("request generation upkeep failed (%s); retrying", exc)
            self._dirty.set()

    async def _upkeep_once(self, admin: AIOKafkaAdminClient) -> None:
        """Create the current and next generations of both topics; delete expired ones."""
        t = self.settings.topics
        now = self._clock_ms()
        current = gens.generation(now, self.period_ms)
        listed = set(await admin.list_topics())
        wanted = {
            gens.named(base, g): partitions
            for base, partitions in ((t.requests, t.partitions), (t.replies, t.reply_partitions))
            for g in (current, current + 1)
        }
        missing = [NewTopic(n, p, 1) for n, p in wanted.items() if n not in listed]
        if missing:
            await admin.create_topics(missing)
            listed = set(await admin.list_topics())
        old = [
            name
            for name in listed
            for base in (t.requests, t.replies)
            if (g := gens.parse(base, name)) is not None
            and gens.expired(g, now, self.period_ms, self._grace_ms)
        ]
        if old:
            await admin.delete_topics(old)
            self.deleted.extend(old)
            if self._on_deleted is not None:
                self._on_deleted(old)
            log.info("deleted expired generations %s", sorted(old))
            listed -= set(old)
        self._existing = {n for n in listed if gens.parse(t.requests, n) is not None}
