"""``POST /v1/forget`` against the running gateway and worker: only an admin erases, a dry run
changes nothing, a bad scope is a clear 422; after the erasure history shows tombstones and
retrieval no longer returns the memory, while another subject's memory stays. MCP offers no
erasure (agents do not forget), and its history shows the tombstone."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.doors.conftest import Doors, memory_event
from tests.e2e.processes import guard


def forget(doors: Doors, body: dict[str, Any], who: str = "admin", **params: Any) -> httpx.Response:
    headers = doors.headers(who) if who else {}
    return httpx.post(
        f"{doors.url}/v1/forget", json=body, params=params, headers=headers, timeout=guard(120)
    )


def history(doors: Doors, key: str) -> list[dict[str, Any]]:
    got = httpx.get(f"{doors.url}/v1/memories/{key}/history", headers=doors.headers(), timeout=10)
    assert got.status_code == 200, got.text
    versions: list[dict[str, Any]] = got.json()["versions"]
    return versions


def retrieve(doors: Doors, customer: str) -> httpx.Response:
    got = httpx.post(
        f"{doors.url}/v1/retrieve",
        json={
            "query": f"what did customer {customer} tell us about delivery?",
            "anchors": [{"type": "customer", "id": customer}],
            "force": True,
        },
        headers=doors.headers(),
        timeout=guard(30),
    )
    assert got.status_code == 200, got.text
    return got


def test_an_admin_forgets_a_customer_over_http(doors: Doors) -> None:
    tag = uuid.uuid4().hex[:8]
    subject, other = f"F-{tag}", f"G-{tag}"
    canary = f"Zanzibar{tag}"
    key, kept = f"note:fg-{tag}", f"note:fk-{tag}"

    def note(memory_key: str, customer: str, text: str, days: int) -> dict[str, Any]:
        return memory_event(
            doors.tenant, memory_key, text, ago=timedelta(days=days), entity=f"customer:{customer}"
        )

    doors.ingest([note(key, subject, f"Deliver to the back door at 12 {canary} Road.", 5)])
    doors.ingest([note(key, subject, f"Deliver to the front door at 12 {canary} Road.", 2)])
    doors.ingest([note(kept, other, "Deliver to the loading bay, weekdays only.", 3)])
    assert canary in retrieve(doors, subject).text  # before: the agent is told

    scope = {"scope": {"entity_type": "customer", "entity_id": subject}, "reason": "request 114"}

    # Only the tenant's admin: 401 without a credential, 403 for an agent and a producer
    # (before the body is read), with the error-reply shape.
    assert forget(doors, scope, who="").status_code == 401
    for who in ("agent", "producer", "other"):
        refused = forget(doors, scope, who=who)
        assert refused.status_code == 403, refused.text
        body = refused.json()
        assert body["status"] == "error" and body["error"]["code"] == "forbidden"
        assert body["request_id"] == refused.headers["X-Request-Id"]
    assert forget(doors, {"scope": {}}, who="agent").status_code == 403

    # A bad scope: 422 saying what is wrong, nothing erased.
    for bad, says in (
        ({"scope": {}}, "entity_type and entity_id, or memory_key"),
        ({"scope": {"entity_type": "customer"}}, "entity_type and entity_id"),
        ({"scope": {"memory_key": key, "entity_type": "customer", "entity_id": subject}}, "both"),
        ({"scope": {"entity_type": "customer", "entity_id": "  "}}, "TYPE:ID"),
        ({"scope": {"memory_key": " "}}, "memory key is empty"),
        ({"scope": {"entity_type": "cust:omer", "entity_id": subject}}, "may not contain"),
        ({"scope": {"memory_key": key}, "reason": "x" * 501}, "longer than 500"),
    ):
        answer = forget(doors, bad)
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["error"]["code"] == "invalid_scope", answer.text
        assert says in answer.json()["error"]["message"], answer.text
    malformed = forget(doors, {"who": subject})
    assert malformed.status_code == 422 and "scope" in malformed.json()["error"]["message"]

    # A dry run counts and changes nothing.
    dry = forget(doors, {**scope, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["status"] == "dry_run" and dry.json()["erasure_id"] is None
    assert dry.json()["counts"]["versions"] == 2
    assert all("erased" not in v and canary in v["content"] for v in history(doors, key))
    assert canary in retrieve(doors, subject).text

    # The erasure, waiting until the worker (which holds the vector shard) has completed it.
    done = forget(doors, scope, wait="true", timeout=min(guard(90), 600))  # the gateway's cap
    assert done.status_code == 200, done.text
    result = done.json()
    assert done.headers["X-Request-Id"] == result["request_id"]
    assert result["status"] == "completed" and result["erasure_id"], result
    assert result["counts"]["versions"] == 2 and len(result["digests"]) == 2
    assert result["handed_to_worker"] and result["pending"] == [] and result["error"] is None
    assert canary not in done.text and subject not in done.text  # digests, no personal data

    versions = history(doors, key)
    assert [v["version"] for v in versions] == [1, 2]
    for v in versions:
        assert v["erased"]["erasure_id"] == result["erasure_id"]
        assert v["erased"]["reason"] == "request 114" and v["erased"]["erased_at"]
        assert v["erased"]["content_sha256"] == result["digests"][v["version_id"]]
        assert v["content"] == "" and subject not in str(v) and canary not in str(v)

    # Again: a no-op (before any new question names the subject: the query log keeps those
    # until the next erasure redacts them).
    again = forget(doors, scope)
    assert again.status_code == 200 and again.json()["status"] == "nothing_to_erase", again.text

    after = retrieve(doors, subject)
    assert canary not in after.text
    assert key not in [r["memory_key"] for r in after.json()["results"]]
    still = retrieve(doors, other)
    assert kept in [r["memory_key"] for r in still.json()["results"]]
    assert all("erased" not in v for v in history(doors, kept))


def test_mcp_offers_no_erasure_and_its_history_shows_the_tombstone(doors: Doors) -> None:
    tag = uuid.uuid4().hex[:8]
    key, canary = f"note:fm-{tag}", f"Wombat{tag}"
    doors.ingest(
        [
            memory_event(
                doors.tenant,
                key,
                f"Leave parcels with {canary} next door.",
                ago=timedelta(days=1),
                entity=f"customer:M-{tag}",
            )
        ]
    )
    done = forget(doors, {"scope": {"memory_key": key}, "reason": "mcp check"}, wait="true")
    assert done.status_code == 200 and done.json()["status"] == "completed", done.text

    async def go() -> dict[str, Any]:
        admin = httpx2.AsyncClient(headers=doors.headers("admin"), timeout=guard(60))
        async with (
            admin,
            streamable_http_client(f"{doors.url}/mcp", http_client=admin) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert names and not any("forget" in n or "erase" in n for n in names), names
            got = await session.call_tool("memory_history", {"memory_key": key})
            assert not got.is_error and got.structured_content is not None, got
            text = got.content[0].text  # type: ignore[union-attr]
            assert "[erased " in text and done.json()["erasure_id"] in text
            assert canary not in text
            return got.structured_content

    body = asyncio.run(asyncio.wait_for(go(), 120))
    (version,) = body["versions"]
    assert version["erased"]["erasure_id"] == done.json()["erasure_id"]
    assert version["content"] == "" and canary not in str(body)
