"""The Faust app factory: one app per worker process, its topics, its runtime and its agents.

``create_worker`` is the entry point used by ``memstream up`` / ``memstream worker``. The
``Runtime`` service connects the adapters (through the composition root) inside the worker's
event loop and closes them on shutdown; agents wait for it before handling anything.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import faust
from mode import Service

from memstream.services import bootstrap
from memstream.services.kafka_security import KafkaSecurity
from memstream.services.settings import Settings
from memstream.streams import transport
from memstream.streams.sinks import FaustChangeSink, FaustReplySink

log = logging.getLogger(__name__)


@dataclass
class Topics:
    events: Any
    events_dlq: Any
    changes: Any
    requests: Any
    requests_dlq: Any
    replies: Any
    scores: Any


# One consumer fetches every topic, and Faust hands its records to the agents one by one: when
# an agent's stream buffer is full, handing it the next record waits, and every record after it
# — retrieval requests included — waits with it. Faust stops fetching a partition once its
# buffer passes 1/1.25 of the maximum, but the records already fetched are still handed over.
# So a fetch returns at most MAX_POLL_RECORDS records, and the buffer holds the high-pressure
# mark plus one such fetch per partition: the hand-over never waits, and requests are never
# held behind an ingest backlog. Measured with bursts above what the worker ingests (200
# events/s published, ~100/s ingested): 2,800 requests answered in the first minute, 112 in
# the second (queue time up to 22.6 s), none in the three after.
MAX_POLL_RECORDS = 256
PRODUCER_REQUEST_TIMEOUT_S = 30.0  # create_app says why
PRESSURE_HIGH_RATIO = 1.25  # mode's FlowControlQueue.pressure_high_ratio


def stream_buffer_size(partitions: int) -> int:
    """A stream buffer that a full fetch of every partition past the high-pressure mark
    cannot overflow: maxsize ≥ maxsize / 1.25 + partitions · MAX_POLL_RECORDS."""
    spare = 1 - 1 / PRESSURE_HIGH_RATIO
    return max(4096, math.ceil(partitions * MAX_POLL_RECORDS / spare) + MAX_POLL_RECORDS)


def broker_credentials(security: KafkaSecurity) -> Any:
    """Faust's ``broker_credentials`` for ``security`` (None: plaintext). Faust hands them to
    every aiokafka client it builds (consumer, producer, admin) through
    ``credentials_to_aiokafka_auth``, which yields ``security.aiokafka_options()``."""
    if not security.tls and not security.sasl:
        return None
    context = security.ssl_context() if security.tls else None
    if not security.sasl:
        return faust.SSLCredentials(context)
    return faust.SASLCredentials(
        username=security.username,
        password=security.password,
        ssl_context=context,  # faust: a context makes the protocol SASL_SSL
        mechanism=security.sasl_mechanism,
    )


def create_app(settings: Settings) -> faust.App:
    if settings.broker is None:
        raise ValueError("create_app needs resolved settings: broker is unset")
    largest = max(settings.topics.partitions, settings.topics.reply_partitions, 1)
    idle_wait = settings.fetch_wait_ms
    if settings.rotate_ms > 0:  # requests are read by the generations' reader
        idle_wait = max(idle_wait, transport.BACKGROUND_WAIT_MS)
    transport.register(idle_wait, settings.fetch_wait_active_ms)
    return faust.App(
        settings.app_id,
        broker=[f"{transport.SCHEME}://{b.strip()}" for b in settings.broker.split(",")],
        broker_credentials=broker_credentials(settings.kafka),
        # Tansu holds a group join for half the session timeout: keep it short.
        broker_session_timeout=10.0,
        broker_heartbeat_interval=2.0,
        consumer_auto_offset_reset="earliest",
        topic_partitions=settings.topics.partitions,
        topic_allow_declare=False,  # ops.topics creates every topic with explicit partitions
        store="memory://",
        datadir=str(settings.data_dir / "faust"),
        web_enabled=settings.web_port != 0,
        web_port=settings.web_port or 6066,
        web_bind="127.0.0.1",
        web_in_thread=False,
        autodiscover=False,
        producer_acks=-1,
        # Faust's default (1,200 s) is also how long one unanswered request holds the producer:
        # aiokafka keeps one produce request in flight per broker, and a metadata request that
        # never returns holds every batch whose leader it waits for. Seen on the embedded broker
        # under load: replies and change messages stuck behind one such request for minutes
        # (the client timed out; the worker could not stop, its flush waiting on it). At 30 s
        # the request is given up, its connection dropped and the batch retried.
        producer_request_timeout=PRODUCER_REQUEST_TIMEOUT_S,
        broker_max_poll_records=MAX_POLL_RECORDS,
        stream_buffer_maxsize=stream_buffer_size(largest),
    )


def declare_topics(app: faust.App, settings: Settings) -> Topics:
    t = settings.topics

    def raw(name: str, partitions: int) -> Any:
        return app.topic(
            name,
            key_serializer="raw",
            value_serializer="raw",
            partitions=partitions,
            internal=False,
        )

    return Topics(
        events=raw(t.events, t.partitions),
        events_dlq=raw(t.events_dlq, 1),
        changes=raw(t.changes, t.partitions),
        requests=raw(t.requests, t.partitions),
        requests_dlq=raw(t.requests_dlq, 1),
        replies=raw(t.replies, t.reply_partitions),
        scores=raw(t.scores, t.partitions),
    )


class Runtime(Service):
    """Holds the container for the agents; built on start, closed on stop."""

    def __init__(self, app: faust.App, settings: Settings, topics: Topics, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.app = app
        self.settings = settings
        self.topics = topics
        self._container: bootstrap.Container | None = None
        self._ready = asyncio.Event()

    async def on_start(self) -> None:
        sink = FaustChangeSink(self.topics.changes, self.topics.events_dlq, self.topics.scores)
        replies = FaustReplySink(self.app, self.topics.requests_dlq)
        self._container = await bootstrap.build(self.settings, sink, replies)
        self._ready.set()
        log.info("memstream runtime ready")

    async def on_stop(self) -> None:
        if self._container is not None:
            await self._container.close()
            self._container = None

    async def container(self) -> bootstrap.Container:
        await self._ready.wait()
        assert self._container is not None
        return self._container

    @property
    def ready(self) -> bool:
        return self._ready.is_set()


# How long a thread may hold the GIL before another that waits for it gets a turn (CPython's
# default is 5 ms). The model runs in a worker thread and releases the GIL inside the tokenizer
# and the ONNX/torch run; each time it takes the GIL back it waits out the interval if the event
# loop (or Faust's consumer thread) is busy in Python. Measured on 2 cores, one query's encode
# beside a busy Python thread: 14.3 ms at 5 ms, 5.3 at 1 ms, 4.2 at 0.5 ms, 3.6 at 0.2 ms
# (alone: 2.6 ms), while the busy thread kept 95 % of its pace.
GIL_SWITCH_INTERVAL_S = 0.0005


class StopSteps(Protocol):
    """What a worker does on SIGTERM / SIGINT before it stops consuming (``memstream up``:
    close the doors, drain the events topic). A second signal calls ``hurry``."""

    async def before_stop(self) -> None: ...

    def hurry(self) -> None: ...


class Reader(Protocol):
    """A reader the worker runs beside Faust's consumer (``GenerationReader``)."""

    async def close(self) -> None: ...


