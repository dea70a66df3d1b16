"""One contract suite for the ``VectorIndex`` port, run on every adapter.

``QdrantEdgeIndex`` runs on a temporary directory, ``QdrantServerIndex`` on qdrant-client's
local mode (``AsyncQdrantClient(location=":memory:")``). Every test uses fresh tenant ids (with
characters a directory or collection name cannot hold) and small random unit vectors; nothing
is mocked. The last tests are edge-only: persistence across close/re-open and SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as qe
from qdrant_client import AsyncQdrantClient

from memstream.services.adapters.qdrant_edge import (
    NEW_SHARD_DATATYPE,
    PAYLOAD_INDEXES,
    QdrantEdgeIndex,
)
from memstream.services.adapters.qdrant_server import QdrantServerIndex
from memstream.services.adapters.shard_budget import maps_in_use, shard_maps
from memstream.services.ports import (
    AdapterError,
    TransientError,
    VectorFilter,
    VectorHit,
    VectorIndex,
    VectorPoint,
)

# qdrant-client's local mode warns that payload indexes are no-ops there; the adapter still
# creates them because a real server needs them.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 8
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(days=30)
EVERYTHING = VectorFilter(current_only=False)
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Backend:
    name: str
    index: VectorIndex
    # Where a tenant's data physically lives (directory or collection), None when absent.
    storage_of: Callable[[str], Awaitable[str | None]]


# "edge" as a small tenant's shard is (no payload indexes: the engine reads each payload),
# "edge-indexed" as a large one's (payload indexes from the first point), "edge-parts" as a
# large one split into parts by subject (split from the first point, into 4 parts).
@pytest.fixture(params=["edge", "edge-indexed", "edge-parts", "server"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param.startswith("edge"):
        indexed = request.param == "edge-indexed"
        split = {"split_from": 0, "parts": 4} if request.param == "edge-parts" else {}
        edge = QdrantEdgeIndex(
            tmp_path / "vectors", DIM, index_from=0 if indexed else 10**9, **split
        )

        async def shard_of(tenant_id: str) -> str | None:
            path = edge.shard_dir(tenant_id)
            return str(path) if await asyncio.to_thread(path.exists) else None

        yield Backend(request.param, edge, shard_of)
        await edge.close()
    else:
        client = AsyncQdrantClient(location=":memory:")
        server = QdrantServerIndex(client, DIM, collection_prefix="contract_")

        async def collection_of(tenant_id: str) -> str | None:
            name = server.collection_name(tenant_id)
            return name if await client.collection_exists(name) else None

        yield Backend("server", server, collection_of)
        await server.close()


def new_tenant() -> str:
    return f"Acme/Ünïcode tenant {uuid.uuid4()}"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


def unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.asarray(a), np.asarray(b)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def point(vector: list[float], *, without: tuple[str, ...] = (), **payload: Any) -> VectorPoint:
    base: dict[str, Any] = {
        "memory_key": f"mk-{uuid.uuid4()}",
        "is_current": True,
        "valid_from": T0.timestamp(),
        "valid_to": None,
        "occurred_at": T0.timestamp(),
        "anchors": [],
        "fact_type": "note",
        "status": "active",
        "source_system": "crm",
    }
    merged = {k: v for k, v in (base | payload).items() if k not in without}
    return VectorPoint(id=str(uuid.uuid4()), vector=vector, payload=merged)


def ids(hits: list[VectorHit]) -> set[str]:
    return {h.id for h in hits}


async def search_all(index: VectorIndex, tenant: str, flt: VectorFilter) -> set[str]:
    return ids(await index.search(tenant, [1.0] * DIM, flt, limit=100))


async def test_search_ranks_by_cosine_similarity(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    points = [point(unit(rng), n=i) for i in range(30)]
    await backend.index.upsert(tenant, points)
    query = unit(rng)

    hits = await backend.index.search(tenant, query, EVERYTHING, limit=10)

    by_id = {p.id: p for p in points}
    true_score = {p.id: cosine(query, list(p.vector)) for p in points}
    assert len(hits) == 10
    for hit in hits:
        # Qdrant Edge stores vectors at 16 bits a dimension (TurboQuant): within 1e-4 at 8
        # dimensions, 1e-5 at the model's 384 (measured).
        assert hit.score == pytest.approx(true_score[hit.id], abs=1e-4)
        assert dict(hit.payload) == dict(by_id[hit.id].payload)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    # The ten best (robust to float32 near-ties, unlike comparing two orders).
    left_out = max(score for pid, score in true_score.items() if pid not in ids(hits))
    assert min(scores) >= left_out - 1e-5
    assert await backend.index.search(tenant, query, EVERYTHING, limit=0) == []


async def test_upsert_of_the_same_id_replaces_the_point(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    original = point(unit(rng), fact_type="note")
    await backend.index.upsert(tenant, [original])
    await backend.index.upsert(tenant, [original])
    assert await backend.index.count(tenant) == 1

    replaced = VectorPoint(original.id, unit(rng), dict(original.payload) | {"fact_type": "plan"})
    await backend.index.upsert(tenant, [replaced])

    assert await backend.index.count(tenant) == 1
    [hit] = await backend.index.search(tenant, list(replaced.vector), EVERYTHING, limit=5)
    assert hit.id == original.id
    # Qdrant Edge stores vectors at 16 bits: a point's score against its own vector was off by
    # up to 1.1e-5 over 120 random unit vectors of this size (with ACORN or without).
    assert hit.score == pytest.approx(1.0, abs=1e-4)
    assert hit.payload["fact_type"] == "plan"


async def test_ids_are_canonical_uuid_strings(backend: Backend, rng: np.random.Generator) -> None:
    tenant = new_tenant()
    raw = uuid.uuid4()
    await backend.index.upsert(tenant, [VectorPoint(str(raw).upper(), unit(rng), {})])
    assert await backend.index.point_ids(tenant) == {str(raw)}


async def test_current_only_returns_current_versions(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    old = point(unit(rng), is_current=False, valid_to=T1.timestamp())
    new = point(unit(rng), valid_from=T1.timestamp())
    await backend.index.upsert(tenant, [old, new])

    assert await search_all(backend.index, tenant, VectorFilter()) == {new.id}
    assert await search_all(backend.index, tenant, EVERYTHING) == {old.id, new.id}


async def test_as_of_selects_the_version_valid_then(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    v1 = point(unit(rng), is_current=False, valid_to=T1.timestamp())
    v2 = point(unit(rng), valid_from=T1.timestamp())  # valid_to: None
    no_end = point(unit(rng), valid_from=T1.timestamp(), without=("valid_to",))  # absent
    await backend.index.upsert(tenant, [v1, v2, no_end])

    async def valid_at(moment: datetime) -> set[str]:
        return await search_all(backend.index, tenant, VectorFilter(as_of=moment))

    assert await valid_at(T0 - timedelta(seconds=1)) == set()
    assert await valid_at(T0) == {v1.id}  # valid_from is inclusive; as_of overrides current_only
    assert await valid_at(T1 - timedelta(milliseconds=1)) == {v1.id}
    assert await valid_at(T1) == {v2.id, no_end.id}  # valid_to is exclusive
    assert await valid_at(T1 + timedelta(days=3650)) == {v2.id, no_end.id}


async def test_anchors_match_any_of(backend: Backend, rng: np.random.Generator) -> None:
    tenant = new_tenant()
    customer = point(unit(rng), anchors=["customer:1"])
    order = point(unit(rng), anchors=["customer:2", "order:9"])
    loose = point(unit(rng), anchors=[])
    await backend.index.upsert(tenant, [customer, order, loose])

    found = await search_all(backend.index, tenant, VectorFilter(anchors=("customer:1", "order:9")))
    assert found == {customer.id, order.id}
    assert await search_all(backend.index, tenant, VectorFilter(anchors=("order:9",))) == {order.id}
    assert await search_all(backend.index, tenant, VectorFilter(anchors=("customer:3",))) == set()
    assert await search_all(backend.index, tenant, VectorFilter(anchors=())) == {
        customer.id,
        order.id,
        loose.id,
    }


async def test_ids_select_points_and_keep_their_true_scores(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    points = [point(unit(rng)) for _ in range(6)]
    await backend.index.upsert(tenant, points)
    query = unit(rng)
    everything = {
        h.id: h.score for h in await backend.index.search(tenant, query, VectorFilter(), 6)
    }
    chosen = (points[1].id.upper(), points[4].id, "not-a-uuid")  # any spelling of a uuid
    hits = await backend.index.search(tenant, query, VectorFilter(ids=chosen), 10)
    assert {h.id for h in hits} == {points[1].id, points[4].id}
    assert all(h.score == pytest.approx(everything[h.id], abs=1e-5) for h in hits)
    assert await search_all(backend.index, tenant, VectorFilter(ids=("not-a-uuid",))) == set()
    stale = point(unit(rng), is_current=False)
    await backend.index.upsert(tenant, [stale])
    assert await search_all(backend.index, tenant, VectorFilter(ids=(stale.id,))) == set()


async def test_window_is_inclusive_on_occurred_at(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    start, end = T0, T0 + timedelta(days=7)
    moments = {
        "before": start - timedelta(seconds=1),
        "start": start,
        "inside": start + timedelta(days=3),
        "end": end,
        "after": end + timedelta(seconds=1),
    }
    points = {k: point(unit(rng), occurred_at=m.timestamp()) for k, m in moments.items()}
    await backend.index.upsert(tenant, list(points.values()))

    found = await search_all(backend.index, tenant, VectorFilter(window=(start, end)))
    assert found == {points[k].id for k in ("start", "inside", "end")}


async def test_fact_types_and_excluded_statuses(backend: Backend, rng: np.random.Generator) -> None:
    tenant = new_tenant()
    pref = point(unit(rng), fact_type="preference", status="active")
    done = point(unit(rng), fact_type="complaint", status="resolved")
    open_ = point(unit(rng), fact_type="complaint", status="pending")
    bare = point(unit(rng), fact_type="complaint", without=("status",))  # never excluded
    await backend.index.upsert(tenant, [pref, done, open_, bare])

    complaints = VectorFilter(fact_types=("complaint",))
    assert await search_all(backend.index, tenant, complaints) == {done.id, open_.id, bare.id}
    two_types = VectorFilter(fact_types=("complaint", "preference"), exclude_statuses=("pending",))
    assert await search_all(backend.index, tenant, two_types) == {pref.id, done.id, bare.id}
    unresolved = VectorFilter(exclude_statuses=("resolved", "archived"))
    assert await search_all(backend.index, tenant, unresolved) == {pref.id, open_.id, bare.id}


@pytest.mark.parametrize("excluded_nearest", [0, 3, 25, 40])
async def test_excluded_statuses_leave_the_exact_nearest_allowed(
    backend: Backend, rng: np.random.Generator, excluded_nearest: int
) -> None:
    """However many of the nearest points carry an excluded status (none, a few, more than the
    limit, all), a search returns the ``limit`` nearest of the others, in order, or all of
    them when there are fewer."""
    tenant = new_tenant()
    query = unit(rng)
    noise = [unit(rng) for _ in range(40)]
    # Points ever farther from the query: the first ``excluded_nearest`` are retracted.
    vectors = [list(np.asarray(query) * (1.0 - k / 45) + np.asarray(noise[k]) * (k / 45))
               for k in range(40)]  # fmt: skip
    points = [
        point(v, status="retracted" if k < excluded_nearest else ("open", None)[k % 2])
        for k, v in enumerate(vectors)
    ]
    await backend.index.upsert(tenant, points)
    allowed = sorted(
        (p for p in points if p.payload.get("status") != "retracted"),
        key=lambda p: cosine(query, list(p.vector)),
        reverse=True,
    )

    hits = await backend.index.search(
        tenant, query, VectorFilter(exclude_statuses=("retracted",)), limit=10
    )

    assert [h.id for h in hits] == [p.id for p in allowed[:10]]


async def test_filters_combine_with_and(backend: Backend, rng: np.random.Generator) -> None:
    tenant = new_tenant()
    later = (T0 + timedelta(days=1)).timestamp()
    match = point(unit(rng), anchors=["customer:7"], fact_type="order", occurred_at=later)
    wrong_anchor = point(unit(rng), anchors=["customer:8"], fact_type="order", occurred_at=later)
    wrong_type = point(unit(rng), anchors=["customer:7"], fact_type="note", occurred_at=later)
    too_early = point(unit(rng), anchors=["customer:7"], fact_type="order")
    stale = point(unit(rng), anchors=["customer:7"], fact_type="order", is_current=False)
    await backend.index.upsert(tenant, [match, wrong_anchor, wrong_type, too_early, stale])

    flt = VectorFilter(
        anchors=("customer:7",),
        fact_types=("order",),
        window=(T0 + timedelta(hours=1), T0 + timedelta(days=2)),
    )
    assert await search_all(backend.index, tenant, flt) == {match.id}


async def test_set_payload_supersedes_and_reopens_a_version(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    v1 = point(unit(rng), memory_key="mk-1", content_hash="abc")
    await backend.index.upsert(tenant, [v1])
    v2 = point(unit(rng), memory_key="mk-1", valid_from=T1.timestamp())
    await backend.index.upsert(tenant, [v2])

    await backend.index.set_payload(
        tenant, v1.id, {"is_current": False, "valid_to": T1.timestamp()}
    )

    assert await search_all(backend.index, tenant, VectorFilter()) == {v2.id}
    assert await search_all(backend.index, tenant, VectorFilter(as_of=T0)) == {v1.id}
    later = VectorFilter(as_of=T1 + timedelta(days=1))
    assert await search_all(backend.index, tenant, later) == {v2.id}
    [hit] = await backend.index.search(tenant, list(v1.vector), VectorFilter(as_of=T0), limit=1)
    assert hit.payload["content_hash"] == "abc"  # merged, not overwritten
    assert hit.payload["valid_to"] == T1.timestamp()
    assert hit.payload["is_current"] is False

    # A retraction undone: valid_to set to None is open-ended again.
    await backend.index.set_payload(tenant, v1.id, {"valid_to": None, "is_current": True})
    assert await search_all(backend.index, tenant, later) == {v1.id, v2.id}
    assert await search_all(backend.index, tenant, VectorFilter()) == {v1.id, v2.id}
    [hit] = await backend.index.search(tenant, list(v1.vector), later, limit=1)
    assert hit.id == v1.id
    assert hit.payload.get("valid_to") is None
    assert hit.payload["memory_key"] == "mk-1"


async def test_set_payloads_updates_many_and_reports_the_missing(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    points = [point(unit(rng), memory_key=f"mk-{i}", content_hash=str(i)) for i in range(5)]
    await backend.index.upsert(tenant, points)
    ghost = str(uuid.uuid4())
    missing = await backend.index.set_payloads(
        tenant,
        [(p.id, {"is_current": False, "valid_to": T1.timestamp()}) for p in points[:3]]
        + [(ghost, {"is_current": False})],
    )
    assert missing == {ghost}
    assert await search_all(backend.index, tenant, VectorFilter()) == {p.id for p in points[3:]}
    hits = await backend.index.search(tenant, list(points[0].vector), VectorFilter(as_of=T0), 5)
    closed = {h.id: h.payload for h in hits if h.id in {p.id for p in points[:3]}}
    assert {payload["content_hash"] for payload in closed.values()} == {"0", "1", "2"}
    assert await backend.index.count(tenant) == 5, "nothing was written for the missing id"
    assert await backend.index.set_payloads(new_tenant(), [(ghost, {"x": 1})]) == {ghost}


async def test_set_payloads_applies_a_points_updates_in_their_order(
    backend: Backend, rng: np.random.Generator
) -> None:
    """Several updates of one point in one call read as if applied one after the other, and
    points given the same payload each get it (Qdrant Edge writes them as one operation)."""
    tenant = new_tenant()
    points = [point(unit(rng), memory_key=f"mk-{i}", content_hash=str(i)) for i in range(6)]
    await backend.index.upsert(tenant, points)
    first, second, *rest = points
    missing = await backend.index.set_payloads(
        tenant,
        [
            (first.id, {"effective_status": "open", "fact_type": "complaint"}),
            *((p.id, {"effective_status": "escalated"}) for p in rest),
            (first.id, {"effective_status": "resolved"}),  # the later value wins
            (second.id, {"fact_type": "note"}),
            (second.id, {"effective_status": "open", "fact_type": None}),  # None: key removed
        ],
    )
    assert missing == set()
    hits = await backend.index.search(tenant, list(first.vector), VectorFilter(), 6)
    payloads = {h.id: h.payload for h in hits}
    assert len(payloads) == 6
    assert payloads[first.id]["effective_status"] == "resolved"
    assert payloads[first.id]["fact_type"] == "complaint"
    assert payloads[second.id]["effective_status"] == "open"
    assert payloads[second.id].get("fact_type") is None
    for p in rest:
        assert payloads[p.id]["effective_status"] == "escalated"
        assert payloads[p.id]["content_hash"] == p.payload["content_hash"]  # merged, not replaced


async def test_writes_left_to_one_flush_read_as_any_other(
    backend: Backend, rng: np.random.Generator
) -> None:
    # The indexer's pass: payloads and points written with durable=False, then one flush.
    tenant = new_tenant()
    first = [point(unit(rng), memory_key=f"mk-{i}") for i in range(4)]
    await backend.index.upsert(tenant, first, durable=False)
    missing = await backend.index.set_payloads(
        tenant, [(first[0].id, {"is_current": False})], durable=False
    )
    assert missing == set()
    more = [point(unit(rng)) for _ in range(3)]
    await backend.index.upsert(tenant, more, durable=False)
    await backend.index.flush(tenant)
    assert await backend.index.count(tenant) == 7
    assert await search_all(backend.index, tenant, VectorFilter()) == {
        p.id for p in [*first[1:], *more]
    }
    unknown = new_tenant()
    await backend.index.flush(unknown)  # a tenant without a store: nothing, and nothing made
    assert await backend.storage_of(unknown) is None


async def test_set_payload_of_a_missing_point_fails(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    with pytest.raises(AdapterError, match="Acme"):
        await backend.index.set_payload(tenant, str(uuid.uuid4()), {"is_current": False})
    assert await backend.storage_of(tenant) is None  # nothing created for an unknown tenant

    await backend.index.upsert(tenant, [point(unit(rng))])
    with pytest.raises(AdapterError, match="Acme"):
        await backend.index.set_payload(tenant, str(uuid.uuid4()), {"is_current": False})


async def test_invalid_points_are_refused_with_the_tenant_named(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    with pytest.raises(AdapterError, match="Acme"):
        await backend.index.upsert(tenant, [VectorPoint(str(uuid.uuid4()), [1.0] * (DIM + 1), {})])
    with pytest.raises(AdapterError, match="not a uuid"):
        await backend.index.upsert(tenant, [VectorPoint("version-1", unit(rng), {})])
    with pytest.raises(AdapterError, match="dimensions"):
        await backend.index.search(tenant, [1.0, 0.0], EVERYTHING, limit=3)
    with pytest.raises(ValueError, match="naive"):
        await backend.index.search(tenant, unit(rng), VectorFilter(as_of=datetime(2025, 1, 1)), 3)
    assert await backend.index.count(tenant) == 0


async def test_tenants_are_isolated(backend: Backend, rng: np.random.Generator) -> None:
    tenant_a, tenant_b = new_tenant(), new_tenant()
    shared_vector = unit(rng)
    a_points = [point(shared_vector) for _ in range(5)]
    b_points = [point(unit(rng)) for _ in range(3)]
    await backend.index.upsert(tenant_a, a_points)
    await backend.index.upsert(tenant_b, b_points)

    hits_b = await backend.index.search(tenant_b, shared_vector, EVERYTHING, limit=100)
    assert ids(hits_b) == {p.id for p in b_points}
    assert await backend.index.count(tenant_a) == 5
    assert await backend.index.count(tenant_b) == 3
    assert await backend.index.point_ids(tenant_a) == {p.id for p in a_points}
    with pytest.raises(AdapterError):  # A's point is not addressable through B
        await backend.index.set_payload(tenant_b, a_points[0].id, {"is_current": False})

    place_a, place_b = await backend.storage_of(tenant_a), await backend.storage_of(tenant_b)
    assert place_a is not None
    assert place_b is not None
    assert place_a != place_b  # physically separate directory / collection

    await backend.index.drop_tenant(tenant_a)
    assert await backend.index.count(tenant_b) == 3


async def test_unknown_tenant_reads_empty_and_creates_nothing(backend: Backend) -> None:
    tenant = new_tenant()
    assert await backend.index.count(tenant) == 0
    assert await backend.index.point_ids(tenant) == set()
    assert await backend.index.search(tenant, [1.0] * DIM, VectorFilter(), limit=10) == []
    await backend.index.drop_tenant(tenant)
    assert await backend.storage_of(tenant) is None


async def test_count_and_point_ids_cover_every_point(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    points = [point(unit(rng), is_current=i % 2 == 0) for i in range(1500)]  # > one scroll page
    for start in range(0, len(points), 250):
        await backend.index.upsert(tenant, points[start : start + 250])

    assert await backend.index.count(tenant) == 1500
    assert await backend.index.point_ids(tenant) == {p.id for p in points}


async def test_drop_tenant_removes_its_storage(backend: Backend, rng: np.random.Generator) -> None:
    tenant = new_tenant()
    await backend.index.upsert(tenant, [point(unit(rng)) for _ in range(4)])
    assert await backend.storage_of(tenant) is not None

    await backend.index.drop_tenant(tenant)

    assert await backend.storage_of(tenant) is None
    assert await backend.index.count(tenant) == 0
    assert await search_all(backend.index, tenant, EVERYTHING) == set()
    again = point(unit(rng))
    await backend.index.upsert(tenant, [again])  # the tenant can start over
    assert await backend.index.point_ids(tenant) == {again.id}


async def test_delete_and_compact_erase_points_and_keep_the_rest(
    backend: Backend, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    other = new_tenant()
    erased = [point(unit(rng), anchors=["customer:ERASE-ME"]) for _ in range(5)]
    kept = [point(unit(rng), anchors=["customer:keep"]) for _ in range(30)]
    await backend.index.upsert(tenant, erased + kept)
    await backend.index.upsert(other, [point(unit(rng))])

    assert await backend.index.delete(tenant, [p.id for p in erased] + [str(uuid.uuid4())]) == 5
    await backend.index.compact(tenant)

    assert await backend.index.point_ids(tenant) == {p.id for p in kept}
    found = await backend.index.search(tenant, list(erased[0].vector), EVERYTHING, limit=100)
    assert ids(found) == {p.id for p in kept}
    by_id = {p.id: p for p in kept}
    for hit in found:  # payloads and vectors survive the rewrite intact
        assert dict(hit.payload) == dict(by_id[hit.id].payload)
    [best] = await backend.index.search(tenant, list(kept[3].vector), EVERYTHING, limit=1)
    assert best.id == kept[3].id and best.score == pytest.approx(1.0, abs=1e-4)  # 16-bit vectors
    anchored = VectorFilter(current_only=False, anchors=("customer:keep",))
    assert await search_all(backend.index, tenant, anchored) == {p.id for p in kept}
    # Deleting again, or in an unknown tenant, is a no-op; the other tenant is untouched.
    assert await backend.index.delete(tenant, [p.id for p in erased]) == 0
    assert await backend.index.delete(new_tenant(), [p.id for p in erased]) == 0
    await backend.index.compact(new_tenant())
    assert await backend.index.count(other) == 1
    await backend.index.upsert(tenant, [point(unit(rng))])  # writable after the rewrite
    assert await backend.index.count(tenant) == 31


async def test_concurrent_writers_and_readers(backend: Backend, rng: np.random.Generator) -> None:
    tenants = [new_tenant() for _ in range(3)]
    batches = {t: [[point(unit(rng)) for _ in range(10)] for _ in range(20)] for t in tenants}

    async def write(tenant: str, batch: list[VectorPoint]) -> None:
        await backend.index.upsert(tenant, batch)
        await backend.index.set_payload(tenant, batch[0].id, {"is_current": False})

    async def read(tenant: str) -> None:
        await backend.index.search(tenant, unit(rng), VectorFilter(), limit=10)
        await backend.index.count(tenant)

    # Every tenant's shard / collection is first opened by many tasks at once.
    writers = [write(t, b) for t in tenants for b in batches[t]]
    readers = [read(t) for t in tenants for _ in range(20)]
    await asyncio.gather(*writers, *readers)

    for tenant in tenants:
        written = {p.id for batch in batches[tenant] for p in batch}
        assert await backend.index.point_ids(tenant) == written
        assert await backend.index.count(tenant) == 200
        current = await backend.index.search(tenant, unit(rng), VectorFilter(), limit=1000)
        assert len(current) == 180


# -- server only: connection failures are transient -----------------------------------------


async def test_server_unreachable_is_a_transient_error(rng: np.random.Generator) -> None:
    tenant = new_tenant()
    # Port 9 (discard) on localhost: nothing listens, the connection is refused at once.
    client = AsyncQdrantClient(url="http://127.0.0.1:9", timeout=2, check_compatibility=False)
    index = QdrantServerIndex(client, DIM)
    try:
        with pytest.raises(TransientError, match="Acme"):
            await index.upsert(tenant, [point(unit(rng))])
        with pytest.raises(TransientError, match="Acme"):
            await index.count(tenant)
    finally:
        await index.close()


# -- edge only: persistence --------------------------------------------------------------------


async def test_edge_data_survives_close_and_reopen(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    root = tmp_path / "vectors"
    first = QdrantEdgeIndex(root, DIM)
    points = [point(unit(rng)) for _ in range(20)]
    await first.upsert(tenant, points)
    await first.set_payload(tenant, points[0].id, {"is_current": False, "valid_to": T1.timestamp()})
    await first.close()

    second = QdrantEdgeIndex(root, DIM)
    try:
        assert await second.point_ids(tenant) == {p.id for p in points}
        current = await search_all(second, tenant, VectorFilter())
        assert current == {p.id for p in points[1:]}
        [hit] = await second.search(tenant, list(points[0].vector), EVERYTHING, limit=1)
        assert hit.payload["valid_to"] == T1.timestamp()
        await second.upsert(tenant, [point(unit(rng))])
        assert await second.count(tenant) == 21
    finally:
        await second.close()

    with pytest.raises(AdapterError, match="Acme"):  # the stored dimension is checked on open
        await QdrantEdgeIndex(root, DIM * 2).count(tenant)


def stored_datatype(shard: Path) -> str:
    return str(json.loads((shard / "edge_config.json").read_text())["vectors"][""]["datatype"])


async def test_edge_new_shards_store_16_bits_a_dimension_and_old_ones_keep_float32(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    # A shard an earlier version created (float32) is opened with its own datatype (the engine
    # refuses another), read, written, compacted; a new shard stores TurboQuant 16-bit.
    root = tmp_path / "vectors"
    index = QdrantEdgeIndex(root, DIM)
    old, new = new_tenant(), new_tenant()
    old_dir = index.shard_dir(old)
    old_dir.mkdir(parents=True)
    vectors = qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)
    qe.EdgeShard.create(str(old_dir), qe.EdgeConfig(vectors=vectors)).close()
    points = [point(unit(rng)) for _ in range(12)]
    try:
        await index.upsert(old, points[:6])
        await index.upsert(new, points[6:])
        for tenant, mine in ((old, points[:6]), (new, points[6:])):
            hits = await index.search(tenant, list(mine[0].vector), EVERYTHING, limit=3)
            assert hits[0].id == mine[0].id and hits[0].score == pytest.approx(1.0, abs=1e-4)
        await index.delete(old, [points[0].id])
        await index.compact(old)
        assert await index.point_ids(old) == {p.id for p in points[1:6]}
    finally:
        await index.close()
    assert stored_datatype(old_dir) == "float32"
    assert stored_datatype(index.shard_dir(new)) == "turbo16"


async def test_edge_keeps_at_most_max_open_shards_and_reopens_the_evicted(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    # Every open shard holds memory maps, bounded per process (vm.max_map_count): a worker
    # serving many tenants closes the least recently used idle shard instead of failing opens.
    root = tmp_path / "vectors"
    index = QdrantEdgeIndex(root, DIM, max_open=2)
    tenants = [new_tenant() for _ in range(5)]
    written = {t: [point(unit(rng)) for _ in range(6)] for t in tenants}
    try:
        await asyncio.gather(*(index.upsert(t, written[t]) for t in tenants))
        assert index.open_shards <= 2
        for _ in range(2):  # each pass evicts and reopens every tenant
            for tenant in tenants:
                assert await index.point_ids(tenant) == {p.id for p in written[tenant]}
                assert index.open_shards <= 2
        counts = await asyncio.gather(*(index.count(t) for t in tenants * 3))
        assert counts == [6] * 15
        assert index.open_shards <= 2
    finally:
        await index.close()
    with pytest.raises(ValueError, match="max_open"):
        QdrantEdgeIndex(root, DIM, max_open=0)


def stored_indexes(shard: Path) -> set[str]:
    """The payload indexes a closed shard holds, read by the engine itself."""
    vectors = qe.EdgeVectorParams(
        size=DIM, distance=qe.Distance.Cosine, datatype=NEW_SHARD_DATATYPE
    )
    engine = qe.EdgeShard.load(str(shard), qe.EdgeConfig(vectors=vectors))
    try:
        return set(engine.info().payload_schema)
    finally:
        engine.close()


async def test_edge_a_shard_gets_payload_indexes_once_it_holds_index_from_points(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    # A small tenant's shard has none (an eighth of the memory maps, a faster reopen); one that
    # grows past the threshold gets them all, and keeps them after a reopen.
    root = tmp_path / "vectors"
    index = QdrantEdgeIndex(root, DIM, index_from=5)
    small, large = new_tenant(), new_tenant()
    small_points = [point(unit(rng)) for _ in range(4)]
    large_points = [point(unit(rng), anchors=["customer:c1"]) for _ in range(6)]
    try:
        await index.upsert(small, small_points)
        await index.upsert(large, large_points[:3])
        assert index.open_maps == 2 * shard_maps(0)
        await index.upsert(large, large_points[3:])
        assert index.open_maps == shard_maps(0) + shard_maps(len(PAYLOAD_INDEXES))
        hits = await index.search(large, list(large_points[0].vector), VectorFilter(), 10)
        assert {h.id for h in hits} == {p.id for p in large_points}
    finally:
        await index.close()
    assert stored_indexes(index.shard_dir(small)) == set()
    assert stored_indexes(index.shard_dir(large)) == {name for name, _ in PAYLOAD_INDEXES}
    again = QdrantEdgeIndex(root, DIM, index_from=5)
    try:
        for tenant, points in ((small, small_points), (large, large_points)):
            assert await again.point_ids(tenant) == {p.id for p in points}
        assert again.open_maps == shard_maps(0) + shard_maps(len(PAYLOAD_INDEXES))
    finally:
        await again.close()


async def test_edge_an_open_shard_maps_no_more_than_the_budget_counts_it_for(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    # The kernel's own count (/proc/self/maps), shards created and written by this process (the
    # most maps measured), small and indexed: the budget must not count fewer than they hold.
    index = QdrantEdgeIndex(tmp_path / "vectors", DIM, index_from=6)
    try:
        await index.upsert(new_tenant(), [point(unit(rng))])  # the worker thread exists now
        counted, before = index.open_maps, maps_in_use()
        for size in [3] * 10 + [8] * 3:
            await index.upsert(new_tenant(), [point(unit(rng)) for _ in range(size)])
        indexed = shard_maps(len(PAYLOAD_INDEXES))
        assert index.open_maps == counted + 10 * shard_maps(0) + 3 * indexed
        assert maps_in_use() - before <= index.open_maps - counted
    finally:
        await index.close()


async def test_edge_keeps_the_maps_of_its_open_shards_within_its_room(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    # Room for two indexed shards' maps (or twenty small ones): large tenants evict more.
    room = 2 * shard_maps(len(PAYLOAD_INDEXES))
    index = QdrantEdgeIndex(tmp_path / "vectors", DIM, index_from=4, map_room=room)
    tenants = [new_tenant() for _ in range(8)]
    sizes = [2, 6, 2, 6, 2, 2, 6, 2]  # three grow past index_from
    written = {t: [point(unit(rng)) for _ in range(n)] for t, n in zip(tenants, sizes, strict=True)}
    try:
        for tenant in tenants:
            await index.upsert(tenant, written[tenant])
            assert index.open_maps <= room
        for _ in range(2):
            for tenant in tenants:
                assert await index.point_ids(tenant) == {p.id for p in written[tenant]}
                assert index.open_maps <= room
        counts = await asyncio.gather(*(index.count(t) for t in tenants * 2))
        assert counts == sizes * 2
        assert index.open_maps <= room
    finally:
        await index.close()


def raw_count(root: Path, needle: bytes) -> int:
    """How many times ``needle`` occurs in the bytes of every file under ``root``."""
    return sum(f.read_bytes().count(needle) for f in root.rglob("*") if f.is_file())


@pytest.mark.parametrize("index_from", [0, 10**9], ids=["indexed", "small"])
async def test_edge_compaction_leaves_no_byte_of_a_deleted_point(
    tmp_path: Path, rng: np.random.Generator, index_from: int
) -> None:
    tenant = new_tenant()
    root = tmp_path / "vectors"
    index = QdrantEdgeIndex(root, DIM, index_from=index_from)
    canary = f"canary-{uuid.uuid4()}"
    erased = [point(unit(rng), anchors=[f"customer:{canary}"]) for _ in range(3)]
    kept = [point(unit(rng)) for _ in range(40)]
    await index.upsert(tenant, erased + kept)
    await index.optimize(tenant)
    assert raw_count(root, canary.encode()) > 0

    await index.delete(tenant, [p.id for p in erased])
    # Measured: a delete (and an optimize) leaves the payload in the segments and the WAL.
    assert raw_count(root, canary.encode()) > 0
    await index.compact(tenant)
    assert raw_count(root, canary.encode()) == 0
    assert sorted(p.name for p in root.iterdir()) == [index.shard_dir(tenant).name]
    await index.close()

    reopened = QdrantEdgeIndex(root, DIM)
    try:
        assert await reopened.point_ids(tenant) == {p.id for p in kept}
    finally:
        await reopened.close()


async def test_edge_compaction_interrupted_before_the_swap_is_recovered(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    root = tmp_path / "vectors"
    index = QdrantEdgeIndex(root, DIM)
    points = [point(unit(rng)) for _ in range(10)]
    await index.upsert(tenant, points)
    await index.close()
    shard = index.shard_dir(tenant)
    # A crash between the two renames: the old shard moved away, a half-built copy beside it.
    shard.rename(shard.with_name(shard.name + ".old"))
    (shard.with_name(shard.name + ".rewrite")).mkdir()

    again = QdrantEdgeIndex(root, DIM)
    try:
        await again.compact(tenant)
        assert await again.point_ids(tenant) == {p.id for p in points}
        assert sorted(p.name for p in root.iterdir()) == [shard.name]
    finally:
        await again.close()


_HOLDER = """
import asyncio, sys
from pathlib import Path
from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex

