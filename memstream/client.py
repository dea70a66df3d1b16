"""The public client: what an agent imports to ask memstream (no torch, no Faust needed).

- ``AsyncMemory``: typed and async — ``retrieve`` returns a ``RetrievalReply`` (frozen
  dataclasses with every score), ``remember`` publishes MemoryEvents.
- ``Memory``: the same, synchronous, for code without an event loop: it runs its own loop on a
  thread of its own, so it also works inside a program whose loop is busy elsewhere.
- ``MemoryClient``: the raw async transport (replies as dicts), in ``memstream.streams.client``.

Must not import torch, Faust or anything of the worker (a test imports it with both blocked).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any, TypeVar

from memstream.services.domain.reply import (
    Gate,
    MalformedReply,
    MemoryResult,
    ReplyError,
    RetrievalReply,
    Scores,
)
from memstream.services.kafka_security import KafkaSecurity, resolve
from memstream.services.settings import Topics
from memstream.streams.client import MemoryClient, MemoryClientError, RetrievalTimeout
from memstream.streams.publisher import EventPublisher, Published, PublishError, Rejected

__all__ = [
    "AsyncMemory",
    "Gate",
    "MalformedReply",
    "Memory",
    "MemoryClient",
    "MemoryClientError",
    "MemoryResult",
    "PublishError",
    "Published",
    "Rejected",
    "ReplyError",
    "RetrievalReply",
    "RetrievalTimeout",
    "Scores",
]

T = TypeVar("T")


class AsyncMemory:
    """Typed async access to a memstream stack over Kafka.

    ``async with AsyncMemory(broker, credential=KEY) as memory: await memory.retrieve(…)``
    (``credential`` None: ``MEMSTREAM_KEY``; requests are signed and sealed with it, events
    signed; ``security`` None: the broker connection's TLS/SASL from ``MEMSTREAM_KAFKA_*``).
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Topics | None = None,
        *,
        credential: str | None = None,
        timeout: float = 10.0,
        security: KafkaSecurity | None = None,
    ) -> None:
        self._security = resolve(security)
        self._bootstrap = bootstrap
        self._topics = topics or Topics()
        self._credential = credential
        self._timeout = timeout
        self._client: MemoryClient | None = None
        self._publisher: EventPublisher | None = None
        self._publisher_lock = asyncio.Lock()

    async def start(self) -> AsyncMemory:
        client = MemoryClient(
            self._bootstrap,
            self._topics,
            credential=self._credential,
            timeout=self._timeout,
            security=self._security,
        )
        await client.start()
        self._client = client
        return self

    async def close(self) -> None:
        if self._client is not None:
            await self._client.stop()
            self._client = None
        if self._publisher is not None:
            await self._publisher.stop()
            self._publisher = None

    async def __aenter__(self) -> AsyncMemory:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def transport(self) -> MemoryClient:
        if self._client is None:
            raise MemoryClientError("the client is not started: use `async with AsyncMemory(…)`")
        return self._client

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
    ) -> RetrievalReply:
        """Ask one question (for the credential's tenant; naming another is refused); the
        reply's ``status`` says ok, skipped (the gate) or error."""
        record = await self.transport.retrieve(
            query,
            tenant,
            user=user,
            anchors=anchors,
            active_task=active_task,
            active_entities=active_entities,
            window=window,
            as_of=as_of,
            known_at=known_at,
            limit=limit,
            force=force,
            timeout=timeout,
            request_id=request_id,
        )
        return RetrievalReply.from_record(record)

    async def send(
        self, request: Mapping[str, Any], *, timeout: float | None = None
    ) -> RetrievalReply:
        """Send a RetrievalRequest record as is (addressing filled in) and await its reply."""
        return RetrievalReply.from_record(await self.transport.send(dict(request), timeout=timeout))

    async def remember(
        self, events: Iterable[Mapping[str, Any]], *, tenant: str | None = None
    ) -> Published:
        """Publish MemoryEvents (validated first; an invalid one is in ``rejected``, not sent).
        With ``tenant``, an event of another tenant is refused."""
        async with self._publisher_lock:
            if self._publisher is None:
                self._publisher = await EventPublisher(
                    self._bootstrap,
                    self._topics,
                    credential=self._credential,
                    security=self._security,
                ).start()
        return await self._publisher.publish(events, tenant_id=tenant)


class Memory:
    """``AsyncMemory`` for synchronous code: same methods, blocking, one loop thread each.

    ``with Memory("127.0.0.1:9092", credential=KEY) as memory: memory.retrieve("what …?")``
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Topics | None = None,
        *,
        credential: str | None = None,
        timeout: float = 10.0,
        security: KafkaSecurity | None = None,
    ) -> None:
        security = resolve(security)  # a bad setting fails here, before a thread starts
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="memstream-client", daemon=True
        )
        self._thread.start()
        self._memory = AsyncMemory(
            bootstrap, topics, credential=credential, timeout=timeout, security=security
        )
        try:
            self._call(self._memory.start())
        except BaseException:
            self._halt()
            raise

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result()

    def retrieve(self, query: str, tenant: str | None = None, **options: Any) -> RetrievalReply:
        """See ``AsyncMemory.retrieve``."""
        return self._call(self._memory.retrieve(query, tenant, **options))

    async def aretrieve(
        self, query: str, tenant: str | None = None, **options: Any
    ) -> RetrievalReply:
        """``retrieve`` for async callers on another loop (it runs on this client's loop)."""
        future = asyncio.run_coroutine_threadsafe(
            self._memory.retrieve(query, tenant, **options), self._loop
        )
        return await asyncio.wrap_future(future)

    def send(self, request: Mapping[str, Any], *, timeout: float | None = None) -> RetrievalReply:
        return self._call(self._memory.send(request, timeout=timeout))

    def remember(
        self, events: Iterable[Mapping[str, Any]], *, tenant: str | None = None
    ) -> Published:
        return self._call(self._memory.remember(list(events), tenant=tenant))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self._memory.close())
        finally:
            self._halt()

    def _halt(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
