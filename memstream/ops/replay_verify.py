"""Checksums of memstream's state per tenant, and their comparison (``memstream replay --verify``).

A tenant's state is a set of *components*, each a map from a stable key to one canonical line
(a compact JSON array of plain values; times as ISO-8601 UTC with microseconds):

- ``versions``: key ``memory_key`` + ``version``; line = memory_key, version, version_id,
  parent_id, event_id, op, status, valid_from, valid_to, is_current, sha256(content);
- ``current``: the current version of each memory (memory_key, version_id);
- ``ledger``: key event_id; line = event_id, memory_key, op, version_id, outcome, topic,
  partition, offset, received_at, md5 of the payload's jsonb text;
- ``vectors``: key point id; line = id, is_current, valid_to (epoch seconds, 6 decimals) — read
  from a vector index, or *expected* from Postgres (one point per UPSERT version).

A component's digest is the sha256 of its lines sorted by key (code-point order), joined by
newlines; a tenant's checksum is the sha256 of ``name:digest`` lines of the components compared.
Transaction times of versions (recorded_at / superseded_at) are left out on purpose: the live
worker stamps its own clock, a replay stamps the ledger's received_at, which the ``ledger``
component compares instead.

Must not import streams; only ops, services and the drivers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from rich.console import Console

from memstream.ops.stack import StackError, read_runtime
from memstream.services.adapters.postgres import VERSION_COLUMNS, row_to_version
from memstream.services.domain.model import MemoryVersion, Op
from memstream.services.domain.versioning import known_at
from memstream.services.ports import AdapterError, VectorFilter, VectorIndex
from memstream.services.settings import Settings

out = Console(highlight=False, soft_wrap=True)

ORDER = ("versions", "current", "ledger", "vectors")
SHOWN_DIFFERENCES = 5

_VERSIONS = (
    "SELECT " + VERSION_COLUMNS + ", ledger_received_at FROM ("
    " SELECT m.*, l.received_at AS ledger_received_at FROM memory_versions m"
    " JOIN event_ledger l ON l.tenant_id = m.tenant_id AND l.event_id = m.event_id"
    " WHERE (%(tenants)s::text[] IS NULL OR m.tenant_id = ANY(%(tenants)s::text[]))"
    " AND m.erased_at IS NULL"  # erased: tombstones that no replay reproduces, by design
    " AND (%(until)s::timestamptz IS NULL OR l.received_at <= %(until)s)) AS v"
)
_LEDGER = (
    'SELECT tenant_id, event_id, memory_key, op, version_id::text, outcome, topic, "partition",'
    ' "offset", received_at, md5(payload::text) FROM event_ledger'
    " WHERE (%(tenants)s::text[] IS NULL OR tenant_id = ANY(%(tenants)s::text[]))"
    " AND erased_at IS NULL"
    " AND (%(until)s::timestamptz IS NULL OR received_at <= %(until)s)"
)


def _line(*values: Any) -> str:
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment is not None else None


def _epoch(value: Any) -> str | None:
    return None if value is None else f"{float(value):.6f}"


@dataclass
class Component:
    name: str
    rows: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        text = "\n".join(self.rows[key] for key in sorted(self.rows))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class TenantState:
    tenant_id: str
    components: dict[str, Component] = field(default_factory=dict)

    def component(self, name: str) -> Component:
        return self.components.setdefault(name, Component(name))

    def checksum(self, names: Iterable[str]) -> str:
        text = "".join(f"{n}:{self.component(n).digest}\n" for n in ORDER if n in set(names))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


State = dict[str, TenantState]


def tenant_state(state: State, tenant_id: str) -> TenantState:
    return state.setdefault(tenant_id, TenantState(tenant_id))


def _add_version(state: State, v: MemoryVersion) -> None:
    tenant = tenant_state(state, v.tenant_id)
    key = f"{v.memory_key}\x1f{v.version:010d}"
    content = hashlib.sha256(v.content.encode("utf-8")).hexdigest()
    tenant.component("versions").rows[key] = _line(
        v.memory_key, v.version, v.version_id, v.parent_id, v.event_id, v.op.value, v.status,
        iso(v.valid_from), iso(v.valid_to), v.is_current, content,
    )  # fmt: skip
    tenant.component("current")
    if v.is_current:
        tenant.component("current").rows[v.memory_key] = _line(v.memory_key, v.version_id)


def expected_point(v: MemoryVersion) -> str:
    """The canonical vectors line Postgres implies for an UPSERT version."""
    return _line(v.version_id, v.is_current, _epoch(v.valid_to.timestamp() if v.valid_to else None))


async def postgres_state(
    conn: psycopg.AsyncConnection[Any],
    tenants: Sequence[str] | None,
    until: datetime | None,
    *,
    expected_vectors: bool,
) -> State:
    """Versions, current flags and ledger as stored; with ``until``, the versions as known then
    (received_at <= until, chains re-derived with received_at as transaction time)."""
    state: State = {}
    params = {"tenants": list(tenants) if tenants is not None else None, "until": until}
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(_VERSIONS, params)
    versions: list[MemoryVersion] = []
    for row in await cur.fetchall():
        v = row_to_version(row)
        if until is not None:  # the transaction time a replay reproduces: the ledger's
            v = dataclasses.replace(v, recorded_at=row["ledger_received_at"])
        versions.append(v)
    if until is not None:
        chains: dict[tuple[str, str], list[MemoryVersion]] = {}
        for v in versions:
            chains.setdefault((v.tenant_id, v.memory_key), []).append(v)
        versions = [v for chain in chains.values() for v in known_at(chain, until)]
    for v in versions:
        _add_version(state, v)
        if expected_vectors:
            vectors = tenant_state(state, v.tenant_id).component("vectors")
            if v.op is Op.UPSERT:
                vectors.rows[v.version_id] = expected_point(v)
    async with conn.cursor() as ledger:
        await ledger.execute(_LEDGER, params)
        for tenant_id, event_id, *rest, received_at, payload_md5 in await ledger.fetchall():
            tenant_state(state, tenant_id).component("ledger").rows[event_id] = _line(
                event_id, *rest, iso(received_at), payload_md5
            )
    return state


async def index_points(index: VectorIndex, tenant_id: str, dimension: int) -> dict[str, str]:
    """Every point of the tenant's vector store as canonical ``vectors`` lines, by id."""
    total = await index.count(tenant_id)
    if not total:
        return {}
    probe = [1.0] + [0.0] * (dimension - 1)  # any vector: the filter-free search returns all
    hits = await index.search(tenant_id, probe, VectorFilter(current_only=False), limit=total)
    lines = {h.id: _line(h.id, h.payload.get("is_current"), _epoch(h.payload.get("valid_to")))
             for h in hits}  # fmt: skip
    for pid in await index.point_ids(tenant_id) - lines.keys():
        lines[pid] = _line(pid, None, None)  # present but not returned by the search
    return lines


