"""Doors: what the HTTP gateway, the MCP server and the timeline page share.

Retrievals and events go through the request/reply path and the events topic (one typed
``AsyncMemory`` per caller credential, so the worker sees who asks); history and audit are
read-only views of Postgres through the existing adapters. Every method takes the caller's
``Principal`` and refuses with a ``DoorError`` what its role or tenant does not allow.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memstream.client import AsyncMemory, MemoryClientError, PublishError, RetrievalTimeout
from memstream.gateway.auth import (
    Authenticator,
    DoorError,
    Principal,
    bearer,
    erasable_tenant,
    readable_tenant,
    refused,
    writable,
)
from memstream.gateway.erasure import Forgotten, erasure_scope, wait_completed
from memstream.ops.ingest_status import acknowledgement, wait_for
from memstream.services.domain import versioning
from memstream.services.domain.erasure import InvalidScope, checked_reason
from memstream.services.domain.errors import InvalidEvent
from memstream.services.domain.identity import AuthError, Forbidden
from memstream.services.domain.identity import unbound_source as domain_unbound
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.reply import RetrievalReply
from memstream.services.domain.validation import validate_event
from memstream.services.ports import AdapterError, ErasureMark
from memstream.services.settings import Settings

if TYPE_CHECKING:
    from contextlib import AsyncExitStack

    from memstream.services.bootstrap import Stores

T = TypeVar("T")
log = logging.getLogger(__name__)

MAX_CLIENTS = 32  # one Kafka client per credential in use; the least recently used goes
MAX_EVENTS = 1000  # per call

# Error-reply codes → HTTP status; anything else is 400.
REPLY_STATUS = {
    "missing_tenant": 422,
    "missing_query": 422,
    "limit_out_of_range": 422,
    "bad_time": 422,
    "bad_field": 422,
    "unknown_tenant": 404,
    "unauthenticated": 401,
    "forbidden": 403,
    "deadline_exceeded": 504,
    "undecodable": 400,
}


@dataclass
class Ingestion:
    """What became of published events: ids sent (made here for events that had none), and
    with ``wait`` where each ended.

    ``acknowledged`` says what the answer promises: ``broker`` — every event is on the events
    topic (acks=all), not yet recorded; the worker records or dead-letters it next, and an
    embedded broker loses what the worker has not read when ``up`` stops. ``ledger`` — every
    event is recorded in Postgres, as a version (``ingested``) or a dead letter with its
    reason (``dead_lettered``): only ``?wait=true`` answers that, once nothing is ``pending``.
    """

    sent: list[str] = field(default_factory=list)
    ingested: list[str] = field(default_factory=list)
    dead_lettered: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    waited: bool = False

    @property
    def acknowledged(self) -> str:
        return "ledger" if self.waited and not self.pending else "broker"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"event_ids": self.sent, "acknowledged": self.acknowledged}
        if self.waited:
            body.update(
                ingested=self.ingested, dead_lettered=self.dead_lettered, pending=self.pending
            )
        return body


def completed_event(principal: Principal, index: int, raw: Any) -> Any:
    """An event as the gateway sends it: the tenant is the credential's (an event may repeat
    it or leave it out; one naming another tenant is refused, 403, whether that tenant exists
    or not), and an event without ``event_id`` gets a fresh one. A made id makes a retried call
    a second event: a producer that retries sends its own ids (the ledger is idempotent on
    them)."""
    if not isinstance(raw, Mapping):
        return raw  # validation names what is wrong with it
    named = raw.get("tenant_id")
    if named not in (None, "", principal.tenant_id):
        raise DoorError(
            "forbidden",
            f"event {index} names tenant {str(named)!r}; this credential publishes for tenant "
            f"{principal.tenant_id!r} only (leave tenant_id out: the credential says it)",
            403,
        )
    event = {**raw, "tenant_id": principal.tenant_id}
    if not event.get("event_id"):
        event["event_id"] = uuid.uuid4().hex
    return event


def unbound_source(principal: Principal, index: int, source: object) -> DoorError:
    """A producer's event from a source its key is not bound to (a key is bound to sources so
    that one system cannot claim another's authority): the producer is told what its own key
    speaks for and the command an operator runs for a key that speaks for the new source."""
    return DoorError("forbidden", f"event {index}: {domain_unbound(principal, source)}", 403)


def _anchor_list(items: Any) -> list[dict[str, str]]:
    return [{"type": str(a["type"]), "id": str(a["id"])} for a in items or ()]


def request_record(body: Mapping[str, Any], tenant_id: str) -> dict[str, Any]:
    """A RetrievalRequest record from a JSON-shaped request (the HTTP body, an MCP call)."""
    context = dict(body.get("context") or {})
    window = context.get("time_window")
    return {
        "request_id": str(body.get("request_id") or uuid.uuid4().hex),
        "tenant_id": tenant_id,
        "query": body.get("query") or "",
        "user_id": body.get("user_id"),
        "anchors": _anchor_list(body.get("anchors")),
        "context": {
            "active_task": context.get("active_task"),
            "active_entities": _anchor_list(context.get("active_entities")),
            "time_window": {"from": window["from"], "to": window["to"]} if window else None,
        },
        "as_of": body.get("as_of"),
        "known_at": body.get("known_at"),
        "limit": int(body.get("limit") or 10),
        "force": bool(body.get("force", False)),
    }


class Doors:
    def __init__(
        self,
        settings: Settings,
        authenticator: Authenticator | None = None,
        *,
        timeout: float = 15.0,
    ) -> None:
        """``settings`` with every endpoint resolved (broker, postgres_dsn); without an
        ``authenticator``, ``start`` opens the tenants' credential store."""
        assert settings.broker is not None and settings.postgres_dsn is not None
        self.settings = settings
        self._authenticator = authenticator
        self._store: Any = None
        self.timeout = timeout
        self._stores: Stores | None = None
        self._exit: AsyncExitStack | None = None
        self._acknowledgement: str | None = None
        self._clients: OrderedDict[str, AsyncMemory] = OrderedDict()
        self._lock = asyncio.Lock()
        self._erasing = asyncio.Lock()  # one erasure at a time: one shard opener per process

    async def start(self) -> Doors:
        from contextlib import AsyncExitStack

        from memstream.services import bootstrap

        assert self.settings.postgres_dsn is not None
        self._exit = AsyncExitStack()
        self._stores = await self._exit.enter_async_context(
            bootstrap.stores(self.settings.postgres_dsn, pool=4)
        )
        if self._authenticator is None:
            self._store = await bootstrap.credential_store(self.settings)
            self._authenticator = self._store
        return self

    async def close(self) -> None:
        for memory in self._clients.values():
            await memory.close()
        self._clients.clear()
        if self._exit is not None:
            await self._exit.aclose()
            self._exit = self._stores = None
        if self._store is not None:
            await self._store.close()
            self._store = self._authenticator = None

    @property
    def stores(self) -> Stores:
        assert self._stores is not None, "Doors.start() first"
        return self._stores

    async def authenticate(self, authorization: str | None) -> tuple[Principal, str]:
        """The caller of an ``Authorization`` header, and its credential."""
        secret = bearer(authorization)
        assert self._authenticator is not None, "Doors.start() first"
        try:
            return await self._authenticator.authenticate(secret), secret
        except AuthError as exc:
            raise refused(exc) from None

    async def _memory(self, credential: str) -> AsyncMemory:
        async with self._lock:
            memory = self._clients.get(credential)
            if memory is not None:
                self._clients.move_to_end(credential)
                return memory
            assert self.settings.broker is not None
            memory = await AsyncMemory(
                self.settings.broker,
                self.settings.topics,
                credential=credential,
                timeout=self.timeout,
                security=self.settings.kafka,
            ).start()
            self._clients[credential] = memory
            if len(self._clients) > MAX_CLIENTS:
                _, oldest = self._clients.popitem(last=False)
                await oldest.close()
            return memory

    async def retrieve(
        self, principal: Principal, credential: str, body: Mapping[str, Any]
    ) -> RetrievalReply:
        tenant = readable_tenant(principal, body.get("tenant_id"))
        record = request_record(body, tenant)
        memory = await self._memory(credential)
        try:
            return await memory.send(record, timeout=self.timeout)
        except RetrievalTimeout as exc:
            raise DoorError("timeout", str(exc), 504) from None
        except MemoryClientError as exc:
            raise DoorError("bad_field", str(exc), 422) from None

    async def remember(
        self,
        principal: Principal,
        credential: str,
        events: Sequence[Mapping[str, Any]],
        *,
        wait: bool | None = None,
        wait_seconds: float = 60.0,
    ) -> Ingestion:
        """Validate every event first: one invalid, none sent (422 naming each). The tenant
        is the credential's and a missing ``event_id`` is made (``completed_event``).

        ``wait`` None follows the stack (``ingest_status.acknowledgement``, read once): on the
        in-memory embedded broker, until every event is in the ledger (or dead-lettered), so an
        acknowledged event survives a crash of ``up``; on Kafka the broker's ack is the contract."""
        if principal.role not in ("producer", "admin"):  # before reading a single event
            raise refused(Forbidden(f"role {principal.role} may not publish"))
        if not events:
            raise DoorError("missing_field", "no events: send one MemoryEvent or a list", 422)
        if len(events) > MAX_EVENTS:
            raise DoorError("bad_field", f"{len(events)} events; at most {MAX_EVENTS} a call", 422)
        now = datetime.now(UTC)
        problems = []
        events = [completed_event(principal, index, raw) for index, raw in enumerate(events)]
        for index, raw in enumerate(events):
            try:
                event = validate_event(raw, now)
            except InvalidEvent as exc:
                problems.append(f"event {index}: {exc.reason}: {exc.detail}")
                continue
            if principal.role == "producer" and event.source_system not in principal.sources:
                raise unbound_source(principal, index, event.source_system)  # 403: none sent
            writable(principal, event.tenant_id, event.source_system)  # 403: none sent
        if problems:
            raise DoorError("invalid_event", "; ".join(problems) + " (nothing was sent)", 422)
        memory = await self._memory(credential)
        try:
            published = await memory.remember(events)
        except PublishError as exc:
            raise DoorError("broker_unavailable", str(exc), 503) from None
        outcome = Ingestion(sent=[event_id for _, event_id in published.sent])
        if wait is None:
            if self._acknowledgement is None:
                self._acknowledgement = await asyncio.to_thread(acknowledgement, self.settings)
            wait = self._acknowledgement == "ledger"
        if wait:
            status = await asyncio.to_thread(
                wait_for, self.settings, published.sent, timeout=wait_seconds
            )
            outcome.waited = True
            outcome.ingested = sorted(i[1] for i in status.ingested)
            outcome.dead_lettered = {i[1]: reason for i, reason in status.dead.items()}
            outcome.pending = sorted(i[1] for i in status.pending)
        return outcome

    async def history(
        self,
        principal: Principal,
        memory_key: str,
        *,
        tenant_id: str | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
    ) -> tuple[str, list[MemoryVersion]]:
        tenant = readable_tenant(principal, tenant_id)
        chain = await self._read(self.stores.repo.chain(tenant, memory_key))
        if chain and known_at is not None:
            chain = versioning.known_at(chain, known_at)
        if chain and as_of is not None:
            valid = versioning.valid_at(chain, as_of)
            chain = [valid] if valid is not None else []
        return tenant, chain

    async def tombstones(self, tenant_id: str, memory_key: str) -> dict[str, ErasureMark]:
        """By version id, what erased the erased versions of a memory (read by a caller already
        allowed to read ``tenant_id``)."""
        return await self._read(self.stores.erasure.marks(tenant_id, memory_key))

    async def forget(
        self,
        principal: Principal,
        credential: str,
        scope: Mapping[str, Any],
        *,
        reason: str | None = None,
        dry_run: bool = False,
        wait: bool = False,
        wait_seconds: float = 60.0,
    ) -> Forgotten:
        """Erase ``scope`` of the admin's tenant, as ``memstream forget`` does: 403 for any other
        role, 422 for a bad scope, 503 when Postgres fails (nothing is then erased)."""
        from memstream.ops.forget import ForgetRequest, hand_to_worker, run_forget

        tenant = erasable_tenant(principal)
        try:
            request = ForgetRequest(
                erasure_scope(tenant, scope),
                checked_reason(reason),
                principal.key_id,
                dry_run,
                credential,
            )
        except InvalidScope as exc:
            raise DoorError("invalid_scope", str(exc), 422) from None
        async with self._erasing:
            try:
                result = await run_forget(self.settings, request)
            except AdapterError as exc:
                raise DoorError("storage_unavailable", f"nothing was erased: {exc}", 503) from None
        forgotten = Forgotten(result)
        if result.pending:
            try:
                handed = await asyncio.to_thread(hand_to_worker, self.settings, request)
            except AdapterError as exc:
                log.error("erasure committed, not handed to the worker: %s", exc)
                return forgotten
            forgotten.handed_to_worker = handed
            if wait:
                erasures = self.stores.erasure
                forgotten.completed_by_worker = await self._read(
                    wait_completed(erasures.pending, tenant, result.pending, wait_seconds)
                )
        return forgotten

    async def audit(self, principal: Principal, request_id: str) -> list[dict[str, Any]]:
        """The logged answers to ``request_id`` that the caller's tenant may see."""
        tenant = readable_tenant(principal, None)
        entries = await self._read(self.stores.query_log.find(request_id))
        return [e for e in entries if e["tenant_id"] == tenant]

    async def answers_about(
        self, principal: Principal, tenant_id: str, memory_key: str
    ) -> list[dict[str, Any]]:
        log = self.stores.query_log
        tenant = readable_tenant(principal, tenant_id)
        return await self._read(log.answers_about(tenant, memory_key))

    async def _read(self, pending: Awaitable[T]) -> T:
        try:
            return await pending
        except AdapterError as exc:
            raise DoorError("storage_unavailable", str(exc), 503) from None

    async def health(self) -> dict[str, str]:
        parts = {"postgres": "ok", "broker": self.settings.broker or ""}
        try:
            await self.stores.repo.ping()
        except Exception as exc:  # reported, not raised: this is the health check
            parts["postgres"] = f"down: {exc}"
        return parts