async def main() -> None:
    index = QdrantEdgeIndex(Path(sys.argv[1]), int(sys.argv[2]))
    print(await index.count(sys.argv[3]), flush=True)
    sys.stdin.readline()
    print(await index.count(sys.argv[3]), flush=True)  # still healthy after the refusal
    await index.close()

asyncio.run(main())
"""


async def test_edge_never_loads_a_shard_another_process_holds(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    tenant = new_tenant()
    root = tmp_path / "vectors"
    first = QdrantEdgeIndex(root, DIM)
    await first.upsert(tenant, [point(unit(rng)) for _ in range(5)])
    await first.close()
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, str(root), str(DIM), tenant,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert (await asyncio.wait_for(holder.stdout.readline(), 60)).strip() == b"5"
        second = QdrantEdgeIndex(root, DIM)
        with pytest.raises(AdapterError, match="open in another process"):
            await second.delete(tenant, [str(uuid.uuid4())])
        with pytest.raises(AdapterError, match="open in another process"):
            await second.compact(tenant)
        holder.stdin.write(b"\n")
        await holder.stdin.drain()
        assert (await asyncio.wait_for(holder.stdout.readline(), 60)).strip() == b"5"
        assert await asyncio.wait_for(holder.wait(), 60) == 0
    finally:
        if holder.returncode is None:
            holder.kill()
    assert await second.count(tenant) == 5  # free again: opens
    await second.close()


_KILLED_WRITER = """
import asyncio, os, signal, sys, uuid
from pathlib import Path
from memstream.services.adapters.qdrant_edge import QdrantEdgeIndex
from memstream.services.ports import VectorPoint