class Worker(faust.Worker):
    """faust.Worker that runs ``steps.before_stop`` between the signal and the stop, while
    every agent still consumes, and closes its ``readers`` before the app stops."""

    steps: StopSteps | None = None
    readers: tuple[Reader, ...] = ()

    async def on_stop(self) -> None:
        # First of all (the app, its producer, then the runtime stop after this): a reader
        # still reading once the producer has stopped fails every request it reads and
        # commits past them — requests lost, their clients time out. Closed here, it answers
        # what it was handed and commits where it stopped; the next owner reads on from there.
        for reader in self.readers:
            try:
                await reader.close()
            except Exception:  # stopping goes on; the next owner rereads from the last commit
                log.exception("closing %r failed", reader)
        await super().on_stop()

    def _on_sigusr1(self) -> None:
        # Faust's own dump prints every frame's locals (thousands of lines); this one line per
        # task: where each waits, innermost first (threads: SIGQUIT, ops.up.worker), then what
        # the producer holds unsent and what each reader reads.
        print_tasks(sys.stderr)
        try:
            print_transport(self.app, self.readers, sys.stderr)
        except Exception as exc:  # a diagnostic never stops the worker
            sys.stderr.write(f"(transport state unavailable: {exc!r})\n")

    def _schedule_shutdown(self, sig: signal.Signals) -> None:
        if self._signal_stop_time and self.steps is not None:
            self.steps.hurry()  # a second Ctrl-C: cut the steps short
        super()._schedule_shutdown(sig)

    async def _stop_on_signal(self, sig: signal.Signals) -> None:
        if self.steps is not None:
            try:
                await self.steps.before_stop()
            except Exception:  # stopping goes on; what was left is in the log
                log.exception("the steps before stopping failed")
        await super()._stop_on_signal(sig)


