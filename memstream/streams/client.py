"""MemoryClient: the async library agents use to ask memstream over Kafka.

One reply consumer per client instance, on one partition of the replies topic (assigned, no
consumer group, so it starts at once); requests carry ``correlation_id``, ``reply_to``,
``reply_partition`` and ``deadline_ms`` in headers and record; replies resolve futures by
correlation id; a reply that arrives after its request timed out is dropped. Not built on
Faust's ``agent.ask()`` (no timeout, a new reply topic per start, 3 s before the first fetch).

Every request is signed with the client's credential (argument, or ``MEMSTREAM_KEY``) and sealed
to the service's public key with a fresh X25519 key; the reply must open with that request's
session key, so a reply forged by anyone who reads the topics is rejected and counted
(``forged_replies``). See ``memstream.schemas.envelope``.

Failure contract: every error a caller sees is a ``MemoryClientError`` (the broker's wrapped in
``BrokerUnavailable``); the timeout bounds the whole call, sending included; ``stop()`` fails
pending calls with ``ClientStopped``. After a broker restart the producer reconnects by itself
and the reply reader resumes at the end of its partition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from memstream.schemas import codec, envelope
from memstream.services.domain import generations as gens
from memstream.services.kafka_security import KafkaSecurity, resolve
from memstream.services.settings import Topics
from memstream.streams import tracked
from memstream.streams.errors import BrokerUnavailable as BrokerUnavailable
from memstream.streams.errors import ClientStopped as ClientStopped
from memstream.streams.errors import MemoryClientError as MemoryClientError
from memstream.streams.errors import RetrievalTimeout as RetrievalTimeout
from memstream.streams.errors import anchors_of
from memstream.streams.stalls import LOWER, RAISE, StallWatch, lagging, lowered, raised

log = logging.getLogger(__name__)

IDLE_FETCH_WAIT_MS = 5  # replies polled this often when nothing is awaited (~4 % of a core)
# and this often while a request awaits its reply. Never 1: measured on the bundled Tansu, a
# fetch with a 1 ms wait on a reply partition the worker had written ~3,000 replies to (one
# batch each) came back empty every time, while the records were there — a client at the end
# of its partition then never saw another reply (the soak's collapse: 2,400 replies a minute,
# then 8, each lane waiting out its timeout); with 2 ms every reply arrived. Longer partitions
# need longer waits: ``_check_stall`` (``memstream.streams.stalls``).
PENDING_FETCH_WAIT_MS = 2
START_SECONDS = 5.0  # connecting to the broker at start() takes this long at most
READ_RETRY_SECONDS = 0.5  # the reply reader's pause after a broker error
TOKEN_LIFETIME_MS = 600_000  # a request token is good this long at most (the service caps it)


class MemoryClient:
    def __init__(
        self,
        bootstrap: str,
        topics: Topics | None = None,
        *,
        reply_partition: int | None = None,
        timeout: float = 10.0,
        credential: str | None = None,
        security: KafkaSecurity | None = None,
    ) -> None:
        """``security`` None: ``MEMSTREAM_KAFKA_*`` (``memstream.services.kafka_security``)."""
        self._security = resolve(security)
        self._credential_text = credential
        self._credential: envelope.Credential | None = None
        self._signer: Any = None
        self._bootstrap = bootstrap
        self._topics = topics or Topics()
        self._partition = (
            reply_partition
            if reply_partition is not None
            else random.randrange(self._topics.reply_partitions)  # noqa: S311 - not crypto
        )
        self._timeout = timeout
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._floor_ms = 0  # the reply fetch wait the broker has shown it needs (stalls)
        # The generations' period, once a sealed reply told it (domain.generations); None:
        # the configured topics. The reply partitions read: the configured one and those of
        # the generations this client sends to.
        self._rotation_ms: int | None = None
        self._reading: set[TopicPartition] = set()
        self._awaiting: dict[str, str] = {}  # request id → the reply topic it asked for
        self._following = asyncio.Lock()
        self._stalls = StallWatch()
        self._sessions: dict[str, envelope.SessionKeys] = {}
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self.late_replies = 0
        self.forged_replies = 0
        self.fetch_stalls = 0  # times the reply fetch wait was raised (memstream.streams.stalls)

    async def start(self) -> MemoryClient:
        text = self._credential_text or os.environ.get("MEMSTREAM_KEY", "").strip()
        if not text:
            raise MemoryClientError(
                "no credential: pass credential=… or set MEMSTREAM_KEY (memstream keys create)"
            )
        try:
            self._credential = envelope.Credential.parse(text)
        except envelope.EnvelopeError as exc:
            raise MemoryClientError(f"the credential is unusable: {exc}") from None
        self._signer = self._credential.signer()
        try:
            await asyncio.wait_for(self._connect(), START_SECONDS)
        except (KafkaError, OSError, TimeoutError) as exc:
            await self._close_drivers()
            raise BrokerUnavailable(
                f"cannot reach the broker at {self._bootstrap} within {START_SECONDS:.0f}s "
                f"({exc or type(exc).__name__}). Fix: start memstream (`memstream up`), or "
                "point the client at a running broker"
            ) from exc
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="replies")
        return self

    async def _connect(self) -> None:
        self._producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            linger_ms=0,
            acks=1,
            request_timeout_ms=int(max(self._timeout, 1.0) * 1000),
            **self._security.aiokafka_options(),
        )
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=IDLE_FETCH_WAIT_MS,
            auto_offset_reset="latest",
            **self._security.aiokafka_options(),
        )
        await self._producer.start()
        await self._consumer.start()
        partition = TopicPartition(self._topics.replies, self._partition)
        self._reading = {partition}
        self._consumer.assign([partition])
        await self._consumer.seek_to_end(partition)
        await self._consumer.position(partition)  # resolve now, before the first request

    def _route(self) -> tuple[str, str]:
        """The (requests, replies) topics for the next request: the current generation's
        when the service rotates them, else the configured ones."""
        if not self._rotation_ms:
            return self._topics.requests, self._topics.replies
        gen = gens.generation(int(time.time() * 1000), self._rotation_ms)
        return gens.named(self._topics.requests, gen), gens.named(self._topics.replies, gen)

    async def _follow(self, replies: str) -> None:
        """Read our partition of ``replies`` from its end, before the request is sent; stop
        reading generations that no awaited request and no current route uses."""
        consumer = self._consumer
        assert consumer is not None
        wanted = TopicPartition(replies, self._partition)
        used = {wanted, TopicPartition(self._topics.replies, self._partition)}
        used |= {TopicPartition(t, self._partition) for t in self._awaiting.values()}
        if wanted in self._reading and self._reading <= used:
            return
        kept = {}
        for tp in self._reading & used:  # assign() forgets positions: carry them over
            with contextlib.suppress(AssertionError, KafkaError):
                kept[tp] = await consumer.position(tp)
        self._reading = (self._reading & used) | {wanted}
        consumer.assign(sorted(self._reading))
        for tp, offset in kept.items():
            consumer.seek(tp, offset)
        if wanted not in kept:
            await consumer.seek_to_end(wanted)
            await consumer.position(wanted)

    async def stop(self) -> None:
        """Stop reading and sending; calls still awaiting a reply fail with ``ClientStopped``."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        for request_id, future in list(self._pending.items()):
            if not future.done():
                future.set_exception(
                    ClientStopped(
                        f"the client was stopped before request {request_id} was answered"
                    )
                )
        await self._close_drivers()

    async def _close_drivers(self) -> None:
        producer, consumer = self._producer, self._consumer
        self._producer = self._consumer = None
        for driver in (producer, consumer):
            if driver is not None:
                with contextlib.suppress(KafkaError, OSError):
                    await driver.stop()

    async def __aenter__(self) -> MemoryClient:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _pace(self) -> None:
        """Fetch replies every 2 ms while a request awaits one, else every few (Tansu holds a
        fetch for its whole wait even when the reply arrives meanwhile) — never faster than
        the broker has shown it can answer (``memstream.streams.stalls``)."""
        fetcher = getattr(self._consumer, "_fetcher", None)
        if fetcher is not None:  # aiokafka reads it for each fetch request it builds
            wait = PENDING_FETCH_WAIT_MS if self._pending else IDLE_FETCH_WAIT_MS
            fetcher._fetch_max_wait_ms = max(wait, self._floor_ms)

    def _check_stall(self, partitions: list[TopicPartition], delivered: bool) -> None:
        """Three empty fetches in a row while a reply partition's high watermark is past our
        position: the broker needs a longer wait to find our offset (see
        ``memstream.streams.stalls``); double it, up to ``STALL_CAP_MS``. A calm run of
        fetches halves it again."""
        behind = self._consumer is not None and lagging(self._consumer, partitions)
        verdict = self._stalls.observe(delivered, behind)
        if verdict == LOWER and self._floor_ms:
            before, self._floor_ms = self._floor_ms, lowered(self._floor_ms, PENDING_FETCH_WAIT_MS)
            log.info("reply fetches are calm again: fetch wait floor %d → %d ms", before,
                     self._floor_ms)  # fmt: skip
            self._pace()
        if verdict != RAISE:
            return
        self.fetch_stalls += 1
        before = max(PENDING_FETCH_WAIT_MS, self._floor_ms)
        self._floor_ms = raised(before)
        log.warning(
            "the broker answered reply fetches empty while replies were waiting: fetch "
            "wait %d → %d ms", before, self._floor_ms,
        )  # fmt: skip
        self._pace()

    async def _read(self) -> None:
        assert self._consumer is not None
        while True:
            try:
                batches = await self._consumer.getmany(timeout_ms=200)
            except KafkaError as exc:  # a broker restart: resume at the end once it is back
                log.warning("reading replies failed (%s); retrying", exc)
                await asyncio.sleep(READ_RETRY_SECONDS)
                with contextlib.suppress(KafkaError, OSError, AssertionError):
                    await self._consumer.seek_to_end(*self._reading)
                continue
            for messages in batches.values():
                for message in messages:
                    self._deliver(message.key, message.value)
            self._check_stall(sorted(self._reading), any(batches.values()))

    def _deliver(self, key: bytes | None, value: bytes | None) -> None:
        request_id = (key or b"").decode("utf-8", "replace")
        future = self._pending.get(request_id)
        keys = self._sessions.get(request_id)
        if future is None or keys is None or future.done():
            self.late_replies += 1  # another client's, or ours after it timed out
            return
        try:
            body = envelope.open_sealed(keys.reply, value or b"", envelope.reply_aad(request_id))
            reply = codec.decode("RetrievalReply", body)
        except (envelope.EnvelopeError, codec.CodecError) as exc:
            self.forged_replies += 1  # not sealed by the service for this request: ignored
            log.warning("reply to %s rejected (not from the service): %s", request_id, exc)
            return
        if reply.get("request_id") != request_id:
            self.forged_replies += 1
            return
        self._pending.pop(request_id, None)
        rotation = reply.get("rotation_ms")
        self._rotation_ms = rotation if isinstance(rotation, int) and rotation > 0 else None
        future.set_result(reply)

    async def retrieve(
        self,
        query: str,
        tenant: str | None = None,
        *,
        user: str | None = None,
        anchors: Sequence[Any] = (),
        active_task: str | None = None,
        active_entities: Sequence[Any] = (),
        window: tuple[datetime, datetime] | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        limit: int = 10,
        force: bool = False,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Send one RetrievalRequest and wait for its reply (RetrievalTimeout otherwise)."""
        record = {
            "request_id": request_id or uuid.uuid4().hex,
            "tenant_id": tenant or "",  # the credential's tenant when empty
            "query": query,
            "user_id": user,
            "anchors": anchors_of(anchors),
            "context": {
                "active_task": active_task,
                "active_entities": anchors_of(active_entities),
                "time_window": {"from": window[0], "to": window[1]} if window else None,
            },
            "as_of": as_of,
            "known_at": known_at,
            "limit": limit,
            "force": force,
        }
        return await self.send(record, timeout=timeout)

    async def send(self, record: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Send a request record as is (missing addressing filled in) and await the reply."""
        if self._producer is None or self._credential is None:
            raise MemoryClientError("the client is not started: use `async with MemoryClient(…)`")
        seconds = timeout if timeout is not None else self._timeout
        request_id = str(record.get("request_id") or uuid.uuid4().hex)
        deadline_ms = int((time.time() + seconds) * 1000)
        requests, replies = self._route()
        record = {
            **record,
            "request_id": request_id,
            "reply_to": replies,
            "reply_partition": self._partition,
            "deadline_ms": deadline_ms,
        }
        try:
            plain = codec.encode("RetrievalRequest", record)
        except codec.CodecError as exc:
            raise MemoryClientError(
                f"request {request_id} is not a RetrievalRequest: {exc}"
            ) from exc
        reply_key, keys = envelope.client_session(self._credential.service_public)
        value = envelope.seal(keys.request, plain, envelope.REQUEST_AAD)
        reply_key_text = envelope.b64(reply_key)
        partition = str(self._partition)
        token = envelope.sign(
            self._credential,
            self._signer,
            "request",
            value,
            request_id,
            min(deadline_ms, int(time.time() * 1000) + TOKEN_LIFETIME_MS),
            envelope.request_binding(reply_key_text.encode(), replies, partition),
        )
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._sessions[request_id] = keys
        self._pace()
        headers = [
            ("correlation_id", request_id.encode()),
            ("reply_to", replies.encode()),
            ("reply_partition", partition.encode()),
            ("deadline_ms", str(deadline_ms).encode()),
            (envelope.AUTH_HEADER, token.encode()),
            (envelope.REPLY_KEY_HEADER, reply_key_text.encode()),
        ]
        producer = self._producer
        loop = asyncio.get_running_loop()
        started = loop.time()

        ack = asyncio.Event()  # the broker took it (the timeout says)

        async def deliver() -> dict[str, Any]:
            if replies != self._topics.replies:
                async with self._following:
                    await self._follow(replies)
            self._awaiting[request_id] = replies
            tracked.track(producer.client, requests, base=self._topics.requests)
            await producer.send_and_wait(
                requests,
                value=value,
                key=request_id.encode(),  # the random id: the tenant is not written in clear
                headers=headers,
            )
            ack.set()
            return await asyncio.shield(future)

        try:
            return await asyncio.wait_for(deliver(), seconds)
        except TimeoutError:
            if replies != self._topics.replies:  # the next request takes the configured
                self._rotation_ms = None  # topics (always served) until a reply says again
            raise RetrievalTimeout(request_id, seconds, sent=ack.is_set(), topic=requests) from None
        except KafkaError as exc:
            raise BrokerUnavailable(
                f"request {request_id} could not be sent to {self._bootstrap} after "
                f"{loop.time() - started:.1f}s ({type(exc).__name__}: {exc}): is memstream up?"
            ) from exc
        finally:
            self._pending.pop(request_id, None)
            self._sessions.pop(request_id, None)
            self._awaiting.pop(request_id, None)
            self._pace()
