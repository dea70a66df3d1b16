"""handle_request: raw request bytes + headers → a reply on the client's reply topic.

Correlation id, reply topic / partition and deadline travel in headers (``correlation_id``,
``reply_to``, ``reply_partition``, ``deadline_ms``) and in the record; the record wins where
both are present. Undecodable bytes go to the requests DLQ, and still get an error reply when
a correlation id and a reply topic can be read from the headers. Nothing is silent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from memstream.services.domain.identity import PUBLIC_MESSAGE
from memstream.services.handlers.guard import Guard, Opened
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


def _text(headers: Mapping[str, bytes], name: str) -> str | None:
    value = headers.get(name)
    if not value:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


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

    async def handle(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Mapping[str, bytes],
        position: Position,
    ) -> OutboundReply | None:
        if self._guard is not None:
            return await self._handle_guarded(self._guard, key, value, headers, position)
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
        reply = await self._retriever.retrieve(raw)
        outbound = None
        if reply_to:
            outbound = await self._send(
                str(reply_to), partition, reply["request_id"] or correlation_id, reply
            )
        else:
            log.warning("request %s has no reply_to; reply dropped", reply.get("request_id"))
        self._metrics.retrieval(reply)
        await self._audit(raw, reply)  # after the reply: the audit costs the client nothing
        return outbound

    async def _handle_guarded(
        self,
        guard: Guard,
        key: bytes | None,
        value: bytes | None,
        headers: Mapping[str, bytes],
        position: Position,
    ) -> OutboundReply | None:
        """Verified before any work; the reply (or the refusal) sealed to the asking client
        and written only to a reply topic's existing partition."""
        verdict = await guard.open_request(value, headers, position)
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
        reply = await self._retriever.retrieve(raw)
        sealed = guard.seal_reply(verdict.keys, verdict.request_id, self._encode(reply))
        outbound = await self._send_sealed(verdict.address, verdict.request_id, sealed)
        self._metrics.retrieval(reply)
        await self._audit(raw, reply)
        return outbound

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
            await self._log.record(request, reply)
        except AdapterError as exc:  # the answer was given; the audit trail has a gap: say so
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