def _first_attr(obj: Any, names: tuple[str, ...]) -> Any:
    return next((v for n in names if (v := getattr(obj, n, None)) is not None), None)


def print_tasks(out: TextIO) -> None:
    """Every pending asyncio task of the running loop, one line each: its name and the
    innermost frames of the chain of coroutines it awaits."""
    tasks = [t for t in asyncio.all_tasks() if not t.done()]
    out.write(f"--- {len(tasks)} asyncio tasks ---\n")
    for task in tasks:
        where: list[str] = []
        coro: Any = task.get_coro()
        while coro is not None:
            frame = _first_attr(coro, ("cr_frame", "gi_frame", "ag_frame"))
            if frame is not None:
                name = Path(frame.f_code.co_filename).name
                where.append(f"{name}:{frame.f_lineno} {frame.f_code.co_name}")
            coro = _first_attr(coro, ("cr_await", "gi_yieldfrom", "ag_await"))
        out.write(f"{task.get_name()}: {' <- '.join(reversed(where[-4:])) or repr(task)}\n")
    out.flush()


def print_transport(app: Any, readers: tuple[Any, ...], out: TextIO) -> None:
    """The Faust producer's unsent batches per partition and whether it awaits metadata; each
    reader's own ``describe()``."""
    producer = getattr(getattr(app, "producer", None), "_producer", None)
    if producer is not None:
        batches = getattr(getattr(producer, "_message_accumulator", None), "_batches", {})
        unsent = {f"{tp.topic}/{tp.partition}": len(q) for tp, q in batches.items() if q}
        client = producer.client
        waiting = client._md_update_fut is not None and not client._md_update_fut.done()
        known = sorted(client.cluster.topics())
        wanted = sorted(set(getattr(client, "_topics", ())) - set(known))
        out.write(f"producer: unsent batches {unsent or 'none'}; metadata update pending: ")
        out.write(f"{waiting}; topics known {known}; wanted, unknown {wanted}\n")
    for reader in readers:
        describe = getattr(reader, "describe", None)
        if describe is not None:
            out.write(f"{describe()}\n")
    out.flush()


def create_worker(
    settings: Settings, *, loglevel: str | None = None, steps: StopSteps | None = None
) -> tuple[faust.Worker, Runtime]:
    """The Faust worker with every agent registered; ``execute_from_commandline`` runs it.
    ``steps``: run on SIGTERM / SIGINT before the worker stops (``StopSteps``)."""
    from memstream.streams import agents

    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # process-wide: this process is the worker

    app = create_app(settings)
    topics = declare_topics(app, settings)
    runtime = Runtime(app, settings, topics)
    reader = agents.register(app, topics, runtime)
    worker = Worker(
        app,
        runtime,
        loglevel=loglevel or settings.log_level,
        quiet=True,
        redirect_stdouts=False,
    )
    worker.steps = steps
    worker.readers = (reader,) if reader is not None else ()
    if not worker.stdout.isatty():  # the startup spinner writes cursor escapes into logs
        worker.spinner = None
    return worker, runtime
