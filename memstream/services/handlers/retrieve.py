"""handle_retrieve: a RetrievalRequest (already decoded) → a RetrievalReply record.

validate → (deadline) → known tenant → gate → the period the question names, as valid time
(``in_period``) → reply cache → embed ‖ keyword search → vector
search (anchored and open) → fetch versions (tenant-scoped) ‖ vector-score the keyword
candidates outside the vector top k → score, arbitrate, render (pure
domain) → (a question without a strong cue: gate again on what was found) → cache (in the
background, once the reply is returned). Every stage is timed into
``latency_ms``. A bad request gets an error reply; an outage of the cache only costs computation.
Must not import drivers, streams or adapters.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memstream.services.domain import versioning
from memstream.services.domain.errors import InvalidRequest
from memstream.services.domain.gating import (
    OwnEvidence,
    evidence_from,
    gate,
    own_anchors,
    own_evidence,
    own_terms,
)
from memstream.services.domain.model import Anchor, MemoryVersion
from memstream.services.domain.periods import valid_time
from memstream.services.domain.query import (
    Candidate,
    RetrievalRequest,
    ScoredResult,
    validate_request,
)
from memstream.services.domain.ranking import DEFAULT_RULES, RankingRules, score_candidates
from memstream.services.domain.reading import EARLIEST, QuestionReading, read_question
from memstream.services.domain.trust import DEFAULT_PROFILE, TrustProfile, entity_binding
from memstream.services.ports import (
    Cache,
    Embedder,
    HeldTerms,
    MemoryQueries,
    TermCounts,
    VectorFilter,
    VectorHit,
    VectorIndex,
)

OK, SKIPPED, ERROR = "ok", "skipped", "error"


@dataclass(frozen=True, slots=True)
class Profile:
    """A tenant's trust weights and tables (per-tenant overridable)."""

    trust: TrustProfile = DEFAULT_PROFILE
    rules: RankingRules = DEFAULT_RULES


async def _default_profile(tenant_id: str) -> Profile:
    return Profile()


def profile_from(overrides: Mapping[str, Mapping[str, float]]) -> Profile:
    """A tenant's profile: the default tables with its run-time rule overrides."""
    half_lives = {k: timedelta(seconds=v) for k, v in overrides.get("half_life", {}).items()}
    authority = dict(overrides.get("authority", {}))
    if not half_lives and not authority:
        return Profile()
    rules = dataclasses.replace(
        DEFAULT_RULES,
        decay=DEFAULT_RULES.decay.merged(half_lives),
        authority=DEFAULT_RULES.authority.merged(authority),
    )
    return Profile(rules=rules)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    max_in_flight: int = 64
    vector_k: int = 40
    keyword_k: int = 40


@dataclass(slots=True)
class _Clock:
    started: float = field(default_factory=time.perf_counter)
    mark: float = field(default_factory=time.perf_counter)
    stages: dict[str, float] = field(default_factory=dict)

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.stages[stage] = round((now - self.mark) * 1000, 3)
        self.mark = now

    def done(self) -> dict[str, float]:
        self.stages["total"] = round((time.perf_counter() - self.started) * 1000, 3)
        return self.stages