async def main() -> None:
    root, dim, mode, tenant = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    index = QdrantEdgeIndex(root, dim, flush_writes=mode != "wal-only")
    ids = [str(uuid.uuid4()) for _ in range(64)]
    vec = [1.0] + [0.0] * (dim - 1)
    points = [VectorPoint(i, vec, {"is_current": True}) for i in ids]
    if mode == "deferred":  # the indexer's writes, killed before its one flush
        await index.upsert(tenant, points, durable=False)
        await index.set_payloads(tenant, [(ids[0], {"is_current": False})], durable=False)
    else:
        await index.upsert(tenant, points)
        await index.set_payload(tenant, ids[0], {"is_current": False})
    print(" ".join(ids), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close(), no flush(), no atexit

asyncio.run(main())
"""


@pytest.mark.parametrize("mode", ["flush", "wal-only", "deferred"])
async def test_edge_writes_survive_a_killed_process(tmp_path: Path, mode: str) -> None:
    tenant = new_tenant()
    root = tmp_path / "vectors"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _KILLED_WRITER,
        str(root),
        str(DIM),
        mode,
        tenant,
        cwd=REPO_ROOT,
        env=os.environ | {"PYTHONPATH": str(REPO_ROOT)},
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    written = out.decode().split()
    assert len(written) == 64

    index = QdrantEdgeIndex(root, DIM)
    try:
        assert await index.point_ids(tenant) == set(written)
        assert await search_all(index, tenant, VectorFilter()) == set(written[1:])
    finally:
        await index.close()
