"""The HTTP gateway as a running process, through httpx: every endpoint, refusals, load."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx

from tests.doors.conftest import NOW, Doors, memory_event
from tests.e2e.processes import guard


def test_retrieve_answers_with_the_typed_reply_and_the_request_id(doors: Doors) -> None:
    response = httpx.post(
        f"{doors.url}/v1/retrieve",
        json={
            "query": "what does X1 charge over?",
            "anchors": [{"type": "product", "id": "X1"}],
            "force": True,
            "limit": 3,
        },
        headers={**doors.headers(), "X-Request-Id": "req-x1-charge"},
        timeout=guard(30),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert response.headers["X-Request-Id"] == body["request_id"] == "req-x1-charge"
    assert body["status"] == "ok"
    top = body["results"][0]
    assert top["memory_key"] == "spec:X1" and top["version"] == 2
    assert "USB-C" in top["rendered"] and 0 < top["scores"]["final"] <= 1

    audit = httpx.get(f"{doors.url}/v1/audit/req-x1-charge", headers=doors.headers(), timeout=10)
    assert audit.status_code == 200, audit.text
    answer = audit.json()["answers"][0]
    assert answer["tenant_id"] == doors.tenant
    assert answer["reply"]["results"][0]["version_id"] == top["version_id"]
    assert audit.headers["X-Request-Id"]


def test_history_as_of_and_known_at(doors: Doors) -> None:
    url = f"{doors.url}/v1/memories/spec:X1/history"
    full = httpx.get(url, headers=doors.headers(), timeout=10)
    assert full.status_code == 200, full.text
    versions = full.json()["versions"]
    assert [(v["version"], v["is_current"]) for v in versions] == [(1, False), (2, True)]
    then = (NOW - timedelta(days=100)).isoformat()
    old = httpx.get(url, params={"as_of": then}, headers=doors.headers(), timeout=10)
    assert [v["version"] for v in old.json()["versions"]] == [1]
    before = (NOW - timedelta(days=3650)).isoformat()
    none = httpx.get(url, params={"known_at": before}, headers=doors.headers(), timeout=10)
    assert none.status_code == 404 and none.json()["error"]["code"] == "not_found"
    admin = httpx.get(
        url, params={"tenant_id": doors.tenant}, headers=doors.headers("admin"), timeout=10
    )
    assert len(admin.json()["versions"]) == 2


def test_events_one_or_many_and_wait(doors: Doors) -> None:
    one = memory_event(
        doors.tenant,
        "note:C-99:gw1",
        "Customer C-99 prefers email.",
        ago=timedelta(hours=2),
        entity="customer:C-99",
    )
    sent = httpx.post(
        f"{doors.url}/v1/events", json=one, headers=doors.headers("producer"), timeout=guard(30)
    )
    assert sent.status_code == 202, sent.text
    assert sent.json()["event_ids"] == [one["event_id"]] and sent.json()["request_id"]
    assert sent.json()["acknowledged"] == "broker"  # published, not yet recorded

    many = [
        memory_event(
            doors.tenant,
            f"note:C-99:gw{n}",
            f"Customer C-99 note {n}: call after 5pm.",
            ago=timedelta(hours=1),
            entity="customer:C-99",
        )
        for n in (2, 3)
    ]
    retract_unknown = memory_event(
        doors.tenant, f"note:none:{uuid.uuid4().hex[:6]}", "", ago=timedelta(hours=1), op="RETRACT"
    )
    waited = httpx.post(
        f"{doors.url}/v1/events",
        params={"wait": "true", "timeout": 90},
        json=[*many, retract_unknown],
        headers=doors.headers("producer"),
        timeout=guard(120),
    )
    assert waited.status_code == 200, waited.text
    body = waited.json()
    assert sorted(body["ingested"]) == sorted(e["event_id"] for e in many)
    assert body["dead_lettered"] == {retract_unknown["event_id"]: "retract_unknown_memory"}
    assert body["pending"] == [] and body["acknowledged"] == "ledger"
    history = httpx.get(
        f"{doors.url}/v1/memories/note:C-99:gw2/history", headers=doors.headers(), timeout=10
    )
    assert history.json()["versions"][0]["content"].startswith("Customer C-99 note 2")


def test_an_event_needs_no_tenant_and_no_event_id(doors: Doors) -> None:
    """The credential says the tenant; an absent event id is made, returned, and recorded."""
    bare = memory_event(
        doors.tenant,
        f"note:C-98:{uuid.uuid4().hex[:6]}",
        "Customer C-98 asked for paper invoices.",
        ago=timedelta(hours=1),
        entity="customer:C-98",
    )
    del bare["tenant_id"], bare["event_id"]
    waited = httpx.post(
        f"{doors.url}/v1/events",
        params={"wait": "true", "timeout": 90},
        json=[bare, {**bare, "tenant_id": doors.tenant, "memory_key": bare["memory_key"] + "b"}],
        headers=doors.headers("producer"),
        timeout=guard(120),
    )
    assert waited.status_code == 200, waited.text
    body = waited.json()
    made = body["event_ids"]
    assert len(made) == 2 and len(set(made)) == 2 and all(made)
    assert sorted(body["ingested"]) == sorted(made) and body["acknowledged"] == "ledger"
    recorded = doors.setup.sql(
        "SELECT event_id FROM event_ledger WHERE tenant_id = %s AND event_id = ANY(%s)",
        doors.tenant,
        made,
    )
    assert sorted(r[0] for r in recorded) == sorted(made)

    foreign = httpx.post(
        f"{doors.url}/v1/events",
        json={**bare, "tenant_id": doors.other_tenant},
        headers=doors.headers("producer"),
        timeout=guard(30),
    )
    assert foreign.status_code == 403, foreign.text
    message = foreign.json()["error"]["message"]
    assert doors.other_tenant in message and f"tenant {doors.tenant!r}" in message
    unbound = httpx.post(
        f"{doors.url}/v1/events",
        json={**bare, "source_system": "catalogue"},
        headers=doors.headers("producer"),
        timeout=guard(30),
    )
    assert unbound.status_code == 403, unbound.text
    message = unbound.json()["error"]["message"]
    assert "'catalogue'" in message and "speaks for: catalog, crm" in message
    assert f"memstream keys create --tenant {doors.tenant} --role producer" in message


def test_an_invalid_event_is_refused_and_nothing_is_sent(doors: Doors) -> None:
    good = memory_event(doors.tenant, "note:C-17:never", "never sent", ago=timedelta(hours=1))
    bad = {**good, "event_id": "bad-1", "occurred_at": "yesterday"}
    response = httpx.post(
        f"{doors.url}/v1/events",
        json=[good, bad],
        headers=doors.headers("producer"),
        timeout=guard(30),
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_event" and "event 1: bad_timestamp" in error["message"]
    assert (
        doors.setup.sql(
            "SELECT 1 FROM event_ledger WHERE tenant_id = %s AND event_id = %s",
            doors.tenant,
            good["event_id"],
        )
        == []
    )
    foreign = memory_event(doors.other_tenant, "note:x", "other tenant", ago=timedelta(hours=1))
    unbound = memory_event(doors.tenant, "note:y", "from the forum", ago=timedelta(hours=1),
                           source="forum")  # fmt: skip
    for event in (foreign, unbound):  # another tenant, a source the producer does not speak for
        refused = httpx.post(
            f"{doors.url}/v1/events", json=[good, event], headers=doors.headers("producer"),
            timeout=guard(30),
        )  # fmt: skip
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "forbidden"
    assert (
        doors.setup.sql(
            "SELECT 1 FROM event_ledger WHERE tenant_id = %s AND event_id = %s",
            doors.tenant,
            good["event_id"],
        )
        == []
    )


def test_auth_failures(doors: Doors) -> None:
    body = {"query": "what did I return?"}
    missing = httpx.post(f"{doors.url}/v1/retrieve", json=body, timeout=10)
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "unauthenticated"
    assert missing.headers["WWW-Authenticate"] == "Bearer" and missing.headers["X-Request-Id"]
    wrong = httpx.post(
        f"{doors.url}/v1/retrieve", json=body, headers={"Authorization": "Bearer nope"}, timeout=10
    )
    assert wrong.status_code == 401
    basic = httpx.post(
        f"{doors.url}/v1/retrieve", json=body, headers={"Authorization": "Basic abc"}, timeout=10
    )
    assert basic.status_code == 401 and "Bearer" in basic.json()["error"]["message"]
    other_tenant = httpx.post(
        f"{doors.url}/v1/retrieve",
        json={**body, "tenant_id": doors.other_tenant},
        headers=doors.headers(),
        timeout=10,
    )
    assert other_tenant.status_code == 403
    assert other_tenant.json()["error"]["code"] == "forbidden"
    producer_asks = httpx.post(
        f"{doors.url}/v1/retrieve", json=body, headers=doors.headers("producer"), timeout=10
    )
    assert producer_asks.status_code == 403
    agent_publishes = httpx.post(
        f"{doors.url}/v1/events", json={}, headers=doors.headers(), timeout=10
    )
    assert agent_publishes.status_code == 403
    foreign_audit = httpx.get(
        f"{doors.url}/v1/audit/req-x1-charge", headers=doors.headers("other"), timeout=10
    )
    assert foreign_audit.status_code == 404
    admin_elsewhere = httpx.post(
        f"{doors.url}/v1/retrieve",
        json={**body, "tenant_id": doors.other_tenant},
        headers=doors.headers("admin"),
        timeout=10,
    )
    assert admin_elsewhere.status_code == 403  # an admin is its own tenant's, no other's


def test_a_bad_body_is_a_422_naming_the_field(doors: Doors) -> None:
    for body, fragment in (
        ({"query": "x", "limit": "many"}, "body.limit"),
        ({"limit": 3}, "body.query: Field required"),
        ({"query": "x", "as_of": "last week"}, "body.as_of"),
        ({"query": "x", "colour": "blue"}, "body.colour: Extra inputs"),
    ):
        response = httpx.post(
            f"{doors.url}/v1/retrieve", json=body, headers=doors.headers(), timeout=10
        )
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "bad_field" and fragment in error["message"], error
    not_json = httpx.post(
        f"{doors.url}/v1/retrieve",
        content=b"{not json",
        headers={**doors.headers(), "Content-Type": "application/json"},
        timeout=10,
    )
    assert not_json.status_code == 422 and not_json.json()["error"]["code"] == "bad_field"
    out_of_range = httpx.post(
        f"{doors.url}/v1/retrieve",
        json={"query": "x", "limit": 99},
        headers=doors.headers(),
        timeout=guard(30),
    )
    assert out_of_range.status_code == 422
    assert out_of_range.json()["error"]["code"] == "limit_out_of_range"


def test_health_openapi_and_docs_without_a_cdn(doors: Doors) -> None:
    health = httpx.get(f"{doors.url}/healthz", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert health.headers["X-Request-Id"]
    spec = httpx.get(f"{doors.url}/openapi.json", timeout=10).json()
    assert {
        "/v1/retrieve",
        "/v1/events",
        "/v1/memories/{memory_key}/history",
        "/v1/audit/{request_id}",
        "/healthz",
    } <= set(spec["paths"])
    docs = httpx.get(f"{doors.url}/docs", timeout=10)
    assert docs.status_code == 200 and "/v1/retrieve" in docs.text
    assert "<script" not in docs.text and "cdn" not in docs.text.lower()
    missing = httpx.get(f"{doors.url}/v1/nothing", timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_a_hundred_concurrent_requests_each_get_their_own_reply(doors: Doors) -> None:
    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(
            base_url=doors.url, timeout=guard(60), limits=limits
        ) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/v1/retrieve",
                        json={
                            "query": f"what did customer C-17 return? ({n})",
                            "user_id": "C-17",
                            "force": True,
                            "request_id": f"load-{n}-{uuid.uuid4().hex[:6]}",
                        },
                        headers=doors.headers(),
                    )
                    for n in range(100)
                )
            )

    responses = asyncio.run(run())
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses[:3]]
    for n, response in enumerate(responses):
        body = response.json()
        assert body["request_id"].startswith(f"load-{n}-")
        assert response.headers["X-Request-Id"] == body["request_id"]
        assert "return:C-17:O-1" in [r["memory_key"] for r in body["results"]]
    assert len({r.json()["request_id"] for r in responses}) == 100
