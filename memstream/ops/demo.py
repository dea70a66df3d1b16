"""``memstream demo``: the main job, in one command — why memstream exists.

Starts the embedded stack on a fresh temporary data dir (a part whose endpoint is set is used as
it is), runs one worker as a subprocess, publishes a realistic two-tenant shop history
(``ops.demo_data``) through an idempotent librdkafka producer, waits until it is ingested, then
asks the questions that trap plain vector stores through ``MemoryClient`` — the real Kafka
request/reply path — and prints, side by side, what plain vector search answers and what
memstream answers, with memstream's evidence.

Plain vector search is what such a store holds and does: every published event with content is
a document (superseded versions and retracted posts included), filtered by tenant, ranked by
the cosine of the same model's unit vectors, computed here with numpy.

Ends with ``plain vector search: N/M wrong · memstream: K/M wrong`` and exits 0 only when
memstream answered every question right. The worker and the stack are stopped and the data dir
removed on every exit, Ctrl-C and SIGTERM included. An entry point: only the CLI imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memstream.ops.demo_data import Event, Question, history, questions
from memstream.ops.identity import credential_for, provision, write_credentials
from memstream.ops.ingest_status import wait_for
from memstream.ops.publish import Signers
from memstream.ops.stack import EmbeddedStack, StackError, _die_with_parent
from memstream.ops.up import prepare
from memstream.services import bootstrap
from memstream.services.domain.validation import validate_event
from memstream.services.settings import Settings
from memstream.streams.client import MemoryClient
from memstream.streams.producer import EventProducer

console = Console(highlight=False)
READY = "memstream ready"
MARK = {True: "[green]✓[/]", False: "[red]✗[/]"}
Hit = tuple[Event, int, float]  # (event, the version it became, cosine)
STOPPING = threading.Event()  # set by Ctrl-C / SIGTERM


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # KeyboardInterrupt, not an Exception: asyncio lets it through instead of logging it. A C
    # extension interrupted in a blocking call may turn it into a SystemError: the flag tells.
    STOPPING.set()
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def phase(text: str) -> Iterator[None]:
    """A spinner while ``text`` runs, then a line saying it is done and how long it took."""
    started = time.monotonic()
    with console.status(f"{text} …"):
        yield
    console.print(f"[green]✓[/] {text} [dim]({time.monotonic() - started:.1f}s)[/]")


class Worker:
    """``memstream worker`` as a subprocess in its own session, its output kept for errors."""

    def __init__(self, settings: Settings) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
        env.update(settings.to_env(), MEMSTREAM_WEB_PORT="0", PYTHONUNBUFFERED="1")
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memstream.cli", "worker"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # Ctrl-C reaches the demo only, which stops it in order
            preexec_fn=_die_with_parent,  # and it dies with the demo if the demo is killed
        )
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if READY in line:
                self._ready.set()

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                code = self.proc.poll()
                why = f"exited with {code}" if code is not None else f"not ready in {timeout:.0f}s"
                tail = "\n".join(self.lines[-30:])
                raise RuntimeError(f"the worker {why}:\n{tail}")

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class PlainVectorSearch:
    """The baseline: every event with content is a document; the top cosine within a tenant."""

    def __init__(self, events: Sequence[Event], embed: Callable[[list[str]], Any]) -> None:
        versions: Counter[tuple[str, str]] = Counter()
        self.docs: list[tuple[Event, int]] = []
        for event in events:
            versions[event["tenant_id"], event["memory_key"]] += 1  # a RETRACT is a version too
            if event["content"]:
                self.docs.append((event, versions[event["tenant_id"], event["memory_key"]]))
        self._embed = embed
        self._vectors = np.asarray(embed([e["content"] for e, _ in self.docs]), dtype=np.float32)

    def top(self, query: str, tenant: str | None) -> Hit:
        """The best document for ``query`` within ``tenant`` (None: in the whole store)."""
        scores = self._vectors @ np.asarray(self._embed([query])[0], dtype=np.float32)
        for i in np.argsort(-scores, kind="stable"):
            event, version = self.docs[int(i)]
            if tenant is None or event["tenant_id"] == tenant:
                return event, version, float(scores[i])
        raise LookupError(f"tenant {tenant!r} has no documents")


def publish(settings: Settings, events: Sequence[Event]) -> list[tuple[str, str]]:
    """Every event to the events topic, keyed tenant|memory_key, as ``memstream publish``."""
    assert settings.broker is not None
    signers = Signers(settings)  # each tenant's producer key, from the data dir
    producer = EventProducer(settings.broker, signers.headers)

    now = datetime.now(UTC)
    columns = (TextColumn("publishing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(
        *columns, console=console, transient=True, disable=not console.is_terminal
    ) as progress:
        task = progress.add_task("publishing", total=len(events))
        for raw in events:
            producer.send(settings.topics.events, validate_event(raw, now))
            progress.advance(task)
        missing = producer.finish(30)
    if missing:
        raise RuntimeError(f"the broker did not take {missing} events")
    return [(e["tenant_id"], e["event_id"]) for e in events]


async def ask_all(settings: Settings, asked: Sequence[Question]) -> list[dict[str, Any]]:
    """Each question through MemoryClient, one after the other, as an agent would ask."""
    assert settings.broker is not None
    clients: dict[str, MemoryClient] = {}
    try:
        for tenant in dict.fromkeys(q.tenant for q in asked):  # each tenant's own agent key
            key = credential_for(settings, "agent", tenant=tenant)
            clients[tenant] = await MemoryClient(
                settings.broker, settings.topics, timeout=30, credential=key
            ).start()
        return [
            await clients[q.tenant].retrieve(
                q.query, q.tenant, user=q.user, as_of=q.as_of, window=q.window, limit=5
            )
            for q in asked
        ]
    finally:
        for client in clients.values():
            await client.stop()


def judge(q: Question, reply: dict[str, Any], owned: set[tuple[str, str]]) -> str | None:
    """Why memstream's reply is wrong, or None when it is right."""
    if reply["status"] != "ok":
        return f"status {reply['status']}: {reply.get('error') or reply['gate']['reason']}"
    results = reply["results"]
    leaked = [r["memory_key"] for r in results if (r["memory_key"], r["content"]) not in owned]
    banned = [r["memory_key"] for r in results if r["memory_key"] in q.never]
    if not results:
        return "no memory returned"
    if leaked:
        return f"returned another tenant's memory {leaked[0]}"
    if banned:
        return f"returned {banned[0]}, which must never be returned"
    top = results[0]
    if not q.is_right(top["memory_key"], top["version"]):
        return f"top answer {top['memory_key']} v{top['version']} is not {' / '.join(q.answers)}"
    return None


