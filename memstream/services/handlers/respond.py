"""handle_request: raw request bytes + headers → a reply on the client's reply topic.

Correlation id, reply topic / partition and deadline travel in headers (``correlation_id``,
``reply_to``, ``reply_partition``, ``deadline_ms``) and in the record; the record wins where
both are present. Undecodable bytes go to the requests DLQ, and still get an error reply when
a correlation id and a reply topic can be read from the headers. Nothing is silent.

Exactly one reply per decodable request: whatever happens inside the retriever (a database
error, a bug, running past the deadline) becomes an ``error`` reply, and the request and its
reply are written to the query log once, bounded (see ``bounded``). A record read again from
the position where it was first opened (a consumer's redelivery after a rebalance or a restart)
gets no second reply and no second row: the guard's nonce claim remembers that position.
``latency_ms["queue"]`` is the time the request waited between the broker and this handler
(from the record's timestamp).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from memstream.services.domain.identity import PUBLIC_MESSAGE
from memstream.services.handlers.guard import Guard, Opened, ReadAgain
from memstream.services.handlers.retrieve import Retriever, error_reply
from memstream.services.ports import (
    AdapterError,
    DeadLetter,
    Metrics,
    NoMetrics,
    OutboundReply,
    Position,
    QueryLog,
    ReplySink,
)

log = logging.getLogger(__name__)

# /health reports the request path as failing while requests ended in these errors lately.
SERVING_ERRORS = frozenset({"unavailable", "internal", "deadline_exceeded"})
FAILING_WINDOW_SECONDS = 60.0

# A request without a deadline is worked on this long at most before it gets an error reply.
MAX_SERVE_SECONDS = 30.0
# The query log keeps strings up to this many characters and lists up to this many items; the
# full sizes of what was cut are noted under "_truncated".
LOGGED_CHARS = 4096
LOGGED_ITEMS = 64


def bounded(request: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` as the query log stores it: NUL characters (which Postgres cannot store)
    replaced by U+FFFD, long strings and lists cut, with their original sizes noted."""
    cut: dict[str, int] = {}

    def clean(value: Any, path: str) -> Any:
        if isinstance(value, str):
            if len(value) > LOGGED_CHARS:
                cut[path] = len(value)
                value = value[:LOGGED_CHARS]
            return value.replace("\x00", "\ufffd")
        if isinstance(value, bytes):
            cut[path] = len(value)
            return f"<{len(value)} bytes>"
        if isinstance(value, Mapping):
            return {
                str(k).replace("\x00", "\ufffd"): clean(v, f"{path}.{k}" if path else str(k))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            if len(value) > LOGGED_ITEMS:
                cut[path] = len(value)
            return [clean(v, f"{path}[{i}]") for i, v in enumerate(value[:LOGGED_ITEMS])]
        return value

    out = clean(dict(request), "")
    if cut:
        out["_truncated"] = cut
    return dict(out)


def _text(headers: Mapping[str, bytes], name: str) -> str | None:
    value = headers.get(name)
    if not value:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _queue_ms(published_ms: float | None) -> float | None:
    """Milliseconds from the broker's timestamp of a request to now (never negative)."""
    if published_ms is None or published_ms <= 0:
        return None
    return round(max(0.0, time.time() * 1000 - published_ms), 3)


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Responder:
    def __init__(
        self,
        retriever: Retriever,
        sink: ReplySink,
        decode: Callable[[bytes], Mapping[str, Any]],
        encode: Callable[[Mapping[str, Any]], bytes],
        clock: Callable[[], datetime],
        query_log: QueryLog | None = None,
        metrics: Metrics | None = None,
        guard: Guard | None = None,
    ) -> None:
        self._guard = guard
        self._metrics = metrics or NoMetrics()
        self._log = query_log
        self._retriever = retriever
        self._sink = sink
        self._decode = decode
        self._encode = encode
        self._clock = clock
        self._failures: list[tuple[float, str]] = []  # (monotonic time, message), recent only
        # The period of the transient topics' generations, told to clients in every reply
        # once the worker reads them (memstream.services.domain.generations); None: off.
        self.rotation_ms: Callable[[], int | None] = lambda: None

    async def handle(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Mapping[str, bytes],
        position: Position,
        published_ms: float | None = None,
    ) -> OutboundReply | None:
        """Answer one request; ``published_ms`` is the record's broker timestamp (epoch ms)."""
        queued = _queue_ms(published_ms)
        if self._guard is not None:
            return await self._handle_guarded(self._guard, key, value, headers, position, queued)
        correlation_id = _text(headers, "correlation_id")
        reply_to = _text(headers, "reply_to")
        partition = _int(_text(headers, "reply_partition"))
        try:
            if value is None:
                raise ValueError("the request has no value")
            raw = dict(self._decode(value))
        except Exception as exc:  # any decoder failure: dead-letter, and answer if we can
            detail = f"not a RetrievalRequest: {exc}"
            await self._sink.dead_letter_request(
                DeadLetter(
                    reason="undecodable",
                    detail=detail,
                    position=position,
                    original=value,
                    original_key=key,
                    event_id=correlation_id,
                )
            )
            if correlation_id is None or reply_to is None:
                log.warning("undecodable request at %s without a reply address", position)
                return None
            reply = error_reply(correlation_id, "undecodable", detail, {}, self._clock())
            return await self._send(reply_to, partition, correlation_id, reply)
        for name in ("deadline_ms",):
            if raw.get(name) is None and _int(_text(headers, name)) is not None:
                raw[name] = _int(_text(headers, name))
        if not raw.get("request_id") and correlation_id:
            raw["request_id"] = correlation_id
        reply_to = raw.get("reply_to") or reply_to
        partition = (
            _int(raw.get("reply_partition"))
            if raw.get("reply_partition") is not None
            else partition
        )
        reply = await self._serve(raw)
        if queued is not None:
            reply["latency_ms"] = {**(reply.get("latency_ms") or {}), "queue": queued}
        outbound = None
        try:
            if reply_to:
                outbound = await self._send(
                    str(reply_to), partition, reply["request_id"] or correlation_id, reply
                )
            else:
                log.warning("request %s has no reply_to; reply dropped", reply.get("request_id"))
        finally:
            self._metrics.retrieval(reply)
            await self._audit(raw, reply)  # after the reply: the audit costs the client nothing
        return outbound

    async def _serve(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The retriever's reply, or an error reply: never an exception, never past the
        request's deadline (or ``MAX_SERVE_SECONDS`` when it has none)."""
        request_id = str(raw.get("request_id") or "")
        started = time.perf_counter()
        seconds = MAX_SERVE_SECONDS
        deadline = _int(raw.get("deadline_ms"))
        if deadline is not None:
            # A request already past its deadline still gets the retriever's own answer to that.
            seconds = min(seconds, max(0.5, deadline / 1000 - time.time()))
        try:
            reply = await asyncio.wait_for(self._retriever.retrieve(raw), seconds)
            return {**reply, "rotation_ms": self.rotation_ms()}
        except TimeoutError:
            code, message = "deadline_exceeded", f"not answered within {seconds:.1f}s"
        except AdapterError as exc:
            code, message = "unavailable", f"a store could not serve the request: {exc}"
        except Exception as exc:  # one reply whatever happens: the defect is logged in full
            log.exception("request %s failed", request_id)
            code, message = "internal", f"the worker failed on this request: {exc!r}"
        log.warning("request %s answered with an error: %s: %s", request_id, code, message)
        self._failed(f"{code}: {message}")
        stages = {"total": round((time.perf_counter() - started) * 1000, 3)}
        reply = error_reply(request_id, code, message, stages, self._clock())
        return {**reply, "rotation_ms": self.rotation_ms()}

    def _failed(self, message: str) -> None:
        now = time.monotonic()
        self._failures = [f for f in self._failures if now - f[0] < FAILING_WINDOW_SECONDS]
        self._failures.append((now, message))

    def serving(self) -> str:
        """ "ok", or why the request path cannot serve (for /health): requests that failed
        inside the worker (a store down, a bug, timeouts) within the last minute."""
        now = time.monotonic()
        recent = [f for f in self._failures if now - f[0] < FAILING_WINDOW_SECONDS]
        if not recent:
            return "ok"
        return f"failing: {len(recent)} requests failed in the last minute (last: {recent[-1][1]})"

    async def _handle_guarded(
        self,
        guard: Guard,
        key: bytes | None,
        value: bytes | None,
        headers: Mapping[str, bytes],
        position: Position,
        queued: float | None = None,
    ) -> OutboundReply | None:
        """Verified before any work; the reply (or the refusal) sealed to the asking client
        and written only to a reply topic's existing partition."""
        verdict = await guard.open_request(value, headers, position)
        if isinstance(verdict, ReadAgain):  # one reply per request, whoever reads it again
            log.info(
                "request %s read again at %s (a redelivery): answered once already",
                verdict.request_id, position,
            )  # fmt: skip
            return None
        if not isinstance(verdict, Opened):
            if not verdict.answerable:  # nobody to tell, or no key to tell them safely
                await self._sink.dead_letter_request(
                    DeadLetter(
                        reason=verdict.code,
                        detail=verdict.reason,
                        position=position,
                        original=value,
                        original_key=key,
                        event_id=verdict.request_id,
                    )
                )
                return None
            assert verdict.request_id and verdict.address and verdict.keys
            message = PUBLIC_MESSAGE.get(verdict.code, verdict.reason)
            reply = error_reply(verdict.request_id, verdict.code, message, {}, self._clock())
            sealed = guard.seal_reply(verdict.keys, verdict.request_id, self._encode(reply))
            return await self._send_sealed(verdict.address, verdict.request_id, sealed)
        raw = verdict.request
        raw["reply_to"], raw["reply_partition"] = verdict.address
        reply = await self._serve(raw)
        if queued is not None:
            reply["latency_ms"] = {**(reply.get("latency_ms") or {}), "queue": queued}
        try:
            sealed = guard.seal_reply(verdict.keys, verdict.request_id, self._encode(reply))
            return await self._send_sealed(verdict.address, verdict.request_id, sealed)
        finally:
            self._metrics.retrieval(reply)
            await self._audit(raw, reply)  # after the reply: the audit costs the client nothing

    async def _send_sealed(
        self, address: tuple[str, int], request_id: str, sealed: bytes
    ) -> OutboundReply:
        outbound = OutboundReply(
            topic=address[0],
            partition=address[1],
            key=request_id.encode(),
            value=sealed,
            headers=(("correlation_id", request_id.encode()),),
        )
        await self._sink.reply(outbound)
        return outbound

    async def _audit(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> None:
        if self._log is None:
            return
        try:
            await self._log.record(bounded(request), bounded(reply))
        except Exception as exc:  # the answer was given; the audit trail has a gap: say so
            log.error("request %s answered but not logged: %s", reply.get("request_id"), exc)

    async def _send(
        self,
        topic: str,
        partition: int | None,
        correlation_id: str | None,
        reply: Mapping[str, Any],
    ) -> OutboundReply:
        outbound = OutboundReply(
            topic=topic,
            partition=partition,
            key=correlation_id.encode() if correlation_id else None,
            value=self._encode(reply),
            headers=(("correlation_id", (correlation_id or "").encode()),),
        )
        await self._sink.reply(outbound)
        return outbound
