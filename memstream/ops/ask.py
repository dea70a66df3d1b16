"""``memstream ask``: one question (or a batch) to a running memstream, through Kafka.

Uses the same ``MemoryClient`` agents use. Prints the answers with their evidence (scores, trust
breakdown, source, status, version and validity), or one JSON object per reply.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memstream.ops.stack import resolve_settings
from memstream.services.domain.validation import parse_timestamp
from memstream.services.settings import Settings
from memstream.streams.client import BrokerUnavailable, MemoryClient, MemoryClientError

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


_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")


class UsageError(ValueError):
    """A value on the command line the user must correct (exit status 2)."""


def moment(text: str | None, what: str) -> datetime | None:
    """An ISO time with a timezone, or a date (``2026-06-01``: midnight UTC)."""
    if text is None:
        return None
    if isinstance(text, str) and _DATE.match(text):
        text = f"{text.strip()}T00:00:00+00:00"
    try:
        return parse_timestamp(text)
    except (ValueError, OverflowError, OSError) as exc:
        raise UsageError(
            f"{what} {text!r} is not a date (2026-06-01) or an ISO time with a timezone ({exc})"
        ) from None


def print_reply(reply: dict[str, Any]) -> None:
    gate = reply["gate"]
    status = reply["status"]
    latency = reply.get("latency_ms", {})
    queue = f" (+{latency['queue']:.1f} ms queued)" if "queue" in latency else ""
    timing = f"{latency.get('total', 0):.1f} ms{queue} · request {reply['request_id']}"
    error = reply.get("error")
    if error:  # an error is not a gate decision: say what went wrong, first
        out.print(f"[red]error {error['code']}[/]: ", end="")
        out.print(f"{error['message']} · {timing}", markup=False)
        return
    out.print(f"[bold]{status}[/] · gate {gate['decision']}: {gate['reason']} · {timing}")
    if not reply["results"]:
        if status == "ok":
            out.print("no memory matches")
        elif status == "skipped":
            out.print("not answered from memory: ask again with --force to retrieve anyway")
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
        moved = r.get("factors") or {}
        factors = "".join(f"\n{name} ×{factor:.2f}" for name, factor in moved.items())
        table.add_row(
            str(rank),
            f"{r['memory_key']} v{r['version']}\n{r['entity_type']}:{r['entity_id']}",
            f"{s['final']:.3f}{factors}",
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


def failure(request_id: str | None, code: str, message: str) -> dict[str, Any]:
    """The line ``ask --batch`` writes for a request that got no reply (or was never sent)."""
    return {
        "request_id": request_id,
        "status": "error",
        "error": {"code": code, "message": message},
    }


async def _batch(
    settings: Settings,
    items: list[dict[str, Any]],
    timeout: float,
    concurrency: int,
    credential: str,
) -> int:
    """Send every request (``concurrency`` at a time), print one line per item in input
    order as soon as it and all before it are done; return how many failed."""
    assert settings.broker is not None
    gate = asyncio.Semaphore(max(1, concurrency))
    async with MemoryClient(
        settings.broker, settings.topics, timeout=timeout, credential=credential
    ) as client:

        async def one(item: dict[str, Any]) -> dict[str, Any]:
            if item.get("status") == "error":  # a line that could not be read
                return item
            async with gate:
                try:
                    return await client.send(item)
                except MemoryClientError as exc:
                    return failure(item.get("request_id"), type(exc).__name__, str(exc))

        tasks = [asyncio.ensure_future(one(item)) for item in items]
        failed = 0
        try:
            for task in tasks:
                reply = await task
                failed += reply.get("status") == "error"
                print(json.dumps(to_json(reply), ensure_ascii=False), flush=True)
        finally:
            for task in tasks:
                task.cancel()
    return failed


def ask(settings: Settings, args: Any) -> int:
    settings = resolve_settings(settings)
    from memstream.ops.identity import CredentialsMissing, credential_for

    if args.batch:
        items = list(read_batch(Path(args.batch)))
        try:
            credential = credential_for(settings, "agent", args.key, args.tenant)
            failed = asyncio.run(
                _batch(settings, items, args.timeout, getattr(args, "concurrency", 16), credential)
            )
        except BrokerUnavailable:
            raise  # the environment, not the requests: one line and exit 2 (ops.cli)
        except (MemoryClientError, CredentialsMissing) as exc:
            err.print(f"memstream: ask: {exc}", markup=False)
            return 1
        if failed:
            err.print(f"memstream: ask: {failed} of {len(items)} requests failed", markup=False)
        return 1 if failed else 0
    if not args.query:
        raise UsageError("give a QUERY, or --batch FILE.jsonl")
    window = None
    if args.window:
        start, end = (moment(t, "--window") for t in args.window)
        window = {"from": start, "to": end}
    requests = [
        {
            "request_id": uuid.uuid4().hex,
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
    try:
        credential = credential_for(settings, "agent", args.key, args.tenant)
        replies = asyncio.run(_ask(settings, requests, args.timeout, credential))
    except BrokerUnavailable:
        raise  # the environment, not the request: one line and exit 2 (ops.cli)
    except (MemoryClientError, CredentialsMissing) as exc:
        err.print(f"memstream: ask: {exc}", markup=False)
        return 1
    for reply in replies:
        if args.json:
            print(json.dumps(to_json(reply), ensure_ascii=False))
        else:
            print_reply(reply)
    return 0 if all(r["status"] != "error" for r in replies) else 1


def read_batch(path: Path) -> Iterator[dict[str, Any]]:
    """One request per non-blank line, or, for a line that is not a request, the error
    object ``ask --batch`` prints in its place (the other lines are still sent)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"--batch {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        raw: Any = None
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError(f"a request is a JSON object, not {type(raw).__name__}")
            yield _request(raw)
        except (ValueError, TypeError, UsageError) as exc:
            request_id = raw.get("request_id") if isinstance(raw, dict) else None
            yield failure(
                str(request_id) if request_id else None,
                "bad_line",
                f"{path}:{number}: not a request ({exc})",
            )


def _request(raw: dict[str, Any]) -> dict[str, Any]:
    context = raw.get("context") or {}
    window = raw.get("time_window") or context.get("time_window")
    if isinstance(window, list | tuple) and len(window) == 2:
        window = {"from": window[0], "to": window[1]}
    if isinstance(window, dict):
        window = {k: moment(str(window[k]), "time_window") for k in ("from", "to")}
    return {
        "request_id": str(raw.get("request_id") or uuid.uuid4().hex),
        "tenant_id": str(raw.get("tenant_id") or raw.get("tenant") or ""),
        "query": str(raw.get("query") or ""),
        "user_id": raw.get("user_id") or raw.get("user"),
        "anchors": raw.get("anchors") or [],
        "context": {
            "active_task": raw.get("active_task") or context.get("active_task"),
            "active_entities": raw.get("active_entities") or context.get("active_entities") or [],
            "time_window": window,
        },
        "as_of": moment(raw.get("as_of"), "as_of"),
        "known_at": moment(raw.get("known_at"), "known_at"),
        "limit": int(raw.get("limit", 10)),
        "force": bool(raw.get("force", False)),
    }
