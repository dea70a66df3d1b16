"""The MCP server through the SDK's own client session: over stdio (`memstream mcp`) and over
streamable HTTP at the gateway's /mcp."""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.doors.conftest import Doors, memory_event
from tests.e2e.processes import ROOT, guard, memstream_env

TOOLS = {"search_memory", "memory_history", "remember", "audit_request"}


async def exercise(session: ClientSession, doors: Doors, tag: str) -> dict[str, Any]:
    await session.initialize()
    listed = await session.list_tools()
    assert {t.name for t in listed.tools} >= TOOLS
    tenant = {"tenant_id": doors.tenant}
    found = await session.call_tool(
        "search_memory", {"query": "what does X1 charge over?", "limit": 3, **tenant}
    )
    assert not found.is_error, found
    text = found.content[0].text  # type: ignore[union-attr]
    assert text.startswith("<memories>") and "USB-C" in text
    body = found.structured_content
    assert body is not None
    top = body["results"][0]
    assert top["memory_key"] == "spec:X1" and 0 < top["scores"]["final"] <= 1
    history = await session.call_tool("memory_history", {"memory_key": "spec:X1", **tenant})
    assert history.structured_content is not None
    assert [v["version"] for v in history.structured_content["versions"]] == [1, 2]
    event = memory_event(
        doors.tenant,
        f"note:C-77:{tag}",
        f"Customer C-77 asked via MCP {tag}.",
        ago=timedelta(minutes=5),
        entity="customer:C-77",
    )
    remembered = await session.call_tool("remember", {"event": event, "wait": True})
    assert not remembered.is_error, remembered
    assert remembered.structured_content is not None
    assert remembered.structured_content["ingested"] == [event["event_id"]]
    audited = await session.call_tool("audit_request", {"request_id": body["request_id"]})
    assert not audited.is_error, audited
    assert "spec:X1 v2" in audited.content[0].text  # type: ignore[union-attr]
    refused = await session.call_tool("audit_request", {"request_id": "no-such-request"})
    assert refused.is_error
    return body


def test_mcp_over_stdio(doors: Doors) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstream.cli", "mcp"],
        env=memstream_env({**doors.setup.env(), "MEMSTREAM_KEY": doors.keys["admin"]}),
        cwd=ROOT,
    )

    async def go() -> None:
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as s:
            await exercise(s, doors, "stdio")

    asyncio.run(asyncio.wait_for(go(), 120))


def test_mcp_over_http_on_the_gateway(doors: Doors) -> None:
    async def go() -> None:
        admin = httpx2.AsyncClient(headers=doors.headers("admin"), timeout=guard(60))
        async with (
            admin,
            streamable_http_client(f"{doors.url}/mcp", http_client=admin) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await exercise(session, doors, "http")
        stranger = httpx2.AsyncClient(headers={"Authorization": "Bearer nope"}, timeout=guard(60))
        async with (
            stranger,
            streamable_http_client(f"{doors.url}/mcp", http_client=stranger) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool("search_memory", {"query": "x"})
            assert result.is_error and "unauthenticated" in result.content[0].text  # type: ignore[union-attr]

    asyncio.run(asyncio.wait_for(go(), 120))
