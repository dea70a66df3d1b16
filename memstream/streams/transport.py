"""The Kafka transport of the Faust app, with a short fetch wait that shortens while requests flow.

faust-streaming builds its aiokafka consumer with ``fetch_max_wait_ms=1500`` hard-coded, and
Tansu holds an empty fetch for that whole time even when a record arrives meanwhile: measured,
a retrieval request waited 0.75 s on average before the worker saw it. Requests must be
answered in milliseconds, so this transport's consumer asks for at most ``fetch_wait_ms``
(``MEMSTREAM_FETCH_WAIT_MS``, default 10). The cost is polling: an idle worker and Tansu used
~7 % and ~15 % of a core at 10 ms, ~16 % and ~26 % at 2 ms. So the wait is short only while
requests flow: ``pace().activity()`` (called for each request) lowers it to
``fetch_wait_active_ms`` (``MEMSTREAM_FETCH_WAIT_ACTIVE_MS``, default 2) until no request has
come for ``ACTIVE_FOR_S``. A Kafka broker answers a fetch as soon as a record arrives, so
there neither wait costs latency. Selected by the broker URL scheme ``memstream-kafka://``.

With the requests topic's generations (``rotate_ms`` > 0: the embedded broker), the requests
that need milliseconds are read by ``streams.generations``' reader, whose wait is
``fetch_wait_ms``; this consumer reads events, memory.changes and a client's first request, so
its idle wait is ``BACKGROUND_WAIT_MS``: measured, a stack idle for 5 s spent 150 against 244 ms
of CPU a second, and ingest 0.6 ms less per event (Tansu answered fewer empty fetches). A
client's first request, sent while the worker is idle, may wait that long more. The reader's
own wait is that long too once no request has come for ``DORMANT_AFTER_S`` (and until the
first): a worker that only ingests, a backfill, does not poll for requests a hundred times a
second; the first request after such a pause may wait ``BACKGROUND_WAIT_MS`` more.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import Any

from faust.transport.drivers import TRANSPORTS
from faust.transport.drivers import aiokafka as faust_aiokafka

from memstream.streams.stalls import LOWER, RAISE, StallWatch, lagging, lowered, raised

log = logging.getLogger(__name__)

SCHEME = "memstream-kafka"
ACTIVE_FOR_S = 30.0  # the short wait lasts this long after the last request
DORMANT_AFTER_S = 60.0  # no request for this long (or none yet): the dormant wait, if any
BACKGROUND_WAIT_MS = 100  # the idle wait where the generations' reader reads the requests


class FetchPace:
    """The fetch wait of this process's consumers: idle, or active while requests flow, never
    below what the broker has shown it needs (``stalled``).

    aiokafka reads the wait when it builds each fetch request, so a change applies from the
    next fetch. The consumers run in Faust's consumer thread; the wait is one int attribute,
    set from the event loop's thread (and raised by ``stalled`` from the consumer thread).
    """

    def __init__(
        self,
        idle_ms: int = 10,
        active_ms: int = 2,
        active_for_s: float = ACTIVE_FOR_S,
        dormant_ms: int = 0,
        dormant_after_s: float = DORMANT_AFTER_S,
    ) -> None:
        self.idle_ms = idle_ms
        self.active_ms = min(active_ms, idle_ms)
        self.active_for_s = active_for_s
        # 0: never dormant; else never shorter than the idle wait, nor dormant sooner than idle.
        self.dormant_ms = max(dormant_ms, idle_ms)
        self.dormant_after_s = max(dormant_after_s, active_for_s)
        self.floor_ms = 0  # learned from stalled fetches (memstream.streams.stalls)
        self.stalls = 0
        self._consumers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._current = self.dormant_ms  # no request yet
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def of_requests(cls, idle_ms: int, active_ms: int) -> FetchPace:
        """The pace of the request generations' reader: dormant (no request yet, or none for
        ``DORMANT_AFTER_S``) at the background wait, as the group's consumer."""
        return cls(idle_ms, active_ms, dormant_ms=BACKGROUND_WAIT_MS)

    @property
    def current_ms(self) -> int:
        return max(self._current, self.floor_ms)

    def stalled(self) -> None:
        """A fetch came back empty while records were waiting: wait longer from now on."""
        self.stalls += 1
        before = self.current_ms
        self.floor_ms = raised(before)
        if self.floor_ms != before:
            log.warning(
                "the broker answered fetches empty while records were waiting: fetch wait "
                "%d → %d ms (a Tansu partition of many batches; see memstream.streams.transport)",
                before, self.floor_ms,
            )  # fmt: skip
            for consumer in list(self._consumers):
                self._apply(consumer, self.current_ms)

    def calmed(self) -> None:
        """A run of fetches without a stall: halve the learned floor (none once it is at or
        under the active wait)."""
        if not self.floor_ms:
            return
        before = self.current_ms
        self.floor_ms = lowered(self.floor_ms, self.active_ms)
        log.info("fetches are calm again: fetch wait %d → %d ms", before, self.current_ms)
        for consumer in list(self._consumers):
            self._apply(consumer, self.current_ms)

    def attach(self, consumer: Any) -> None:
        self._consumers.add(consumer)
        self._apply(consumer, self.current_ms)

    def activity(self) -> None:
        """A request arrived: poll fast until none has come for ``active_for_s``, then at the
        idle wait until none has come for ``dormant_after_s``, then at the dormant wait."""
        self._last = time.monotonic()
        if self._current != self.active_ms:
            self._set(self.active_ms)
        if self._timer is None and self.active_ms != self.dormant_ms:
            self._timer = asyncio.get_running_loop().call_later(self.active_for_s, self._check)

    def _check(self) -> None:
        quiet = time.monotonic() - self._last
        if quiet < self.active_for_s:
            wait, left = self.active_ms, self.active_for_s - quiet
        elif quiet < self.dormant_after_s and self.dormant_ms != self.idle_ms:
            wait, left = self.idle_ms, self.dormant_after_s - quiet
        else:
            wait, left = self.dormant_ms, None
        if wait != self._current:
            self._set(wait)
        self._timer = (
            None if left is None else asyncio.get_running_loop().call_later(left, self._check)
        )

    def _set(self, wait_ms: int) -> None:
        self._current = wait_ms
        for consumer in list(self._consumers):
            self._apply(consumer, self.current_ms)

    @staticmethod
    def _apply(consumer: Any, wait_ms: int) -> None:
        consumer._fetch_max_wait_ms = wait_ms  # read by aiokafka when it starts
        fetcher = getattr(consumer, "_fetcher", None)
        if fetcher is not None:  # started: read for every fetch request it builds
            fetcher._fetch_max_wait_ms = wait_ms


