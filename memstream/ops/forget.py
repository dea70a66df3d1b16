"""``memstream forget --tenant T (--entity TYPE:ID | --memory KEY)``: erase a data subject.

Bootstrap, then handle: the Postgres phase and the completion (vectors, caches, VACUUM) run
here through ``handlers.forget.Forgetter``. A Qdrant Edge shard is open in one process at a time,
so while a worker holds it the completion cannot run here: the erasure is then committed
(unreadable through Postgres) and an ``op: ERASE`` event for the same scope is published, on
which the worker completes every pending erasure of the tenant. That event is signed with the
tenant's admin credential (``--key``, MEMSTREAM_KEY or the data dir's credentials.json): the
worker refuses an ERASE from any other role. The erasure log records the admin key's id as who
asked (``--actor`` overrides).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.console import Console

from memstream.schemas import codec
from memstream.schemas.envelope import Credential, EventSigner
from memstream.services.domain.erasure import (
    ErasureResult,
    ErasureScope,
    InvalidScope,
    checked_reason,
    erase_event,
)
from memstream.services.ports import AdapterError
from memstream.services.settings import Settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def default_actor() -> str:
    """Who asked, as far as the command line knows (``--actor`` overrides)."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@dataclass(frozen=True)
class ForgetRequest:
    scope: ErasureScope
    reason: str
    actor: str
    dry_run: bool
    credential: str | None = None  # the admin credential, when one is known


def admin_credential(settings: Settings, explicit: str | None, tenant: str) -> str | None:
    """``--key``, else MEMSTREAM_KEY, else the tenant's admin credential in the data dir."""
    from memstream.ops.identity import CredentialsMissing, credential_for

    try:
        return credential_for(settings, "admin", explicit, tenant)
    except CredentialsMissing:
        return None


def request_from(args: object, settings: Settings | None = None) -> ForgetRequest:
    tenant = str(getattr(args, "tenant", "") or "")
    entity, memory = getattr(args, "entity", None), getattr(args, "memory", None)
    scope = (
        ErasureScope.entity(tenant, entity) if entity else ErasureScope.memory(tenant, memory or "")
    )
    credential = (
        admin_credential(settings, getattr(args, "key", None), scope.tenant_id)
        if settings is not None
        else None
    )
    actor = getattr(args, "actor", None)
    if not actor and credential is not None:
        actor = Credential.parse(credential).key_id
    return ForgetRequest(
        scope,
        checked_reason(getattr(args, "reason", None)),
        str(actor or default_actor()),
        bool(getattr(args, "dry_run", False)),
        credential,
    )


async def run_forget(settings: Settings, request: ForgetRequest) -> ErasureResult:
    """The erasure against the stack named by ``settings`` (endpoints resolved)."""
    from memstream.services import bootstrap

    index = bootstrap.build_index(
        settings, await asyncio.to_thread(bootstrap.model_dimension, settings)
    )
    async with bootstrap.offline_forgetter(settings, index) as forgetting:
        return await forgetting.forgetter.forget(
            request.scope.tenant_id,
            request.scope,
            request.reason,
            request.actor,
            request.dry_run,
        )


def hand_to_worker(settings: Settings, request: ForgetRequest) -> str:
    """Publish an ``op: ERASE`` event for the scope; returns its event id."""
    from memstream.streams.producer import EventProducer

    assert settings.broker is not None
    event_id = f"erase-{uuid.uuid4()}"
    record = erase_event(
        request.scope, event_id, request.reason, "memstream-cli", datetime.now(UTC)
    )
    value = codec.encode("MemoryEvent", record)
    headers: list[tuple[str, bytes]] = []
    if settings.auth == "required":  # the worker verifies events: only an admin may erase
        if request.credential is None:
            raise AdapterError(
                "no admin credential to sign the hand-off: pass --key or set MEMSTREAM_KEY"
            )
        signer = EventSigner(request.credential)
        headers = signer.headers(value, event_id, int(time.time() * 1000))
    producer = EventProducer(settings.broker)
    key = f"{request.scope.tenant_id}|erasure".encode()
    producer.send_raw(settings.topics.events, key, value, headers)
    if producer.finish(30) != 0:
        raise AdapterError(f"the ERASE event {event_id} could not be published")
    return event_id


def forget(settings: Settings, args: object, *, as_json: bool = False) -> int:
    from memstream.ops.stack import resolve_settings

    settings = resolve_settings(settings)
    try:
        request = request_from(args, settings)
    except InvalidScope as exc:
        err.print(f"memstream: forget: {exc}. Fix: --entity TYPE:ID or --memory KEY", markup=False)
        return 2
    try:
        result = asyncio.run(run_forget(settings, request))
    except AdapterError as exc:
        err.print(f"memstream: forget: nothing was erased: {exc}", markup=False)
        return 1
    handed = None
    if result.pending and settings.broker is not None:
        try:
            handed = hand_to_worker(settings, request)
        except AdapterError as exc:
            err.print(f"memstream: forget: {exc}", markup=False)
    if as_json:
        print(json.dumps(result.as_dict() | {"handed_to_worker": handed}, ensure_ascii=False))
    else:
        _print(result, handed)
    return 1 if result.pending and handed is None else 0


def _print(result: ErasureResult, handed: str | None) -> None:
    counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in result.counts.as_dict().items())
    if result.dry_run:
        out.print(f"dry run, nothing changed: would erase {counts}")
        return
    if result.noop and not result.completed:
        out.print("nothing to erase: the subject is not (or no longer) in the store")
        return
    if result.erasure_id is not None:
        out.print(f"erasure {result.erasure_id}: {counts}")
    if result.completed:
        out.print(
            f"completed {len(result.completed)} erasure(s): {result.vectors_deleted} vectors"
            f" deleted and the shard rewritten, {result.cache_keys_deleted} cache keys deleted,"
            " tables vacuumed"
        )
    if result.pending:
        out.print(f"vectors/caches pending ({result.error})")
        if handed is not None:
            out.print(f"handed to the running worker as ERASE event {handed}")
