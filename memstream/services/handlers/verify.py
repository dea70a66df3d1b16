"""handle_verify: compare states by checksum (``memstream replay --verify``).

Two checks, each ending in a checksum per tenant and the first differences
(``domain.checksum``): the live vector index against what Postgres implies (``verify_index``),
and an audit copy against the live state as known at ``until`` (``verify_copy``). Versions as
known at a moment are re-derived with the ledger's received_at as transaction time, as a replay
records them. Returns 0 when identical, 1 otherwise.

Takes its dependencies (``RebuildTools``); imports no driver, no adapter, no ops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from memstream.services.domain.checksum import (
    State,
    add_ledger,
    add_version,
    compare,
    point_line,
    render,
    tenant_state,
)
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.versioning import known_at
from memstream.services.handlers.rebuild import Feedback, Options, RebuildTools, opened
from memstream.services.ports import Ledger, Refused, ReplayScope, VectorFilter, VectorIndex


async def postgres_state(ledger: Ledger, scope: ReplayScope, *, expected_vectors: bool) -> State:
    """Versions, current flags and ledger as stored; with ``scope.until``, the versions as known
    then (received_at <= until, chains re-derived with received_at as transaction time)."""
    state: State = {}
    versions: list[MemoryVersion] = []
    for v, received_at in await ledger.versions(scope):
        if scope.until is not None:  # the transaction time a replay reproduces: the ledger's
            v = dataclasses.replace(v, recorded_at=received_at)
        versions.append(v)
    if scope.until is not None:
        chains: dict[tuple[str, str], list[MemoryVersion]] = {}
        for v in versions:
            chains.setdefault((v.tenant_id, v.memory_key), []).append(v)
        versions = [v for chain in chains.values() for v in known_at(chain, scope.until)]
    for v in versions:
        add_version(state, v, expected_vectors=expected_vectors)
    for row in await ledger.ledger_lines(scope):
        add_ledger(state, row)
    return state


async def index_points(index: VectorIndex, tenant_id: str, dimension: int) -> dict[str, str]:
    """Every point of the tenant's vector store as canonical ``vectors`` lines, by id."""
    total = await index.count(tenant_id)
    if not total:
        return {}
    probe = [1.0] + [0.0] * (dimension - 1)  # any vector: the filter-free search returns all
    hits = await index.search(tenant_id, probe, VectorFilter(current_only=False), limit=total)
    lines = {
        h.id: point_line(h.id, h.payload.get("is_current"), h.payload.get("valid_to")) for h in hits
    }
    for pid in await index.point_ids(tenant_id) - lines.keys():
        lines[pid] = point_line(pid, None, None)  # present but not returned by the search
    return lines


async def add_index_points(
    state: State, index: VectorIndex, tenants: Iterable[str], dimension: int
) -> None:
    for tenant_id in tenants:
        tenant_state(state, tenant_id).component("vectors").rows = await index_points(
            index, tenant_id, dimension
        )


async def verify_index(
    tools: RebuildTools, feedback: Feedback, source: str, tenants: tuple[str, ...] | None
) -> int:
    """Every UPSERT version has exactly one point whose is_current / valid_to match."""
    dimension = tools.dimension()
    index = tools.live_index(dimension)
    try:
        async with opened(tools, source) as ledger:
            scope = await ledger.tenants(tenants)
            expected = await postgres_state(
                ledger, ReplayScope(tuple(scope)), expected_vectors=True
            )
            pending = await ledger.pending_count(scope)
        actual: State = {}
        await add_index_points(actual, index, scope, dimension)
    finally:
        await index.close()
    for tenant in scope:
        tenant_state(expected, tenant)
    labels = ("index", "postgres")
    reports = compare(actual, expected, ["vectors"], labels)
    for line in render(reports, labels):
        feedback.say(line)
    if pending:
        feedback.say(f"note: {pending} versions are still pending indexing in Postgres")
    return 0 if all(r.identical for r in reports) else 1


async def verify_copy(
    tools: RebuildTools,
    feedback: Feedback,
    source: str,
    options: Options,
    *,
    live_points: bool,
) -> int:
    """The copy ``options.schema`` against the live state (as known at ``options.until``),
    checksum per tenant. ``live_points``: the live vectors can be read (no worker holds the
    Edge shards, or a Qdrant server); else they are compared as Postgres implies them."""
    schema = options.schema
    assert schema is not None
    target = tools.schema_dsn(options.into_dsn or source, schema)
    async with opened(tools, target) as dst:
        meta = await dst.read_meta() if await dst.holds_copy(schema) else None
        if meta is None:
            raise Refused(
                "replay --verify",
                f"schema {schema} holds no replay copy",
                "build it first with `memstream replay --into-schema NAME`",
            )
        tenants = options.tenants or meta.tenants
        until: datetime | None = options.until or meta.until
        copy = await postgres_state(dst, ReplayScope(tenants), expected_vectors=False)
    root = options.into_vectors or (Path(meta.vectors) if meta.vectors else None)
    live_points = until is None and live_points
    async with opened(tools, source) as src:
        live = await postgres_state(
            src, ReplayScope(tenants, until), expected_vectors=not live_points
        )
    names = ["versions", "current", "ledger"]
    if root is not None and root.is_dir():
        names.append("vectors")
        dimension = tools.dimension()
        scope = sorted(copy.keys() | live.keys())
        copy_vectors = tools.copy_index(root, dimension)
        try:
            await add_index_points(copy, copy_vectors, scope, dimension)
        finally:
            await copy_vectors.close()
        if live_points:
            live_vectors = tools.live_index(dimension)
            try:
                await add_index_points(live, live_vectors, scope, dimension)
            finally:
                await live_vectors.close()
        else:
            feedback.say("note: live vectors compared as Postgres implies them (live shards "
                         "held by the running worker, or --until)")  # fmt: skip
    else:
        feedback.say("note: the copy has no vector index; vectors not compared")
    labels = ("copy", "live")
    reports = compare(copy, live, names, labels)
    when = f" as known at {until.isoformat()}" if until else ""
    feedback.say(f"verify: copy {schema} against the live state{when}")
    for line in render(reports, labels):
        feedback.say(line)
    return 0 if all(r.identical for r in reports) else 1
