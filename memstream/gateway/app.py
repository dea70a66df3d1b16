"""The HTTP gateway: FastAPI routes over ``Doors``; ``create_app`` builds one.

``POST /v1/retrieve`` · ``POST /v1/events`` (``?wait=true``: until recorded) ·
``GET /v1/memories/{memory_key}/history`` · ``GET /v1/audit/{request_id}`` ·
``POST /v1/forget`` (admin only) · ``GET /healthz`` ·
``/openapi.json`` and ``/docs`` (a page of our own: no CDN) · ``/mcp`` (MCP, streamable HTTP) ·
``/ui`` (the audit timeline). Every response carries ``X-Request-Id``; every error is
``{"request_id", "status": "error", "error": {"code", "message"}}``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from memstream.gateway.auth import DoorError, Principal, erasable_tenant
from memstream.gateway.service import REPLY_STATUS, Doors
from memstream.ops.history import tombstone_json, version_json

REQUEST_ID = "X-Request-Id"


class Anchor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str = Field(min_length=1, examples=["customer"])
    id: str = Field(min_length=1, examples=["C-17"])


class TimeWindow(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: datetime = Field(alias="from")
    to: datetime


class Context(BaseModel):
    model_config = ConfigDict(extra="forbid")
    active_task: str | None = None
    active_entities: list[Anchor] = []
    time_window: TimeWindow | None = None


class RetrieveBody(BaseModel):
    """A RetrievalRequest as JSON; ``tenant_id`` defaults to the credential's tenant."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(examples=["what did I return last month?"])
    tenant_id: str | None = None
    user_id: str | None = None
    anchors: list[Anchor] = []
    context: Context = Context()
    as_of: datetime | None = None
    known_at: datetime | None = None
    limit: int = 10
    force: bool = False
    request_id: str | None = None


class ForgetScope(BaseModel):
    """Whose data: ``{entity_type, entity_id}`` (every memory anchored to it) or
    ``{memory_key}`` (every version of one memory)."""

    model_config = ConfigDict(extra="forbid")
    entity_type: str | None = Field(default=None, examples=["customer"])
    entity_id: str | None = Field(default=None, examples=["C-17"])
    memory_key: str | None = Field(default=None, examples=[None])


class ForgetBody(BaseModel):
    """An erasure request; the tenant is the admin credential's."""

    model_config = ConfigDict(extra="forbid")
    scope: ForgetScope
    reason: str | None = Field(default=None, examples=["data-subject request 2026-114"])
    dry_run: bool = False


def error_body(request_id: str, code: str, message: str) -> dict[str, Any]:
    error = {"code": code, "message": message}
    return {"request_id": request_id, "status": "error", "error": error}


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", "") or uuid.uuid4().hex)


def _describe(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}"


async def caller(
    request: Request, authorization: Annotated[str | None, Header()] = None
) -> tuple[Principal, str]:
    """Every /v1 route's authentication: the one place credentials are checked."""
    doors: Doors = request.app.state.doors
    return await doors.authenticate(authorization)


Caller = Annotated[tuple[Principal, str], Depends(caller)]


async def admin(who: Caller) -> tuple[Principal, str]:
    """An admin of its tenant, refused (403) before the body is read."""
    erasable_tenant(who[0])
    return who


Admin = Annotated[tuple[Principal, str], Depends(admin)]


