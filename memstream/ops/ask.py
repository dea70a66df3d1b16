"""``memstream ask``: one question (or a batch) to a running memstream, through Kafka.

Uses the same ``MemoryClient`` agents use. Prints the answers with their evidence (scores, trust
breakdown, source, status, version and validity), or one JSON object per reply.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memstream.ops.stack import resolve_settings
from memstream.services.domain.validation import parse_timestamp
from memstream.services.settings import Settings
from memstream.streams.client import MemoryClient, MemoryClientError

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def to_json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def moment(text: str | None, what: str) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_timestamp(text)
    except ValueError as exc:
        raise SystemExit(
            f"memstream: ask: {what} {text!r} is not an ISO time with a timezone ({exc})"
        ) from None


def print_reply(reply: dict[str, Any]) -> None:
    gate = reply["gate"]
    status = reply["status"]
    latency = reply.get("latency_ms", {})
    out.print(
        f"[bold]{status}[/] · gate {gate['decision']}: {gate['reason']} · "
        f"{latency.get('total', 0):.1f} ms"
    )
    if reply.get("error"):
        out.print(f"[red]error {reply['error']['code']}[/]: {reply['error']['message']}")
        return
    if not reply["results"]:
        if status == "ok":
            out.print("no memory matches")
        return
    table = Table(show_lines=True)
    for column in (
        "#",
        "memory",
        "final",
        "trust (auth/rec/bind/state/xval)",
        "source · status",
        "valid",
        "content",
    ):
        table.add_column(column, overflow="fold")
    for rank, r in enumerate(reply["results"], start=1):
        s = r["scores"]
        valid_to = r["valid_to"].date().isoformat() if r["valid_to"] else "now"
        status_text = r["status"]
        if r["effective_status"] != r["status"]:
            status_text += f" → {r['effective_status']}"
        conflicts = f"\nconflicts with {len(r['conflicts_with'])}" if r["conflicts_with"] else ""
        table.add_row(
            str(rank),
            f"{r['memory_key']} v{r['version']}\n{r['entity_type']}:{r['entity_id']}",
            f"{s['final']:.3f}",
            f"{s['trust']:.2f} ({s['authority']:.2f}/{s['recency']:.2f}/{s['binding']:.2f}"
            f" {r['binding_kind']}/{s['state']:.2f}/{s['cross_validation']:.2f})",
            f"{r['source_system']} · {status_text}{conflicts}",
            f"{r['valid_from'].date().isoformat()} → {valid_to}",
            r["content"][:160],
        )
    out.print(table)


async def _ask(
    settings: Settings, requests: list[dict[str, Any]], timeout: float, credential: str
) -> list[dict[str, Any]]:
    assert settings.broker is not None
    async with MemoryClient(
        settings.broker, settings.topics, timeout=timeout, credential=credential
    ) as client:
        return list(await asyncio.gather(*(client.send(r) for r in requests)))


def ask(settings: Settings, args: Any) -> int:
    settings = resolve_settings(settings)
    if args.batch:
        requests = _read_batch(Path(args.batch))
    else:
        if not args.query:
            err.print("memstream: ask: give a QUERY, or --batch FILE.jsonl")
            return 2
        window = None
        if args.window:
            start, end = (moment(t, "--window") for t in args.window)
            window = {"from": start, "to": end}
        requests = [
            {
                "tenant_id": args.tenant or "",  # the credential's tenant when empty
                "query": args.query,
                "user_id": args.user,
                "anchors": [],
                "context": {"active_task": None, "active_entities": [], "time_window": window},
                "as_of": moment(args.as_of, "--as-of"),
                "known_at": moment(args.known_at, "--known-at"),
                "limit": args.limit,
                "force": args.force,
            }
        ]
    from memstream.ops.identity import CredentialsMissing, credential_for

    try:
        credential = credential_for(settings, "agent", args.key, args.tenant)
        replies = asyncio.run(_ask(settings, requests, args.timeout, credential))
    except (MemoryClientError, CredentialsMissing) as exc:
        err.print(f"memstream: ask: {exc}", markup=False)
        return 1
    for reply in replies:
        if args.json or args.batch:
            print(json.dumps(to_json(reply), ensure_ascii=False))
        else:
            print_reply(reply)
    return 0 if all(r["status"] != "error" for r in replies) else 1


def _read_batch(path: Path) -> list[dict[str, Any]]:
    requests = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            sys.exit(f"memstream: ask: {path}:{number}: not JSON ({exc.msg})")
        context = raw.get("context") or {}
        window = raw.get("time_window") or context.get("time_window")
        if isinstance(window, list | tuple) and len(window) == 2:
            window = {"from": window[0], "to": window[1]}
        if isinstance(window, dict):
            window = {k: moment(str(window[k]), "time_window") for k in ("from", "to")}
        requests.append(
            {
                "request_id": raw.get("request_id"),
                "tenant_id": raw.get("tenant_id") or raw.get("tenant") or "",
                "query": raw.get("query") or "",
                "user_id": raw.get("user_id") or raw.get("user"),
                "anchors": raw.get("anchors") or [],
                "context": {
                    "active_task": raw.get("active_task") or context.get("active_task"),
                    "active_entities": raw.get("active_entities")
                    or context.get("active_entities")
                    or [],
                    "time_window": window,
                },
                "as_of": moment(raw.get("as_of"), "as_of"),
                "known_at": moment(raw.get("known_at"), "known_at"),
                "limit": int(raw.get("limit", 10)),
                "force": bool(raw.get("force", False)),
            }
        )
    return requests
