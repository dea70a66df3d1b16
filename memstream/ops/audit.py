"""``memstream audit REQUEST_ID``: exactly what an agent was told, and why.

Reads the query log: the request as received, the gate's decision and reason, every result
with its version, validity and scores, and the latency per stage — as answered then, whatever
has been ingested since.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from memstream.ops.stack import resolve_settings
from memstream.services import bootstrap
from memstream.services.settings import Settings

out = Console(highlight=False, soft_wrap=True)


async def load(dsn: str, request_id: str) -> list[dict[str, Any]]:
    async with bootstrap.stores(dsn) as stores:
        return await stores.query_log.find(request_id)


def audit(settings: Settings, request_id: str, *, as_json: bool) -> int:
    settings = resolve_settings(settings)
    assert settings.postgres_dsn is not None
    entries = asyncio.run(load(settings.postgres_dsn, request_id))
    if not entries:
        Console(stderr=True).print(
            f"memstream: audit: no request {request_id!r} in the query log", markup=False
        )
        return 1
    for entry in entries:
        if as_json:
            print(
                json.dumps(
                    {**entry, "answered_at": entry["answered_at"].isoformat()}, ensure_ascii=False
                )
            )
            continue
        request, reply = entry["request"], entry["reply"]
        out.print(
            f"[bold]request {request_id}[/] · tenant {entry['tenant_id']} · answered "
            f"{entry['answered_at'].isoformat()} · {entry['status']}"
        )
        out.print(
            f"query: {request.get('query')!r} · user {request.get('user_id')} · "
            f"as_of {request.get('as_of')} · limit {request.get('limit')}"
        )
        out.print(f"gate: {reply['gate']['decision']} — {reply['gate']['reason']}")
        if reply.get("error"):
            out.print(f"error: {reply['error']['code']}: {reply['error']['message']}")
        table = Table()
        for column in ("#", "memory", "valid", "source · status", "final", "trust", "content"):
            table.add_column(column, overflow="fold")
        for rank, r in enumerate(reply.get("results", []), start=1):
            table.add_row(
                str(rank),
                f"{r['memory_key']} v{r['version']}",
                f"{r['valid_from'][:10]} → {(r['valid_to'] or 'now')[:10]}",
                f"{r['source_system']} · {r['effective_status']}",
                f"{r['scores']['final']:.3f}",
                f"{r['scores']['trust']:.3f}",
                r["content"][:100],
            )
        if reply.get("results"):
            out.print(table)
        out.print("latency ms: " + ", ".join(f"{k} {v}" for k, v in reply["latency_ms"].items()))
    return 0