def create_app(doors: Doors, *, mcp: bool = True, ui: bool = True) -> FastAPI:
    """The gateway over ``doors`` (started and closed with the app)."""
    session_manager = None
    mcp_app = None
    if mcp:
        from memstream.gateway.mcp import build_server, http_endpoint

        mcp_server = build_server(doors, default_credential=None)
        mcp_app, session_manager = http_endpoint(mcp_server)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await doors.start()
        try:
            if session_manager is not None:
                async with session_manager.run():
                    yield
            else:
                yield
        finally:
            await doors.close()

    app = FastAPI(
        title="memstream gateway",
        version="1",
        description="Versioned, trust-scored memory for AI agents: retrieve, publish, history, "
        "audit. Authenticate with `Authorization: Bearer <credential>`.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.doors = doors

    @app.middleware("http")
    async def request_ids(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        request.state.request_id = request.headers.get(REQUEST_ID) or uuid.uuid4().hex
        response = await call_next(request)
        response.headers[REQUEST_ID] = request.state.request_id
        return response

    @app.exception_handler(DoorError)
    async def door_error(request: Request, exc: DoorError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse(
            error_body(request_id_of(request), exc.code, exc.message),
            status_code=exc.status,
            headers=headers,
        )

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        message = "; ".join(_describe(e) for e in exc.errors()[:10])
        return JSONResponse(
            error_body(request_id_of(request), "bad_field", message), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(
            error_body(request_id_of(request), code, str(exc.detail)),
            status_code=exc.status_code,
        )

    @app.post("/v1/retrieve", summary="Ask memory a question (a RetrievalRequest)")
    async def retrieve(body: RetrieveBody, request: Request, who: Caller) -> JSONResponse:
        record = body.model_dump(by_alias=True)
        record["request_id"] = body.request_id or request_id_of(request)
        request.state.request_id = record["request_id"]
        reply = await doors.retrieve(who[0], who[1], record)
        status = 200 if reply.error is None else REPLY_STATUS.get(reply.error.code, 400)
        return JSONResponse(reply.to_json(), status_code=status)

    @app.post(
        "/v1/events",
        status_code=202,
        summary="Publish one MemoryEvent or a list",
        description="`tenant_id` may be left out (it is the credential's; naming another is "
        "403) and so may `event_id` (one is made and returned in `event_ids`, in order; send "
        "your own to make retries idempotent). `acknowledged` says what the answer promises: "
        "`broker` (202: on the events topic, not yet recorded) or, once nothing is pending, "
        "`ledger` (200: each event recorded in Postgres, as a version or a dead letter with "
        "its reason). Without `wait` the answer follows the stack: on the embedded broker, "
        "which keeps its topics in memory, it waits for the ledger; on Kafka it answers for "
        "the broker. `?wait=true` always waits, `?wait=false` never does.",
    )
    async def events(
        body: dict[str, Any] | list[dict[str, Any]],
        request: Request,
        who: Caller,
        wait: Annotated[
            bool | None, Query(description="until ingested or dead-lettered (default: the stack's)")
        ] = None,
        timeout: Annotated[float, Query(gt=0, le=600)] = 60.0,
    ) -> JSONResponse:
        batch = body if isinstance(body, list) else [body]
        outcome = await doors.remember(who[0], who[1], batch, wait=wait, wait_seconds=timeout)
        settled = outcome.waited and not outcome.pending
        return JSONResponse(
            {"request_id": request_id_of(request), **outcome.to_json()},
            status_code=200 if settled else 202,
        )

    @app.get("/v1/memories/{memory_key}/history", summary="A memory's versions, bi-temporally")
    async def history(
        memory_key: str,
        request: Request,
        who: Caller,
        tenant_id: str | None = None,
        as_of: Annotated[datetime | None, Query(description="valid time (ISO)")] = None,
        known_at: Annotated[datetime | None, Query(description="transaction time (ISO)")] = None,
    ) -> dict[str, Any]:
        tenant, chain = await doors.history(
            who[0], memory_key, tenant_id=tenant_id, as_of=as_of, known_at=known_at
        )
        if not chain:
            raise DoorError(
                "not_found", f"no memory {memory_key!r} for tenant {tenant!r} at that time", 404
            )
        marks = await doors.tombstones(tenant, memory_key)
        versions = []
        for version in chain:
            line = version_json(version)
            if version.version_id in marks:
                line["erased"] = tombstone_json(marks[version.version_id])
            versions.append(line)
        return {
            "request_id": request_id_of(request),
            "tenant_id": tenant,
            "memory_key": memory_key,
            "versions": versions,
        }

    @app.get("/v1/audit/{request_id}", summary="What an agent was told for one request, and why")
    async def audit(request_id: str, request: Request, who: Caller) -> dict[str, Any]:
        entries = await doors.audit(who[0], request_id)
        if not entries:
            raise DoorError("not_found", f"no request {request_id!r} in the query log", 404)
        return {
            "request_id": request_id_of(request),
            "answers": [{**e, "answered_at": e["answered_at"].isoformat()} for e in entries],
        }

    @app.post(
        "/v1/forget",
        summary="Erase a data subject (admin credential only)",
        description="Erases every version of a memory, or every memory anchored to an entity, in "
        "the credential's tenant: content becomes a tombstone (erased when, erasure id, reason, "
        "digest). The reply holds counts, the erasure id and digests, never the erased data. "
        "200 once completed (or for a dry run); 202 when the running worker completes it "
        "(`?wait=true` waits for that).",
    )
    async def forget(
        body: ForgetBody,
        request: Request,
        who: Admin,
        wait: Annotated[bool, Query(description="until the worker has completed it")] = False,
        timeout: Annotated[float, Query(gt=0, le=600)] = 60.0,
    ) -> JSONResponse:
        forgotten = await doors.forget(
            who[0],
            who[1],
            body.scope.model_dump(exclude_none=True),
            reason=body.reason,
            dry_run=body.dry_run,
            wait=wait,
            wait_seconds=timeout,
        )
        return JSONResponse(
            {"request_id": request_id_of(request), **forgotten.to_json()},
            status_code=200 if forgotten.settled else 202,
        )

    @app.get("/healthz", summary="Is the gateway up, and can it reach Postgres")
    async def healthz(request: Request) -> JSONResponse:
        parts = await doors.health()
        ok = parts["postgres"] == "ok"
        return JSONResponse(
            {"request_id": request_id_of(request), "status": "ok" if ok else "down", **parts},
            status_code=200 if ok else 503,
        )

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        from memstream.gateway.pages import docs_page

        return HTMLResponse(docs_page(app.openapi()))

    if ui:
        from memstream.gateway.ui import add_ui

        add_ui(app, doors)
    if mcp_app is not None:
        from starlette.routing import Route

        app.router.routes.append(Route("/mcp", endpoint=mcp_app, methods=["GET", "POST", "DELETE"]))
    return app
