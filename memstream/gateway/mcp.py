"""The MCP server: memstream's doors as tools a model can call (the official ``mcp`` SDK).

Tools: ``search_memory`` (a retrieval: the rendered XML block the model reads, with every
result's scores), ``memory_history`` (a memory's versions), ``remember`` (publish an event) and
``audit_request`` (what an agent was told, and why). Over stdio (``memstream mcp``: the
credential comes from the environment) and streamable HTTP at ``/mcp`` on the gateway (the
credential is each request's ``Authorization: Bearer`` header).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import CallToolResult, TextContent

from memstream.gateway.auth import DoorError, Principal
from memstream.gateway.service import Doors
from memstream.ops.history import tombstone_json, tombstone_text, version_json

INSTRUCTIONS = (
    "memstream holds versioned, trust-scored memories about customers, products and tickets. "
    "Call search_memory before answering anything that depends on what is true now about a "
    "user or an entity; each result's XML block carries its validity and trust."
)


def _result(text: str, structured: dict[str, Any], *, error: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


def _refused(exc: DoorError) -> CallToolResult:
    body = {"status": "error", "error": {"code": exc.code, "message": exc.message}}
    return _result(f"error {exc.code}: {exc.message}", body, error=True)


def _moment(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise DoorError("bad_time", f"{name} is not an ISO-8601 time: {value!r}", 422) from None
    if moment.tzinfo is None:
        raise DoorError("bad_time", f"{name} needs a timezone: {value!r}", 422)
    return moment


def build_server(doors: Doors, *, default_credential: str | None) -> MCPServer[Any]:
    """The tools over ``doors``. A call authenticates with its HTTP request's bearer header,
    else with ``default_credential`` (stdio)."""
    server: MCPServer[Any] = MCPServer(
        name="memstream", instructions=INSTRUCTIONS, log_level="WARNING"
    )

    async def who(ctx: Context) -> tuple[Principal, str]:
        headers = ctx.headers
        header = headers.get("authorization") if headers is not None else None
        if header is None and default_credential:
            header = f"Bearer {default_credential}"
        return await doors.authenticate(header)

    @server.tool(description="Search memory: the memories true now (or as_of) for a question.")
    async def search_memory(
        query: str,
        ctx: Context,
        tenant_id: str | None = None,
        user_id: str | None = None,
        limit: int = 5,
        as_of: str | None = None,
        force: bool = True,
    ) -> CallToolResult:
        try:
            principal, credential = await who(ctx)
            reply = await doors.retrieve(
                principal,
                credential,
                {
                    "query": query,
                    "tenant_id": tenant_id,
                    "user_id": user_id,
                    "limit": limit,
                    "as_of": _moment(as_of, "as_of"),
                    "force": force,
                },
            )
        except DoorError as exc:
            return _refused(exc)
        body = reply.to_json()
        if reply.error is not None:
            text = f"error {reply.error.code}: {reply.error.message}"
        elif not reply.results:
            text = f"no memories ({reply.status}: {reply.gate.reason})"
        else:
            text = "<memories>\n" + reply.rendered + "\n</memories>"
        return _result(text, body, error=reply.error is not None)

    @server.tool(description="A memory's versions: valid time, transaction time, source, status.")
    async def memory_history(
        memory_key: str,
        ctx: Context,
        tenant_id: str | None = None,
        as_of: str | None = None,
        known_at: str | None = None,
    ) -> CallToolResult:
        try:
            principal, _ = await who(ctx)
            tenant, chain = await doors.history(
                principal,
                memory_key,
                tenant_id=tenant_id,
                as_of=_moment(as_of, "as_of"),
                known_at=_moment(known_at, "known_at"),
            )
            marks = await doors.tombstones(tenant, memory_key) if chain else {}
        except DoorError as exc:
            return _refused(exc)
        versions = []
        lines = []
        for version in chain:
            v = version_json(version)
            mark = marks.get(version.version_id)
            if mark is not None:
                v["erased"] = tombstone_json(mark)
            versions.append(v)
            lines.append(
                f"v{v['version']} {v['op']} valid {v['valid_from']} → {v['valid_to'] or 'now'} · "
                f"recorded {v['recorded_at']} · {v['source_system']} · {v['status']}"
                f"{' · current' if v['is_current'] else ''}: "
                f"{tombstone_text(mark) if mark is not None else v['content']}"
            )
        text = "\n".join(lines) or f"no memory {memory_key!r} for tenant {tenant!r}"
        return _result(text, {"tenant_id": tenant, "memory_key": memory_key, "versions": versions})

    @server.tool(
        description="Remember a fact: publish one MemoryEvent (JSON object). tenant_id and "
        "event_id may be left out (the credential's tenant; a fresh id, returned). "
        "'acknowledged' is 'broker' (published, not yet recorded) or 'ledger' (recorded, or "
        "dead-lettered with its reason). wait unset follows the stack: the embedded broker "
        "waits for the ledger, Kafka answers for the broker."
    )
    async def remember(
        event: dict[str, Any], ctx: Context, wait: bool | None = None
    ) -> CallToolResult:
        try:
            principal, credential = await who(ctx)
            outcome = await doors.remember(principal, credential, [event], wait=wait)
        except DoorError as exc:
            return _refused(exc)
        body = outcome.to_json()
        return _result(json.dumps(body), body)

    @server.tool(description="What an agent was told for one request id, and why.")
    async def audit_request(request_id: str, ctx: Context) -> CallToolResult:
        try:
            principal, _ = await who(ctx)
            entries = await doors.audit(principal, request_id)
        except DoorError as exc:
            return _refused(exc)
        if not entries:
            return _refused(DoorError("not_found", f"no request {request_id!r}", 404))
        answers = [{**e, "answered_at": e["answered_at"].isoformat()} for e in entries]
        last = answers[-1]["reply"]
        text = (
            f"request {request_id}: {answers[-1]['status']} · gate "
            f"{last['gate']['decision']} ({last['gate']['reason']})\n"
            + "\n".join(
                f"{r['memory_key']} v{r['version']} final {r['scores']['final']:.3f} trust "
                f"{r['scores']['trust']:.3f}"
                for r in last.get("results", [])
            )
        )
        return _result(text, {"request_id": request_id, "answers": answers})

    return server


def http_endpoint(server: MCPServer[Any]) -> tuple[Any, StreamableHTTPSessionManager]:
    """An ASGI endpoint for the gateway's ``/mcp`` route and the session manager whose
    ``run()`` the gateway's lifespan holds open."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    server.streamable_http_app(stateless_http=True, json_response=True)
    manager = server.session_manager
    return StreamableHTTPASGIApp(manager), manager


async def run_stdio(doors: Doors, credential: str | None) -> None:
    """``memstream mcp``: serve the tools over stdin/stdout until the client hangs up."""
    await doors.start()
    try:
        await build_server(doors, default_credential=credential).run_stdio_async()
    finally:
        await doors.close()