async def add_index_points(
    state: State, index: VectorIndex, tenants: Iterable[str], dimension: int
) -> None:
    for tenant_id in tenants:
        tenant_state(state, tenant_id).component("vectors").rows = await index_points(
            index, tenant_id, dimension
        )


@dataclass
class TenantReport:
    tenant_id: str
    checksum_a: str
    checksum_b: str
    counts: dict[str, int]
    differences: list[str]

    @property
    def identical(self) -> bool:
        return self.checksum_a == self.checksum_b and not self.differences


def _differences(name: str, a: Component, b: Component, labels: tuple[str, str]) -> list[str]:
    """The first differing rows (by key), and how many more there are."""
    keys = [k for k in sorted(a.rows.keys() | b.rows.keys()) if a.rows.get(k) != b.rows.get(k)]
    found: list[str] = []
    for key in keys[:SHOWN_DIFFERENCES]:
        left, right = a.rows.get(key), b.rows.get(key)
        if left is None:
            found.append(f"{name}: only in {labels[1]}: {right}")
        elif right is None:
            found.append(f"{name}: only in {labels[0]}: {left}")
        else:
            found.append(f"{name}: {labels[0]} {left} ≠ {labels[1]} {right}")
    if len(keys) > SHOWN_DIFFERENCES:
        found.append(f"{name}: … {len(keys) - SHOWN_DIFFERENCES} more differences")
    return found


