"""``bench quality --via-kafka``: LoCoMo asked of memstream as it is served, through Kafka.

The in-process run (``runner``) feeds memstream's handlers directly. This one measures what an
agent gets: a fresh embedded stack of its own (Tansu, PostgreSQL, Redis) and a real ``memstream
worker`` process; the suite's events are signed and published to the events topic exactly as
``memstream publish`` sends them (same mapping: speaker = entity, session date = occurred_at),
the run waits until every one is ingested, then every question is sent through ``MemoryClient``
as ``memstream ask --batch`` sends a line (sealed and signed with the tenant's agent key): the
same request as in-process (the speaker anchor where the question names exactly one, ``force``,
limit 10), once more without anchors (the query text only), and once more as an agent asks,
without ``force`` (the gate decides; a skipped question ranks nothing, so its recall counts the
gate's false skips). The rankings are scored by the same code as every other system.

What still differs from in-process, by construction: the worker embeds with its own model
instance and its own batches (the in-process run reuses vectors computed once in batches of
256), so vectors can differ in the last float digits; the worker's clock is read when each
request is served, not when the run started; nothing else (same gate; same limit).
The client (memstream.streams) is imported where it is used, as `ask` does.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from memstream.bench.quality.suite import Question, Suite
from memstream.services.settings import Settings

SERVED = "memstream, served (Kafka)"
SERVED_BARE = "memstream, served (Kafka), no anchors"
SERVED_GATED = "memstream, served (Kafka), gate on"


def served_request(
    question: Question, limit: int, *, anchors: bool = True, force: bool = True
) -> dict[str, Any]:
    """The request ``ask --batch`` sends for a line ``{tenant_id, query, anchors, limit,
    force}``: the same fields, filled in as ``ask`` fills them."""
    request = dict(question.request) if anchors else {}
    context = request.get("context") or {}
    return {
        "tenant_id": question.tenant_id,
        "query": question.query,
        "user_id": request.get("user_id"),
        "anchors": list(request.get("anchors") or []),
        "context": {
            "active_task": context.get("active_task"),
            "active_entities": list(context.get("active_entities") or []),
            "time_window": request.get("time_window") or context.get("time_window"),
        },
        "as_of": request.get("as_of"),
        "known_at": request.get("known_at"),
        "limit": limit,
        "force": force,
    }


async def _ask(
    settings: Settings, requests: Sequence[dict[str, Any]], concurrency: int
) -> list[dict[str, Any]]:
    from memstream.ops.identity import credential_for
    from memstream.streams.client import MemoryClient

    assert settings.broker is not None
    by_tenant: dict[str, list[int]] = {}
    for i, request in enumerate(requests):
        by_tenant.setdefault(request["tenant_id"], []).append(i)
    replies: list[dict[str, Any]] = [{} for _ in requests]
    gate = asyncio.Semaphore(concurrency)
    for tenant, indices in by_tenant.items():
        key = credential_for(settings, "agent", tenant=tenant)
        async with MemoryClient(
            settings.broker, settings.topics, timeout=120, credential=key
        ) as client:

            async def one(i: int, client: Any = client) -> None:
                async with gate:
                    replies[i] = await client.send(dict(requests[i]))

            await asyncio.gather(*(one(i) for i in indices))
    return replies


def ask_served(
    settings: Settings, suite: Suite, concurrency: int, *, anchors: bool, force: bool = True
) -> tuple[list[list[str]], int]:
    """Every question of ``suite`` through Kafka: rankings (version ids) and error replies
    (a skipped reply, unforced, ranks nothing and is no error)."""
    requests = [
        served_request(q, suite.limit, anchors=anchors, force=force) for q in suite.questions
    ]
    replies = asyncio.run(_ask(settings, requests, concurrency))
    errors = sum(1 for r in replies if r.get("status") not in ("ok", "skipped"))
    ranked = [[str(x["version_id"]) for x in r.get("results") or []] for r in replies]
    return ranked, errors


def run_served(
    suite: Suite, concurrency: int, console: Console
) -> tuple[dict[str, list[list[str]]], dict[str, float], int, int]:
    """Publish ``suite``'s events to a fresh stack + worker, then ask its questions twice (with
    and without anchors). Returns rankings per system, seconds per stage, dead letters and error
    replies."""
    from memstream.bench.kit import publish_events, start_worker, stop_worker
    from memstream.ops.ingest_status import wait_for
    from memstream.ops.stack import EmbeddedStack
    from memstream.ops.up import prepare

    base = Settings.from_env()
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-quality-served-"))
    data_dir.chmod(0o755)  # the embedded PostgreSQL runs as another user
    settings = Settings(
        data_dir=data_dir,
        model_path=base.model_path,
        encoder=base.encoder,  # the in-process run's encoder: the same kind of vectors
        model_cache=base.model_cache,
        web_port=0,
        fetch_wait_ms=base.fetch_wait_ms,
        fetch_wait_active_ms=base.fetch_wait_active_ms,
        embed_threads=base.embed_threads,
    )
    seconds: dict[str, float] = {}
    rankings: dict[str, list[list[str]]] = {}
    stack = EmbeddedStack(settings)
    clock = time.perf_counter()
    resolved = stack.start()
    try:
        prepare(resolved)
        worker = start_worker(resolved)
        seconds["served: start stack + worker"] = time.perf_counter() - clock
        try:
            events = suite.all_events()
            console.print(f"[bold]{suite.name}, served[/]: publishing {len(events)} events …")
            clock = time.perf_counter()
            publish_events(resolved, events)
            status = wait_for(
                resolved,
                [(str(e["tenant_id"]), str(e["event_id"])) for e in events],
                timeout=3600,
                console=Console(stderr=True),
                poll=0.5,
            )
            if status.pending:
                raise RuntimeError(f"{len(status.pending)} events not ingested through Kafka")
            seconds["served: publish + ingest"] = time.perf_counter() - clock
            errors = 0
            for name, anchors, force in (
                (SERVED, True, True),
                (SERVED_BARE, False, True),
                (SERVED_GATED, True, False),  # as an agent asks: the gate decides
            ):
                console.print(f"  asking {len(suite.questions)} questions through Kafka ({name})")
                clock = time.perf_counter()
                rankings[name], failed = ask_served(
                    resolved, suite, concurrency, anchors=anchors, force=force
                )
                errors += failed
                seconds[f"served: questions ({name})"] = time.perf_counter() - clock
        except BaseException as exc:
            stop_worker(worker, failed=exc)
            raise
        else:
            stop_worker(worker)
    finally:
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return rankings, seconds, len(status.dead), errors
