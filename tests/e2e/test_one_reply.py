"""Exactly one reply per accepted request, on the real worker over Tansu.

Every decodable request with a reply address gets one ``ok``, ``skipped`` or ``error`` reply and
leaves one ``query_log`` row, whatever it holds: NUL characters (which Postgres cannot store),
oversized text, unknown tenants, bad limits and times, anchors of every shape. The invariant is
checked over 2,000 seeded random requests; the defects that broke it first are tests of their own.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstream.streams.client import MemoryClient
from tests.e2e.ingest_kit import IngestSetup, encoded, event, make_setup
from tests.e2e.processes import Process, guard

REQUESTS = 2_000
CONCURRENCY = 48
NUL = "\x00"


@pytest.fixture(scope="module")
def stack(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[IngestSetup, Process, str]]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("one-reply"))
    worker = setup.worker()
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    events = [
        event(tenant, f"order:C-{n % 5}", n, content=f"Customer C-{n % 5} ordered item {n}")
        for n in range(20)
    ]
    setup.produce(encoded(e) for e in events)
    status = setup.wait([(e["tenant_id"], e["event_id"]) for e in events], timeout=120)
    assert not status.pending and not status.dead, status
    yield setup, worker, tenant
    assert worker.terminate() == 0, worker.output[-3000:]


def record(tenant: str, query: str, **extra: Any) -> dict[str, Any]:
    return {
        "request_id": uuid.uuid4().hex,
        "tenant_id": tenant,
        "query": query,
        "user_id": None,
        "anchors": [],
        "context": {"active_task": None, "active_entities": [], "time_window": None},
        "as_of": None,
        "known_at": None,
        "limit": 5,
        "force": False,
        **extra,
    }


def send_all(
    setup: IngestSetup, records: list[dict[str, Any]], tenant: str
) -> tuple[list[dict[str, Any]], int]:
    """Each record's reply (in order) and the count of replies that came more than once."""
    return asyncio.run(_send_all(setup, records, setup.keyring.key(tenant)))


async def _send_all(
    setup: IngestSetup, records: list[dict[str, Any]], key: str
) -> tuple[list[dict[str, Any]], int]:
    gate = asyncio.Semaphore(CONCURRENCY)
    async with MemoryClient(
        setup.broker, setup.topics, timeout=guard(60), credential=key
    ) as client:

        async def one(r: dict[str, Any]) -> dict[str, Any]:
            async with gate:
                return await client.send(r)

        replies = list(await asyncio.gather(*(one(r) for r in records)))
        await asyncio.sleep(1.0)  # a second reply to any request would arrive meanwhile
        return replies, client.late_replies


def logged(setup: IngestSetup, request_ids: list[str]) -> dict[str, int]:
    rows = setup.sql(
        "SELECT request_id, count(*) FROM query_log WHERE request_id = ANY(%s) GROUP BY 1",
        request_ids,
    )
    return {str(r[0]): int(r[1]) for r in rows}


def test_nul_in_the_tenant_gets_an_error_reply_and_a_log_row(stack: Any) -> None:
    setup, _, tenant = stack
    records = [
        record(tenant, f"what did C-1{NUL} order?", force=True),
        record(tenant, "what did C-1 order?", user_id=f"C-1{NUL}", force=True),
        record(tenant, "what?", anchors=[{"type": "customer", "id": f"C{NUL}1"}], force=True),
    ]
    replies, late = send_all(setup, records, tenant)
    assert late == 0
    (foreign,), _ = send_all(setup, [record(f"{tenant}{NUL}x", "what?", force=True)], tenant)
    assert foreign["status"] == "error" and foreign["error"]["code"] == "forbidden", foreign
    for reply in replies:
        assert reply["status"] == "error", reply
        assert reply["error"]["code"] == "bad_field"
        assert "NUL" in reply["error"]["message"]
    counts = logged(setup, [r["request_id"] for r in records])
    assert counts == {r["request_id"]: 1 for r in records}


def test_an_oversized_request_is_logged_bounded_with_its_size(stack: Any) -> None:
    setup, _, tenant = stack
    big = record(tenant, "which orders? " * 1_000, force=True)  # 14,000 characters
    (reply,), _ = send_all(setup, [big], tenant)
    assert reply["status"] == "error" and reply["error"]["code"] == "bad_field", reply
    ((stored,),) = setup.sql(
        "SELECT request FROM query_log WHERE request_id = %s", big["request_id"]
    )
    assert len(stored["query"]) == 4096
    assert stored["_truncated"] == {"query": 14_000}