def compare(
    a: State, b: State, names: Sequence[str], labels: tuple[str, str]
) -> list[TenantReport]:
    """One report per tenant present on either side, components ``names`` compared."""
    reports = []
    for tenant_id in sorted(a.keys() | b.keys()):
        left, right = tenant_state(a, tenant_id), tenant_state(b, tenant_id)
        differences = [
            d for n in names for d in _differences(n, left.component(n), right.component(n), labels)
        ]
        reports.append(
            TenantReport(
                tenant_id,
                left.checksum(names),
                right.checksum(names),
                {n: len(left.component(n).rows) for n in names},
                differences,
            )
        )
    return reports


def render(reports: Sequence[TenantReport], labels: tuple[str, str]) -> list[str]:
    """Lines for the console: a checksum per tenant, then the first differences."""
    lines: list[str] = []
    for r in reports:
        counts = " · ".join(f"{name} {count}" for name, count in r.counts.items())
        if r.identical:
            lines.append(f"tenant {r.tenant_id} · identical · sha256 {r.checksum_a} ({counts})")
            continue
        lines.append(
            f"tenant {r.tenant_id} · DIFFERENT · {labels[0]} sha256 {r.checksum_a} · "
            f"{labels[1]} sha256 {r.checksum_b}"
        )
        lines.extend(f"  {d}" for d in r.differences)
    differ = sum(1 for r in reports if not r.identical)
    if not reports:
        lines.append("verify: no tenant to compare")
    elif differ:
        lines.append(f"verify: {differ} of {len(reports)} tenants differ")
    else:
        lines.append(f"verify: identical ({len(reports)} tenant{'s' * (len(reports) != 1)})")
    return lines


# -- connections, the model's dimension, vector indexes ----------------------------------------


def schema_dsn(dsn: str, schema: str) -> str:
    """``dsn`` whose sessions use ``schema`` first (public stays on the path for pg_trgm)."""
    options = conninfo_to_dict(dsn).get("options") or ""
    return make_conninfo(dsn, options=f"{options} -c search_path={schema},public".strip())


def load_embedder(settings: Settings) -> Any:
    from memstream.services.bootstrap import load_embedder

    return load_embedder(settings)


def dimension_of(settings: Settings) -> int:
    """The model's vector size, read from its sentence-transformers files when they say it
    (Transformer + Pooling [+ Normalize]); else by loading the model."""
    from memstream.services.bootstrap import resolve_model_path

    path = resolve_model_path(settings)
    try:
        modules = json.loads((path / "modules.json").read_text())
        kinds = {m["type"].rsplit(".", 1)[-1] for m in modules}
        if kinds <= {"Transformer", "Pooling", "Normalize"}:
            pooling = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
            return int(json.loads((path / pooling / "config.json").read_text())[
                "word_embedding_dimension"])  # fmt: skip
    except (OSError, ValueError, KeyError, StopIteration):
        pass
    return int(load_embedder(settings).dimension)


def live_index(settings: Settings, dimension: int) -> VectorIndex:
    """The live index: the Qdrant server, or the Edge shards (see ``copy_index``)."""
    if settings.qdrant_url:
        from memstream.services.bootstrap import build_index

        return build_index(settings, dimension)
    return copy_index(settings.vector_root, dimension)


def copy_index(root: Path, dimension: int) -> VectorIndex:
    """Qdrant Edge shards under ``root``, writes not flushed one by one (a killed process
    loses nothing, the WAL is in the page cache; ``close`` flushes)."""
    from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex

    return QdrantEdgeIndex(root, dimension, flush_writes=False)


