"""The agents: thin loops that turn messages into handler calls.

Each agent consumes raw bytes, hands them to one handler and never lets an exception escape
its loop (in faust-streaming an escaping exception acknowledges the message). A failure the
handler could not deal with is fatal by decision: the worker exits without acknowledging the
batch, and the messages are delivered again after restart.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import timedelta
from typing import Any

import faust

from memstream.services.handlers.ingest import Envelope, epoch_moment
from memstream.services.ports import Position
from memstream.streams import tracked, transport
from memstream.streams.generations import GenerationReader

log = logging.getLogger(__name__)

INGEST_BATCH = 64
INGEST_WITHIN = 0.05
SWEEP_SECONDS = 2.0
QUERY_CONCURRENCY = 16
EXIT_UNHANDLED = 70


def _fatal(what: str, exc: BaseException) -> None:
    log.critical(
        "%s failed unexpectedly; exiting without acknowledging: %r", what, exc, exc_info=exc
    )
    logging.shutdown()
    os._exit(EXIT_UNHANDLED)


def _headers(raw: Any) -> dict[str, bytes]:
    """Message headers as a dict, whether the client sent a list of pairs or a mapping."""
    if not raw:
        return {}
    items = raw.items() if hasattr(raw, "items") else raw
    return {str(k): (v if isinstance(v, bytes) else str(v).encode()) for k, v in items if v}


def register(app: faust.App, topics: Any, runtime: Any) -> GenerationReader | None:
    """Every agent, task, timer and page of the worker; returns the request generations'
    reader (rotation on), which the worker closes first when it stops."""

    @app.agent(topics.events, name="memstream.ingest", concurrency=1)
    async def ingest(stream: Any) -> None:
        async for events in stream.take_events(INGEST_BATCH, within=INGEST_WITHIN):
            try:
                container = await runtime.container()
                await container.ingestor.handle_batch(
                    [
                        Envelope(
                            e.message.key,
                            e.message.value,
                            Position(e.message.topic, e.message.partition, e.message.offset),
                            published_at=epoch_moment(e.message.timestamp),
                            headers=_headers(e.message.headers),
                        )
                        for e in events
                    ]
                )
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                _fatal("ingest", exc)

    @app.agent(topics.requests, name="memstream.query", concurrency=QUERY_CONCURRENCY)
    async def query(stream: Any) -> None:
        # Reads only: concurrency > 1 is safe here (a request lost in a crash times out
        # at its client; nothing is written).
        async for event in stream.events():
            message = event.message
            try:
                transport.pace().activity()  # poll fast while requests flow
                if reader is not None:  # the client's next requests go to the generations
                    reader.pace.activity()
                container = await runtime.container()
                assert container.responder is not None
                await container.responder.handle(
                    message.key,
                    message.value,
                    _headers(message.headers),
                    Position(message.topic, message.partition, message.offset),
                    published_ms=message.timestamp * 1000 if message.timestamp else None,
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception(
                    "request at %s/%s/%s failed", message.topic, message.partition, message.offset
                )

    reader = _generations(app, runtime)
    rebalance: dict[str, float] = {}

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]
    async def revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        # A consumer-group membership change: every partition stops until it is assigned
        # again (with Tansu, up to the session timeout + its join hold: requests wait).
        # A worker's first join revokes nothing: routine, so INFO; a running worker losing its
        # partitions is what an operator looks for when requests stall.
        rebalance["started"] = time.monotonic()
        rebalance["held"] = float(len(revoked))
        if reader is not None:  # commit where it stopped before another worker takes over
            await reader.disown(tp.partition for tp in revoked if tp.topic == reader.base)
        level = logging.WARNING if revoked else logging.INFO
        log.log(level, "consumer group rebalance: %d partitions revoked", len(revoked))

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]
    async def assigned(sender: Any, assigned: Any, **kwargs: Any) -> None:
        started = rebalance.pop("started", None)
        level = logging.WARNING if rebalance.pop("held", 0.0) else logging.INFO
        paused = f" after {time.monotonic() - started:.1f}s without partitions" if started else ""
        requests = sum(1 for tp in assigned if tp.topic == runtime.settings.topics.requests)
        if reader is not None:
            reader.own(tp.partition for tp in assigned if tp.topic == reader.base)
        log.log(
            level,
            "consumer group rebalance: %d partitions assigned (%d of the requests topic)%s",
            len(assigned), requests, paused,
        )  # fmt: skip

    @app.agent(topics.changes, name="memstream.invalidate", concurrency=1)
    async def invalidate(stream: Any) -> None:
        async for event in stream.events():
            try:
                container = await runtime.container()
                await container.invalidate(event.message.value, _headers(event.message.headers))
            except asyncio.CancelledError:
                raise
            except Exception:  # a cache that cannot be invalidated expires by its TTL
                log.exception("cache invalidation failed")

    @app.page("/health")
    async def health(web: Any, request: Any) -> Any:
        parts: dict[str, str] = {"runtime": "ready" if runtime.ready else "starting"}
        healthy = runtime.ready
        if runtime.ready:
            container = await runtime.container()
            parts.update(await container.health())
            # Degraded whenever a part cannot serve; 503 when requests cannot be answered.
            healthy = parts["postgres"] == "ok" and parts.get("requests", "ok") == "ok"
        assigned = app.consumer.assignment() if app.consumer else set()
        parts["partitions_assigned"] = str(len(assigned))
        whole = healthy and all(v == "ok" for k, v in parts.items() if k in ("cache",))
        return web.json(
            {"status": "ok" if whole else "degraded", "parts": parts},
            status=200 if healthy else 503,
        )

    @app.timer(runtime.settings.rescore_seconds, name="memstream.rescore")  # type: ignore[untyped-decorator]
    async def rescore() -> None:
        if not runtime.ready:
            return
        container = await runtime.container()
        try:
            # Half the period at most: the next tick finds the rest (several workers share it).
            budget = timedelta(seconds=runtime.settings.rescore_seconds / 2)
            report = await container.rescorer.catch_up(budget)
        except Exception as exc:  # the next tick tries again; nothing is lost by waiting
            log.warning("rescoring failed: %s", exc)
            return
        if report.changed:
            log.info(
                "rescored %d of %d due versions in %d runs",
                report.changed, report.examined, report.runs,
            )  # fmt: skip

    @app.page("/metrics")
    async def metrics(web: Any, request: Any) -> Any:
        if not runtime.ready:
            return web.text("# memstream is starting\n", status=503)
        container = await runtime.container()
        return web.bytes(container.metrics.exposition(), content_type="text/plain; version=0.0.4")

    @app.timer(SWEEP_SECONDS, name="memstream.index_sweep")  # type: ignore[untyped-decorator]
    async def index_sweep() -> None:
        if not runtime.ready:
            return
        container = await runtime.container()
        try:
            swept = await container.indexer.sweep()
        except Exception as exc:  # the next tick tries again; Postgres keeps the backlog
            log.warning("index sweep failed: %s", exc)
            return
        if swept:
            log.info("index sweep indexed %d versions", swept)

    return reader


def _generations(app: faust.App, runtime: Any) -> GenerationReader | None:
    """With rotation on (the embedded broker), the reader of the requests topic's generations
    (``memstream.streams.generations``): same handler, partitions owned through the group's
    assignment of the configured requests topic."""
    settings = runtime.settings
    if not settings.rotate_ms:
        return None

    async def handle(message: Any) -> None:
        container = await runtime.container()
        assert container.responder is not None
        await container.responder.handle(
            message.key,
            message.value,
            _headers(message.headers),
            Position(message.topic, message.partition, message.offset),
            published_ms=float(message.timestamp) if message.timestamp else None,
        )

    def deleted(topics: list[str]) -> None:  # no metadata refresh asks for them any more
        tracked.forget(tracked.producer_client(app), topics)

    reader = GenerationReader(settings, handle, QUERY_CONCURRENCY, on_deleted=deleted)

    @app.task  # type: ignore[untyped-decorator]
    async def generations() -> None:
        container = await runtime.container()
        if container.responder is not None:  # clients are told once the topics exist
            container.responder.rotation_ms = lambda: reader.period_ms if reader.live else None
        try:
            await reader.run()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            _fatal("the request generations' reader", exc)

    return reader