_pace = FetchPace()  # one Faust app per process: configured by register()


def pace() -> FetchPace:
    return _pace


class ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        _pace.attach(consumer)
        return consumer

    async def _fetch_records(
        self,
        consumer: Any,
        active_partitions: Any,
        timeout: float | None = None,
        max_records: int | None = None,
    ) -> Any:
        records = await super()._fetch_records(
            consumer, active_partitions, timeout=timeout, max_records=max_records
        )
        watch: StallWatch | None = getattr(self, "_stall_watch", None)
        if watch is None:  # Faust builds this thread; a watch of its own on first fetch
            watch = self._stall_watch = StallWatch()
        verdict = watch.observe(bool(records), not records and lagging(consumer, active_partitions))
        if verdict == RAISE:
            _pace.stalled()
        elif verdict == LOWER:
            _pace.calmed()
        return records


class Consumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> ConsumerThread:
        return ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class Transport(faust_aiokafka.Transport):
    Consumer = Consumer


def register(fetch_wait_ms: int = 10, active_wait_ms: int = 2) -> None:
    """Make ``memstream-kafka://`` resolve to this transport (idempotent)."""
    global _pace
    _pace = FetchPace(fetch_wait_ms, active_wait_ms)
    TRANSPORTS.data[SCHEME] = f"{__name__}:Transport"