def request_key(request: RetrievalRequest, period: str = "") -> str:
    """What makes two requests the same question (ids, reply address and deadline excluded);
    ``period`` is the note on the period the question names (``in_period``)."""

    def anchors(items: Sequence[Anchor]) -> list[str]:
        return sorted(f"{a.type}:{a.id}" for a in items)

    def iso(moment: datetime | None) -> str | None:
        return moment.isoformat() if moment is not None else None

    shape = {
        "q": request.query.strip(),
        "u": request.user_id,
        "a": anchors(request.anchors),
        "t": request.active_task,
        "e": anchors(request.active_entities),
        "w": [iso(m) for m in request.time_window] if request.time_window else None,
        "as_of": iso(request.as_of),
        "known_at": iso(request.known_at),
        "limit": request.limit,
        "force": request.force,
        "period": period,
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


def in_period(request: RetrievalRequest, now: datetime) -> tuple[RetrievalRequest, str]:
    """The request as it is searched when its question names a period, and the note on it.

    Only a request that sets neither ``as_of`` nor ``time_window`` is read (what the agent set
    wins). A period that has ended sets ``period_moment`` (``periods.valid_time``): every
    version is searched, and each memory found is answered with its version valid at that
    moment ("the price in March 2024" is March's price, not today's). A memory that began
    after the moment is kept as it is now: what was said in April about March is still an
    answer about March (LoCoMo: 4 of 47 period questions in three conversations have all
    their evidence told after the period; ``as_of`` would lose them). A memory with one
    version is the same either way, so "what did I buy in March?" finds what it found before.
    """
    if request.as_of is not None or request.time_window is not None:
        return request, ""
    moment, note = valid_time(request.query, now)
    if moment is None:
        return request, note
    return dataclasses.replace(request, period_moment=moment), note


_FIRST_VERSION_KEYS = 20  # memories whose first version an "earliest" question fetches


def _search_filter(request: RetrievalRequest, anchors: tuple[str, ...] = ()) -> VectorFilter:
    if request.known_at is not None or request.period_moment is not None:
        # Transaction time: what is current now may not have been then, so search every
        # version and re-derive each memory's chain as it was known (see _as_known); a
        # period the question names: the version valid then may not be the current one.
        return VectorFilter(
            current_only=False,
            anchors=anchors,
            window=request.time_window,
            exclude_statuses=("retracted",),
        )
    return VectorFilter(
        current_only=request.as_of is None,
        as_of=request.as_of,
        anchors=anchors,
        window=request.time_window,
        exclude_statuses=("retracted",),
    )


async def _no_hits() -> list[Any]:
    return []


async def _no_counts() -> TermCounts:
    return TermCounts(0, {})


def error_reply(
    request_id: str, code: str, message: str, stages: dict[str, float], now: datetime
) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "status": ERROR,
        "gate": {"decision": "skip", "reason": f"error: {code}"},
        "results": [],
        "latency_ms": stages,
        "error": {"code": code, "message": message},
        "served_at": now,
    }


def result_record(result: ScoredResult, request: RetrievalRequest) -> dict[str, Any]:
    c, s = result.candidate, result.scores
    binding_kind = result.binding_kind or entity_binding(c.anchors, request.anchors).kind
    return {
        "memory_key": c.memory_key,
        "version": c.version,
        "version_id": c.version_id,
        "content": c.content,
        "entity_type": c.entity_type,
        "entity_id": c.entity_id,
        "fact_type": c.fact_type,
        "source_system": c.source_system,
        "status": c.status,
        "effective_status": result.effective_status or c.status,
        "occurred_at": c.occurred_at,
        "valid_from": c.valid_from,
        "valid_to": c.valid_to,
        "scores": {
            "vector": s.vector,
            "keyword": s.keyword,
            "fused": s.fused,
            "authority": s.authority,
            "recency": s.recency,
            "binding": s.binding,
            "state": s.state,
            "cross_validation": s.cross_validation,
            "trust": s.trust,
            "final": s.final,
        },
        "binding_kind": binding_kind,
        "conflicts_with": list(result.conflicts_with),
        "factors": dict(result.factors),
        "rendered": result.rendered,
    }