def not_an_answer(hit: Hit, q: Question, events: Sequence[Event], now: datetime) -> str:
    """Why plain vector's pick is not what memstream answers with (from the published facts)."""
    event, version, _ = hit
    at = q.as_of or now
    chain = [
        e for e in events if (e["tenant_id"], e["memory_key"]) == (q.tenant, event["memory_key"])
    ]
    when = datetime.fromisoformat(event["occurred_at"])
    if any(e["op"] == "RETRACT" and datetime.fromisoformat(e["occurred_at"]) <= at for e in chain):
        return "retracted"
    if when > at:
        return f"not yet true on {at.date().isoformat()}"
    later = [
        n
        for n, e in enumerate(chain[version:], start=version + 1)
        if datetime.fromisoformat(e["occurred_at"]) <= at
    ]
    if later:
        return f"superseded by v{later[-1]}"
    if q.window and not q.window[0] <= when <= q.window[1]:
        return "outside the time window"
    if q.user and event["entity_type"] == "customer" and event["entity_id"] != q.user:
        return f"about customer {event['entity_id']}, not {q.user}"
    return "ranked below memstream's top 5"


def _where(reply: dict[str, Any], hit: Hit, q: Question, events: Sequence[Event]) -> str:
    for rank, r in enumerate(reply["results"], start=1):
        if (r["memory_key"], r["version"]) == (hit[0]["memory_key"], hit[1]):
            return f"#{rank} (final {r['scores']['final']:.2f})"
    return f"not returned: {not_an_answer(hit, q, events, reply['served_at'])}"


def show(
    number: int,
    q: Question,
    plain: Hit,
    plain_right: bool,
    unfiltered: Hit,
    reply: dict[str, Any],
    wrong: str | None,
    events: Sequence[Event],
) -> None:
    event, version, cosine = plain
    asked = [f"tenant [bold]{q.tenant}[/]"]
    asked += [f"user [bold]{q.user}[/]"] if q.user else []
    asked += [f"as of {q.as_of.date().isoformat()}"] if q.as_of else []
    if q.window:
        asked.append(f"window {q.window[0].date().isoformat()} → {q.window[1].date().isoformat()}")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(
        MARK[plain_right],
        "[bold]plain vector[/]",
        f"{event['memory_key']} v{version} [dim]· cosine {cosine:.2f} · "
        f"{event['source_system']} · {event['occurred_at'][:10]}[/]",
    )
    grid.add_row("", "", escape(event["content"]))
    grid.add_row("", "", f"[dim]in memstream: {_where(reply, plain, q, events)}[/]")
    if unfiltered[0]["tenant_id"] != q.tenant:
        grid.add_row(
            "",
            "",
            f"[dim]with no tenant filter: {unfiltered[0]['tenant_id']}'s "
            f"{unfiltered[0]['memory_key']} (cosine {unfiltered[2]:.2f})[/]",
        )
    for rank, r in enumerate(reply["results"][:1], start=1):
        s, state = r["scores"], r["status"]
        state += f" → {r['effective_status']}" if r["effective_status"] != r["status"] else ""
        valid_to = r["valid_to"].date().isoformat() if r["valid_to"] else "now"
        grid.add_row(
            MARK[wrong is None],
            "[bold]memstream[/]",
            f"{r['memory_key']} v{r['version']} [dim]· #{rank} final {s['final']:.2f}"
            f" = relevance {s['fused']:.2f} × trust {s['trust']:.2f} · valid "
            f"{r['valid_from'].date().isoformat()} → {valid_to}[/]",
        )
        grid.add_row("", "", escape(r["content"]))
        grid.add_row(
            "",
            "",
            f"[dim]trust: authority {s['authority']:.2f} ({r['source_system']})"
            f" · recency {s['recency']:.2f} · binding {s['binding']:.2f} "
            f"({r['binding_kind']}) · state {s['state']:.2f} ({state}) · "
            f"cross-validation {s['cross_validation']:.2f}"
            + (f" · in conflict with {len(r['conflicts_with'])}" if r["conflicts_with"] else "")
            + "[/]",
        )
    if wrong is not None:
        grid.add_row(MARK[False] if not reply["results"] else "", "", f"[red]{wrong}[/]")
    gate, total = reply["gate"], reply["latency_ms"].get("total", 0.0)
    grid.add_row(
        "", "[dim]gate[/]", f"[dim]{gate['decision']}: {escape(gate['reason'])} · {total:.0f} ms[/]"
    )
    grid.add_row("", "[dim]the trap[/]", f"[dim]{escape(q.why)}[/]")
    title = escape(f"{number}. {q.trap} — “{q.query}”")
    console.print(Panel(Group(" · ".join(asked), grid), title=title, title_align="left"))