@contextlib.asynccontextmanager
async def connect(dsn: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:
        yield conn
    finally:
        await conn.close()


async def tenants_of(conn: psycopg.AsyncConnection[Any], wanted: Sequence[str] | None) -> list[str]:
    rows = await (await conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")).fetchall()
    known = [r[0] for r in rows]
    unknown = sorted(set(wanted or ()) - set(known))
    if unknown:
        raise AdapterError(f"unknown tenant {unknown[0]!r}: it has no memory in this database")
    return list(wanted) if wanted else known


META = (
    "CREATE TABLE IF NOT EXISTS replay_meta (id boolean PRIMARY KEY DEFAULT true CHECK (id),"
    " source text NOT NULL, tenants text[], until timestamptz, vectors text,"
    " updated_at timestamptz NOT NULL DEFAULT now())"
)


async def read_meta(conn: psycopg.AsyncConnection[Any]) -> dict[str, Any] | None:
    """The copy's replay parameters (source, tenants, until, vectors), creating the table."""
    await conn.execute(META)
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute("SELECT source, tenants, until, vectors FROM replay_meta")
    return await cur.fetchone()


# -- verification ------------------------------------------------------------------------------


async def verify_index(settings: Settings, tenants: Sequence[str] | None) -> int:
    """Every UPSERT version has exactly one point whose is_current / valid_to match."""
    assert settings.postgres_dsn is not None
    dimension = dimension_of(settings)
    index = live_index(settings, dimension)
    try:
        async with connect(settings.postgres_dsn) as conn:
            scope = await tenants_of(conn, tenants)
            expected = await postgres_state(conn, scope, None, expected_vectors=True)
            pending = await (await conn.execute(
                "SELECT count(*) FROM memory_versions WHERE tenant_id = ANY(%s)"
                " AND op = 'UPSERT' AND erased_at IS NULL AND (indexed_at IS NULL OR index_dirty)",
                (scope,),
            )).fetchone()  # fmt: skip
        actual: State = {}
        await add_index_points(actual, index, scope, dimension)
    finally:
        await index.close()
    for tenant in scope:
        tenant_state(expected, tenant)
    labels = ("index", "postgres")
    reports = compare(actual, expected, ["vectors"], labels)
    for line in render(reports, labels):
        out.print(line, markup=False)
    if pending and pending[0]:
        out.print(f"note: {pending[0]} versions are still pending indexing in Postgres")
    return 0 if all(r.identical for r in reports) else 1


async def verify_copy(
    settings: Settings,
    schema: str,
    *,
    into_dsn: str | None,
    into_vectors: Path | None,
    tenants: Sequence[str] | None,
    until: datetime | None,
) -> int:
    """The copy against the live state (as known at --until), checksum per tenant."""
    assert settings.postgres_dsn is not None
    target = schema_dsn(into_dsn or settings.postgres_dsn, schema)
    async with connect(target) as dst:
        exists = await (await dst.execute(
            "SELECT to_regclass('replay_meta') IS NOT NULL AND current_schema() = %s", (schema,)
        )).fetchone()  # fmt: skip
        if not exists or not exists[0]:
            raise StackError(
                "replay --verify",
                f"schema {schema} holds no replay copy",
                "build it first with `memstream replay --into-schema NAME`",
            )
        meta = await read_meta(dst)
        assert meta is not None
        tenants = tenants or (tuple(meta["tenants"]) if meta["tenants"] else None)
        until = until or meta["until"]
        copy = await postgres_state(dst, tenants, None, expected_vectors=False)
    root = into_vectors or (Path(meta["vectors"]) if meta["vectors"] else None)
    live_points = until is None and (
        settings.qdrant_url is not None or read_runtime(settings.data_dir) is None
    )
    async with connect(settings.postgres_dsn) as src:
        live = await postgres_state(src, tenants, until, expected_vectors=not live_points)
    names = ["versions", "current", "ledger"]
    if root is not None and root.is_dir():
        names.append("vectors")
        dimension = dimension_of(settings)
        scope = sorted(copy.keys() | live.keys())
        copy_vectors = copy_index(root, dimension)
        try:
            await add_index_points(copy, copy_vectors, scope, dimension)
        finally:
            await copy_vectors.close()
        if live_points:
            live_vectors = live_index(settings, dimension)
            try:
                await add_index_points(live, live_vectors, scope, dimension)
            finally:
                await live_vectors.close()
        else:
            out.print("note: live vectors compared as Postgres implies them (live shards held "
                      "by the running worker, or --until)", markup=False)  # fmt: skip
    else:
        out.print("note: the copy has no vector index; vectors not compared", markup=False)
    labels = ("copy", "live")
    reports = compare(copy, live, names, labels)
    when = f" as known at {until.isoformat()}" if until else ""
    out.print(f"verify: copy {schema} against the live state{when}", markup=False)
    for line in render(reports, labels):
        out.print(line, markup=False)
    return 0 if all(r.identical for r in reports) else 1