def test_the_reply_carries_the_time_spent_in_the_queue(stack: Any) -> None:
    setup, _, tenant = stack
    (reply,), _ = send_all(setup, [record(tenant, "what did C-2 order?")], tenant)
    assert reply["status"] in ("ok", "skipped"), reply
    assert 0 <= reply["latency_ms"]["queue"] < 10_000, reply["latency_ms"]


def fuzz_records(rng: random.Random, tenant: str, n: int) -> list[dict[str, Any]]:
    """``n`` requests; each field is a good value mostly and one of the bad ones sometimes."""
    now = datetime.now(UTC)

    def pick(good: list[Any], bad: list[Any]) -> Any:
        return rng.choice(bad) if rng.random() < 0.08 else rng.choice(good)

    bad_text = ["", " ", f"x{NUL}y", "t" * 300]
    anchor = [{"type": "customer", "id": "C-2"}]
    bad_anchors = [
        [{"type": "", "id": "x"}],
        [{"type": "customer", "id": f"C{NUL}"}],
        [{"type": "customer", "id": str(i)} for i in range(40)],
    ]
    out = []
    for _ in range(n):
        start = now - timedelta(days=rng.choice([1, 30, 400]))
        out.append(
            record(
                pick([tenant] * 4 + ["nobody", "租户"], bad_text),
                pick(
                    [
                        "what did C-1 order last week?",
                        "我上周的订单是什么?",
                        "hi",
                        "thanks!",
                        "emoji 🙂 what about my refund",
                        "'; DROP TABLE query_log; --",
                        "\\u0000 literally, and what did I order",
                    ],
                    [*bad_text, "what is " * 700, "a" * 4096],
                ),
                user_id=pick([None, None, "C-1", "C-3"], bad_text),
                anchors=pick([[], anchor], bad_anchors),
                context={
                    "active_task": pick([None, "refund"], [f"t{NUL}", "z" * 5000]),
                    "active_entities": pick([[], anchor], bad_anchors),
                    "time_window": pick(
                        [None, {"from": start, "to": now}], [{"from": now, "to": start}]
                    ),
                },
                as_of=pick([None, now - timedelta(days=2)], [now + timedelta(days=400)]),
                known_at=pick([None, now], [datetime(1970, 1, 1, tzinfo=UTC)]),
                limit=pick([1, 5, 10, 50], [0, -1, 51, 2**31 - 1]),
                force=rng.random() < 0.5,
            )
        )
    return out


def test_every_request_gets_exactly_one_reply_and_one_log_row(stack: Any) -> None:
    setup, worker, tenant = stack
    records = fuzz_records(random.Random(16), tenant, REQUESTS)
    replies, late = send_all(setup, records, tenant)
    assert late == 0, f"{late} requests were answered more than once"
    statuses: dict[str, int] = {}
    for sent, reply in zip(records, replies, strict=True):
        assert reply["request_id"] == sent["request_id"]
        assert reply["status"] in ("ok", "skipped", "error"), reply
        statuses[reply["status"]] = statuses.get(reply["status"], 0) + 1
        if reply["status"] == "error":
            assert reply["error"]["code"] != "internal", (json.dumps(sent, default=str), reply)
    print(f"outcomes of {REQUESTS} requests: {statuses}")
    assert len(statuses) == 3, statuses  # the generator reaches every outcome
    # The guard refuses a request for another tenant before opening it: one error reply, and
    # no query_log row (it was never accepted). Every accepted request has exactly one row.
    accepted = [
        r["request_id"]
        for r, reply in zip(records, replies, strict=True)
        if (reply.get("error") or {}).get("code") != "forbidden"
    ]
    counts = logged(setup, [r["request_id"] for r in records])
    missing = [i for i in accepted if counts.get(i) != 1]
    assert not missing, f"{len(missing)} accepted requests without exactly one query_log row"
    assert len(accepted) > REQUESTS // 2
    assert worker.proc.poll() is None, worker.output[-3000:]