def demo(settings: Settings) -> int:
    started = time.monotonic()
    STOPPING.clear()
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    # Against external parts, fresh tenant ids keep an earlier run's events from counting as
    # duplicates; embedded parts start empty on the fresh data dir.
    external = any(
        (settings.broker, settings.postgres_dsn, settings.redis_url, settings.qdrant_url)
    )
    suffix = f"-{uuid.uuid4().hex[:6]}" if external else ""
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-demo-"))
    data_dir.chmod(0o755)  # the embedded PostgreSQL runs as another user and must traverse it
    settings = dataclasses.replace(settings, data_dir=data_dir, vector_dir=None, key=None)
    stack = EmbeddedStack(settings, write_runtime=False)
    worker: Worker | None = None
    try:
        now = datetime.now(UTC)
        events, asked = history(now, suffix), questions(now, suffix)
        console.print(
            f"[bold]memstream demo[/]: {len(events)} events of two shops' history, "
            f"{len(asked)} questions · data dir {data_dir}"
        )
        with phase("starting the stack: Tansu, PostgreSQL, Redis, Qdrant Edge"):
            resolved = stack.start()
            prepare(resolved)
            sources: dict[str, set[str]] = {}
            for event in events:
                sources.setdefault(event["tenant_id"], set()).add(event["source_system"])
            issued = asyncio.run(provision(resolved, {t: sorted(s) for t, s in sources.items()}))
            write_credentials(resolved, issued)
        worker = Worker(resolved)
        idents = publish(resolved, events)
        console.print(f"[green]✓[/] published {len(idents)} events to {resolved.topics.events}")
        with phase("plain vector search: loading the model, embedding every event"):
            model = bootstrap.load_embedder(resolved)
            baseline = PlainVectorSearch(events, model.embed_sync)
        with phase("memstream worker: loading the model, joining the broker"):
            worker.wait_ready(120)

        waited = time.monotonic()
        status = wait_for(
            resolved, idents, timeout=120, console=console if console.is_terminal else None
        )
        if status.pending or status.dead:
            raise RuntimeError(f"{len(status.pending)} events pending, dead letters {status.dead}")
        console.print(
            f"[green]✓[/] ingested {len(status.ingested)} events: versioned and indexed "
            f"[dim]({time.monotonic() - waited:.1f}s)[/]"
        )
        with phase(f"asking {len(asked)} questions over Kafka"):
            replies = asyncio.run(ask_all(resolved, asked))
        plain_wrong = ours_wrong = 0
        for number, (q, reply) in enumerate(zip(asked, replies, strict=True), start=1):
            owned = {(e["memory_key"], e["content"]) for e in events if e["tenant_id"] == q.tenant}
            plain = baseline.top(q.query, q.tenant)
            plain_right = q.is_right(plain[0]["memory_key"], plain[1])
            wrong = judge(q, reply, owned)
            plain_wrong += not plain_right
            ours_wrong += wrong is not None
            show(number, q, plain, plain_right, baseline.top(q.query, None), reply, wrong, events)
        console.print(
            f"[bold]plain vector search: {plain_wrong}/{len(asked)} wrong · "
            f"memstream: {ours_wrong}/{len(asked)} wrong[/]"
        )
        console.print(f"demo finished in {time.monotonic() - started:.1f}s")
        return 0 if ours_wrong == 0 else 1
    except Exception as exc:
        if not STOPPING.is_set():
            if isinstance(exc, StackError) or not isinstance(exc, RuntimeError):
                raise  # the CLI prints a StackError as one line naming the part and the fix
            console.print(f"memstream: demo: {exc}", markup=False)
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        if STOPPING.is_set():
            console.print("interrupted: stopping the worker and the stack")
        try:
            if worker is not None:
                worker.stop()
            stack.stop()
            shutil.rmtree(data_dir, ignore_errors=True)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return 130