class Retriever:
    def __init__(
        self,
        queries: MemoryQueries,
        index: VectorIndex,
        embedder: Embedder,
        cache: Cache,
        clock: Callable[[], datetime],
        *,
        profiles: Callable[[str], Awaitable[Profile]] | None = None,
        encode_reply: Callable[[Mapping[str, Any]], bytes] | None = None,
        decode_reply: Callable[[bytes], dict[str, Any]] | None = None,
        config: RetrievalConfig | None = None,
        held: HeldTerms | None = None,
    ) -> None:
        self._queries = queries
        self._index = index
        self._embedder = embedder
        self._cache = cache
        self._clock = clock
        self._profiles = profiles or _default_profile
        self._encode = encode_reply
        self._decode = decode_reply
        self._config = config or RetrievalConfig()
        self._held = held
        self._in_flight = 0
        self._tasks: set[asyncio.Future[None]] = set()

    @property
    def load(self) -> float:
        return min(1.0, self._in_flight / self._config.max_in_flight)

    async def retrieve(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        self._in_flight += 1
        try:
            return await self._retrieve(raw)
        finally:
            self._in_flight -= 1

    async def _retrieve(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        timer = _Clock()
        now = self._clock()
        request_id = str(raw.get("request_id") or "")
        try:
            request = validate_request(raw, now)
        except InvalidRequest as exc:
            timer.lap("validate")
            return error_reply(request_id, exc.code, exc.detail, timer.done(), now)
        if request.deadline_ms is not None and now.timestamp() * 1000 > request.deadline_ms:
            timer.lap("validate")
            return error_reply(
                request_id,
                "deadline_exceeded",
                "the request arrived after its deadline; not worked on",
                timer.done(),
                now,
            )
        if not await self._queries.known_tenant(request.tenant_id):
            timer.lap("validate")
            return error_reply(
                request_id,
                "unknown_tenant",
                f"tenant {request.tenant_id!r} has no memories",
                timer.done(),
                now,
            )
        timer.lap("validate")
        reading = read_question(request, now)  # the question is read once, here
        decision = gate(request, now, self.load, reading=reading)
        timer.lap("gate")
        if not decision.needs_memory and not decision.probe:
            return self._skipped(request_id, decision.reason, timer, now)
        # Only the search reads the period (period_moment); the gate reads the question as asked.
        request, period = in_period(request, now)
        key = request_key(request, period)
        cached = await self._cached_reply(request.tenant_id, key)
        timer.lap("cache")
        if cached is not None:
            cached.update(
                request_id=request_id, latency_ms={**timer.done(), "cache_hit": 1.0}, served_at=now
            )
            return cached
        own: OwnEvidence | None = None
        if decision.probe:
            # No strong cue: the asker's own memories first (a word of the question they hold,
            # or one of them close), then what the retrieval found in the tenant's.
            own = await self._own_evidence(request)
            if own is not None:
                decision = gate(request, now, self.load, own=own, reading=reading)
                timer.lap("gate_own")
        results = await self._search(request, reading, now, timer)
        if decision.probe:
            found = ((r.scores.vector, r.candidate.content) for r in results)
            evidence = evidence_from(request.query, found)
            decision = gate(request, now, self.load, evidence, own, reading=reading)
            timer.lap("gate_evidence")
            if not decision.needs_memory:
                return self._skipped(request_id, decision.reason, timer, now)
        gate_record = {
            "decision": "forced" if request.force else "retrieve",
            "reason": f"{decision.reason}; {period}" if period else decision.reason,
        }
        reply: dict[str, Any] = {
            "request_id": request_id,
            "status": OK,
            "gate": gate_record,
            "results": [result_record(r, request) for r in results],
            "latency_ms": {},
            "error": None,
            "served_at": now,
        }
        reply["latency_ms"] = timer.done()
        if self._encode is not None:
            # Stored once the reply is on its way: the client does not wait for the cache.
            self._background(self._cache.put_reply(request.tenant_id, key, self._encode(reply)))
        return reply

    @staticmethod
    def _skipped(request_id: str, reason: str, timer: _Clock, now: datetime) -> dict[str, Any]:
        return {
            "request_id": request_id,
            "status": SKIPPED,
            "gate": {"decision": "skip", "reason": reason},
            "results": [],
            "latency_ms": timer.done(),
            "error": None,
            "served_at": now,
        }

    async def _own_evidence(self, request: RetrievalRequest) -> OwnEvidence | None:
        """The gate's look at the asker's own memories (``gating`` rule 5a): the question's
        content words they hold (one indexed statement) ‖ the nearest of them (the query's
        embedding, which the retrieval needs anyway, searched among them only). None without
        a user or anchors."""
        anchors = own_anchors(request)
        if not anchors:
            return None
        flt = _search_filter(request, anchors)
        terms = own_terms(request.query)
        counting = (
            self._held.held_terms(request.tenant_id, terms, flt)
            if self._held is not None
            else _no_counts()
        )
        counts_task = asyncio.ensure_future(counting)
        try:
            vector = await self._embed(request.query)
            hits = await self._index.search(request.tenant_id, vector, flt, 1)
            counts = await counts_task
        finally:
            counts_task.cancel()
        nearest = max((hit.score for hit in hits), default=0.0)
        return own_evidence(counts.held, nearest, request, counts.memories)

    def _background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)  # a strong reference until done
        task.add_done_callback(self._tasks.discard)

    async def _cached_reply(self, tenant_id: str, key: str) -> dict[str, Any] | None:
        if self._decode is None:
            return None
        data = await self._cache.get_reply(tenant_id, key)
        return self._decode(data) if data is not None else None

    async def _embed(self, text: str) -> list[float]:
        vector = await self._cache.get_embedding(text)
        if vector is None:
            vector = (await self._embedder.embed([text]))[0]
            await self._cache.put_embedding(text, vector)
        return vector

    async def _as_known(
        self,
        request: RetrievalRequest,
        found: list[MemoryVersion],
        vector_scores: dict[str, float],
        keyword_scores: dict[str, float],
    ) -> list[MemoryVersion]:
        """For each memory found, the version that was valid at ``as_of`` (default: the
        period the question names, else the ``known_at`` moment itself) as memstream knew it
        at ``known_at`` (default: now); it inherits the best search scores of its memory's
        versions. For a period the question names, a memory that began after it keeps the
        version current (see ``in_period``)."""
        moment = request.as_of or request.period_moment or request.known_at
        assert moment is not None
        best_vector: dict[str, float] = {}
        best_keyword: dict[str, float] = {}
        for v in found:
            for scores, best in ((vector_scores, best_vector), (keyword_scores, best_keyword)):
                if v.version_id in scores:
                    best[v.memory_key] = max(scores[v.version_id], best.get(v.memory_key, -1.0))
        chains: dict[str, list[MemoryVersion]] = {}
        keys = list(dict.fromkeys(v.memory_key for v in found))
        for v in await self._queries.chains(request.tenant_id, keys):
            chains.setdefault(v.memory_key, []).append(v)
        chosen: list[MemoryVersion] = []
        for key, chain in chains.items():
            if request.known_at is not None:
                chain = versioning.known_at(chain, request.known_at)
            then = versioning.valid_at(chain, moment)
            later = all(v.valid_from > moment for v in chain)
            if then is None and request.as_of is None and request.period_moment and later:
                then = versioning.current_of(chain)
            if then is None:
                continue
            if key in best_vector:
                vector_scores[then.version_id] = best_vector[key]
            if key in best_keyword:
                keyword_scores[then.version_id] = best_keyword[key]
            chosen.append(then)
        return chosen

    async def _first_versions(
        self,
        request: RetrievalRequest,
        found: list[MemoryVersion],
        vector_scores: dict[str, float],
        keyword_scores: dict[str, float],
    ) -> list[MemoryVersion]:
        """For a question asking for the earliest ("the original price", "第一次的价格"), the
        first version of each memory found (as its ``valid_from`` orders them; retracted ones
        are dropped later), with its memory's best search scores: the searches find current
        versions, and the first one is what the question asks about. Ranking
        (``timely.by_time``) orders a memory's versions by time."""
        keys = list(dict.fromkeys(v.memory_key for v in found))[:_FIRST_VERSION_KEYS]
        have = {v.version_id for v in found}
        best: dict[str, tuple[float | None, float | None]] = {}
        for v in found:
            vec, kw = best.get(v.memory_key, (None, None))
            vs, ks = vector_scores.get(v.version_id), keyword_scores.get(v.version_id)
            best[v.memory_key] = (
                vs if vec is None else (vec if vs is None else max(vec, vs)),
                ks if kw is None else (kw if ks is None else max(kw, ks)),
            )
        chains: dict[str, list[MemoryVersion]] = {}
        for v in await self._queries.chains(request.tenant_id, keys):
            chains.setdefault(v.memory_key, []).append(v)
        added: list[MemoryVersion] = []
        for key, chain in chains.items():
            first = min(chain, key=lambda v: (v.valid_from, v.version))
            if first.version_id in have:
                continue
            vec, kw = best.get(key, (None, None))
            if vec is not None:
                vector_scores[first.version_id] = vec
            if kw is not None:
                keyword_scores[first.version_id] = kw
            added.append(first)
        return added

    async def _complete(
        self,
        request: RetrievalRequest,
        vector: list[float],
        vector_scores: dict[str, float],
        keyword_ids: Iterable[str],
    ) -> None:
        """Give every keyword candidate its vector score. A memory the keyword search found but
        the vector search left out of its top k has a real similarity, only a lower one;
        fused as 0, its relevance depended on k (LoCoMo recall@5 0.532 → 0.561 with k 40 →
        100). One more vector search, limited to those ids within the request's filter, scores
        them: 0.532 → 0.597. The other way round (keyword-scoring the vector-only candidates)
        was measured too: no gain (0.594) for ~7 ms more per request on two cores — a memory
        outside the keyword top k shares little with the question — so it is not done."""
        missing = tuple(sorted(set(keyword_ids) - set(vector_scores)))
        if not missing:
            return
        only = dataclasses.replace(_search_filter(request), ids=missing)
        for hit in await self._index.search(request.tenant_id, vector, only, len(missing)):
            vector_scores.setdefault(hit.id, hit.score)

    async def _search(
        self, request: RetrievalRequest, reading: QuestionReading, now: datetime, timer: _Clock
    ) -> list[ScoredResult]:
        cfg = self._config
        tenant = request.tenant_id
        keyword_task = asyncio.ensure_future(
            self._queries.keyword_search(
                tenant, request.query, _search_filter(request), cfg.keyword_k
            )
        )
        try:
            vector = await self._embed(request.query)
            timer.lap("embed")
            anchors = tuple(
                f"{a.type}:{a.id}" for a in (*request.anchors, *request.active_entities)
            )
            searches = [self._index.search(tenant, vector, _search_filter(request), cfg.vector_k)]
            if anchors:
                searches.append(
                    self._index.search(
                        tenant, vector, _search_filter(request, anchors), cfg.vector_k
                    )
                )
            hit_lists: list[list[VectorHit]] = list(await asyncio.gather(*searches))
            timer.lap("vector")
            keyword_hits = await keyword_task
            timer.lap("keyword")
        finally:
            keyword_task.cancel()
        vector_scores: dict[str, float] = {}
        for hits in hit_lists:
            for hit in hits:
                vector_scores[hit.id] = max(hit.score, vector_scores.get(hit.id, -1.0))
        keyword_scores = {h.version_id: h.score for h in keyword_hits}
        ids = sorted(set(vector_scores) | set(keyword_scores))
        # The candidates are known: fetch them while the missing vector scores are looked up.
        versions, _ = await asyncio.gather(
            self._queries.versions(tenant, ids) if ids else _no_hits(),
            self._complete(request, vector, vector_scores, keyword_scores),
        )
        if (request.known_at or request.period_moment) is not None and versions:
            versions = await self._as_known(request, versions, vector_scores, keyword_scores)
        elif reading.ordinal == EARLIEST and request.as_of is None and versions:
            versions += await self._first_versions(request, versions, vector_scores, keyword_scores)
        timer.lap("fetch")
        candidates = [
            Candidate.from_version(
                v,
                vector_score=vector_scores.get(v.version_id),
                keyword_score=keyword_scores.get(v.version_id),
            )
            for v in versions
            if v.tenant_id == tenant  # defence in depth: the stores are tenant-scoped already
        ]
        profile = await self._profiles(tenant)
        # A transaction-time question is scored with the clock of that moment (as it was asked).
        scored_at = request.known_at if request.known_at is not None else now
        results = score_candidates(
            request, candidates, scored_at, profile.trust, profile.rules, reading
        )
        timer.lap("rank")
        return results
