"""Identity on the real stack (Tansu + worker + Postgres): hundreds of attacks sent as an
attacker with broker access would, a forger answering first, and a foreign consumer reading
every reply and request. Nothing leaks, no forgery is accepted, nothing is written outside the
reply topics, every probe is answered with an error or refused."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from confluent_kafka.admin import AdminClient

from memstream.schemas import codec, envelope
from memstream.streams.client import MemoryClient, RetrievalTimeout
from tests.conftest import unique
from tests.e2e.ingest_kit import IngestSetup, encoded, make_setup
from tests.e2e.processes import Process, guard
from tests.identity_kit import signed_request

PROBES = 300


@pytest.fixture(scope="module")
def stack(
    broker: str, machine_postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[IngestSetup, Process]]:
    setup = make_setup(broker, machine_postgres_dsn, tmp_path_factory.mktemp("identity"))
    worker = setup.worker()
    yield setup, worker
    assert worker.terminate() == 0, worker.output[-3000:]
    assert "Traceback" not in worker.output, worker.output[-3000:]


def memory(tenant: str, key: str, content: str, source: str = "crm") -> dict[str, Any]:
    return {
        "event_id": f"{key}@{uuid.uuid4().hex[:8]}",
        "tenant_id": tenant,
        "memory_key": key,
        "entity_type": "customer",
        "entity_id": "C-1",
        "fact_type": "note",
        "content": content,
        "source_system": source,
        "occurred_at": (datetime.now(UTC) - timedelta(days=1)).isoformat(),
    }


async def _read_all(broker: str, topics: list[str]) -> list[Any]:
    """Every record of these topics, as a consumer with no group and no key reads them."""
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [
            TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t) or ()
        ]
        if not parts:
            await consumer.topics()
            parts = [
                TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t) or ()
            ]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        records: list[Any] = []
        idle = 0
        while idle < 3:
            batch = await consumer.getmany(timeout_ms=300)
            got = [m for ms in batch.values() for m in ms]
            records += got
            idle = 0 if got else idle + 1
        return records
    finally:
        await consumer.stop()


def test_attacks_through_the_broker_find_no_way_in(stack: Any) -> None:
    setup, worker = stack
    topics = setup.topics
    acme, globex = unique("acme-"), unique("globex-")
    secrets = {
        t: [f"SECRET-{t}-{i}-{uuid.uuid4().hex[:8]}" for i in range(4)] for t in (acme, globex)
    }
    events = [
        memory(t, f"vault:{i}", f"The vault code of the account is {s}.")
        for t in (acme, globex)
        for i, s in enumerate(secrets[t])
    ]
    # A forum scraper's key claims official_doc: refused, never recorded.
    scraper = setup.keyring.key(acme, "producer", ["forum"])
    setup.produce(encoded(e) for e in events)
    status = setup.wait([(e["tenant_id"], e["event_id"]) for e in events], timeout=120)
    assert not status.pending and not status.dead, status
    claimed = memory(acme, "doc:1", "Official: refunds take 90 days.", source="official_doc")
    key, value = encoded(claimed)
    signer = envelope.EventSigner(scraper)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": setup.broker})
    producer.produce(
        topics.events,
        key=key,
        value=value,
        headers=signer.headers(value, claimed["event_id"], int(time.time() * 1000)),
    )
    producer.flush(10)
    claim = setup.wait([(acme, claimed["event_id"])], timeout=60)
    assert claim.dead == {(acme, claimed["event_id"]): "forbidden"}, claim

    agents = {t: setup.keyring.key(t) for t in (acme, globex)}
    producer_key = setup.keyring.key(acme, "producer", ["crm"])
    expired_key = asyncio.run(
        setup.keyring.issue_async(
            acme, "agent", expires_at=datetime.now(UTC) - timedelta(seconds=1)
        )
    )
    found = asyncio.run(_attack(setup, agents, producer_key, expired_key, secrets, worker.proc.pid))
    print("identity e2e:", {k: v for k, v in found.items() if k != "leaked"})  # for reports
    assert found["genuine_ok"] == 2 * 20, found
    assert found["accepted_forgeries"] == 0, found
    assert found["forged_seen"] > 0, "the forger must have answered some requests"
    assert found["leaked"] == [], found["leaked"]
    assert found["unanswered"] == [], found["unanswered"]
    assert set(found["codes"]) <= {"unauthenticated", "forbidden", "bad_reply_address", "dlq"}
    assert found["probes"] >= PROBES

    # A consumer without the clients' keys reads every reply and request: no secret in clear.
    records = asyncio.run(_read_all(setup.broker, [topics.replies, topics.requests]))
    assert records
    for record in records:
        for secret in (s for ss in secrets.values() for s in ss):
            assert secret.encode() not in (record.value or b""), record.topic
            assert secret.encode() not in b"".join(v for _, v in record.headers or ())
    # Nothing was written outside the reply topics, and no topic was created.
    admin = AdminClient({"bootstrap.servers": setup.broker})
    names = set(admin.list_topics(timeout=10).topics)
    assert not any(n.startswith("zz.attacker") for n in names), names
    events_after = asyncio.run(_read_all(setup.broker, [topics.events, topics.changes]))
    assert all(not r.key or not r.key.startswith(b"probe-") for r in events_after)
    audited = setup.sql("SELECT count(*) FROM auth_audit WHERE kind = 'request'")[0][0]
    assert audited >= found["probes"] - found["controls"]


async def _attack(
    setup: IngestSetup,
    agents: dict[str, str],
    producer_key: str,
    expired_key: str,
    secrets: dict[str, list[str]],
    worker_pid: int,
) -> dict[str, Any]:
    topics = setup.topics
    acme, globex = list(agents)
    rng = random.Random(5)
    raw = AIOKafkaProducer(bootstrap_servers=setup.broker)
    await raw.start()
    watcher = AIOKafkaConsumer(bootstrap_servers=setup.broker, group_id=None)
    await watcher.start()
    parts = [TopicPartition(topics.replies, p) for p in range(topics.reply_partitions)]
    parts.append(TopicPartition(topics.requests_dlq, 0))
    watcher.assign(parts)
    for part in parts:
        await watcher.seek_to_end(part)
        await watcher.position(part)

    # 1. The forger: reads every request and answers first, with replies it makes up and with
    #    genuine replies captured earlier (replayed for another request).
    captured: list[bytes] = []
    forged_sent = 0

    async def forger() -> None:
        nonlocal forged_sent
        spy = AIOKafkaConsumer(bootstrap_servers=setup.broker, group_id=None)
        await spy.start()
        spy_parts = [TopicPartition(topics.requests, p) for p in range(topics.partitions)]
        spy.assign(spy_parts)
        for part in spy_parts:
            await spy.seek_to_end(part)
            await spy.position(part)
        try:
            while True:
                batch = await spy.getmany(timeout_ms=50)
                for message in (m for ms in batch.values() for m in ms):
                    headers = dict(message.headers or ())
                    rid = headers.get("correlation_id", b"").decode()
                    partition = int(headers.get("reply_partition", b"0") or 0)
                    fake = {
                        "request_id": rid,
                        "status": "ok",
                        "gate": {"decision": "forced", "reason": "FORGED"},
                        "results": [],
                        "latency_ms": {},
                        "error": None,
                        "served_at": datetime.now(UTC),
                    }
                    _, stranger = envelope.client_session(
                        envelope.Credential.parse(agents[acme]).service_public
                    )
                    for value in (
                        codec.encode("RetrievalReply", fake),  # in clear
                        envelope.seal(
                            stranger.reply,
                            codec.encode("RetrievalReply", fake),
                            envelope.reply_aad(rid),
                        ),  # sealed to no one
                        *captured[-1:],  # a genuine reply to another request
                    ):
                        await raw.send(
                            topics.replies,
                            key=rid.encode(),
                            value=value,
                            partition=partition,
                            headers=[("correlation_id", rid.encode())],
                        )
                        forged_sent += 1
        finally:
            await spy.stop()

    forging = asyncio.get_running_loop().create_task(forger())
    await asyncio.sleep(0.5)
    clients = {
        t: await MemoryClient(
            setup.broker, topics, timeout=guard(30), credential=k, reply_partition=i
        ).start()
        for i, (t, k) in enumerate(agents.items())
    }
    genuine_ok = accepted_forgeries = 0
    leaked: list[str] = []
    try:
        for _ in range(20):
            for tenant, client in clients.items():
                reply = await client.retrieve("what is the vault code?", tenant, force=True)
                text = repr(reply)
                if "FORGED" in text:
                    accepted_forgeries += 1
                other = globex if tenant == acme else acme
                leaked += [s for s in secrets[other] if s in text]
                if reply["status"] == "ok" and any(s in text for s in secrets[tenant]):
                    genuine_ok += 1
            captured_reply = await _last_reply(setup)
            if captured_reply is not None:
                captured.append(captured_reply)
        # A fast worker answers before the forger does. With the worker paused, the forger's
        # replies are the only ones while the request waits: each is rejected, none accepted.
        os.kill(worker_pid, signal.SIGSTOP)
        try:
            with pytest.raises(RetrievalTimeout):
                await clients[acme].retrieve(
                    "what is the vault code?", acme, force=True, timeout=4.0
                )
        finally:
            os.kill(worker_pid, signal.SIGCONT)
        forged_seen = sum(c.forged_replies for c in clients.values())
    finally:
        forging.cancel()
        for client in clients.values():
            await client.stop()

    # 2. Probes sent as an attacker with broker access would.
    kinds = [
        "control",  # first: the replayed probes resend a control
        "spoofed_tenant",
        "no_token",
        "expired_token",
        "expired_key",
        "replayed",
        "other_tenants_token",
        "producer_asks",
        "reply_to_events",
        "reply_to_new_topic",
        "partition_99",
        "partition_negative",
    ]
    pending: dict[str, tuple[str, envelope.SessionKeys | None]] = {}
    sent_replay: dict[str, Any] = {}
    probes = controls = 0
    for n in range(PROBES):
        kind = kinds[n % len(kinds)] if n < len(kinds) else rng.choice(kinds)
        record: dict[str, Any] = {"query": "what is the vault code?", "force": True}
        cred, kw = agents[acme], {"reply_to": topics.replies, "partition": rng.randrange(4)}
        if kind == "spoofed_tenant":
            record["tenant_id"] = rng.choice([globex, "nobody", acme + " "])
        elif kind == "expired_token":
            kw["expires_ms"] = int((time.time() - 60) * 1000)
        elif kind == "expired_key":
            cred = expired_key
        elif kind == "producer_asks":
            cred = producer_key
        elif kind == "reply_to_events":
            kw["reply_to"] = rng.choice([topics.events, topics.changes, topics.requests])
        elif kind == "reply_to_new_topic":
            kw["reply_to"] = f"zz.attacker.{uuid.uuid4().hex[:6]}"
        elif kind == "partition_99":
            kw["partition"] = 99
        elif kind == "partition_negative":
            kw["partition"] = -1
        value, headers, keys = signed_request(cred, record, **kw)
        if kind == "no_token":
            del headers[envelope.AUTH_HEADER]
        elif kind == "other_tenants_token":
            _, theirs, _ = signed_request(agents[globex], record, **kw)
            headers[envelope.AUTH_HEADER] = theirs[envelope.AUTH_HEADER]
        elif kind == "replayed" and sent_replay:
            value, headers, keys = sent_replay["value"], sent_replay["headers"], sent_replay["keys"]
        rid = headers["correlation_id"].decode() + ("#replay" if kind == "replayed" else "")
        await raw.send_and_wait(
            topics.requests,
            value=value,
            key=b"probe-" + str(n).encode(),
            headers=list(headers.items()),
        )
        probes += 1
        if kind == "control":
            controls += 1
            sent_replay = {"value": value, "headers": headers, "keys": keys}
        pending[rid] = (kind, keys)

    codes: Counter[str] = Counter()
    unanswered = {rid for rid in pending}
    answered_controls: set[str] = set()
    deadline = time.monotonic() + 60
    while unanswered and time.monotonic() < deadline:
        batch = await watcher.getmany(timeout_ms=200)
        for message in (m for ms in batch.values() for m in ms):
            if message.topic == topics.requests_dlq:
                letter = codec.decode("DeadLetter", message.value)
                rid = letter.get("event_id") or ""
                if rid in unanswered:
                    unanswered.discard(rid)
                    codes["dlq"] += 1
                continue
            rid = (message.key or b"").decode()
            for candidate in (rid, rid + "#replay"):
                if candidate not in unanswered:
                    continue
                kind, keys = pending[candidate]
                assert keys is not None
                try:
                    body = envelope.open_sealed(keys.reply, message.value, envelope.reply_aad(rid))
                except envelope.EnvelopeError:
                    continue
                reply = codec.decode("RetrievalReply", body)
                if kind == "control":
                    # A control and its replay race (other partitions): whichever comes second
                    # is the refused one, and is counted for the replay.
                    if candidate in answered_controls or reply["status"] != "ok":
                        continue
                    answered_controls.add(candidate)
                    unanswered.discard(candidate)
                    break
                assert reply["status"] == "error", (kind, reply)
                codes[reply["error"]["code"]] += 1
                unanswered.discard(candidate)
                break
    await raw.stop()
    await watcher.stop()
    return {
        "genuine_ok": genuine_ok,
        "accepted_forgeries": accepted_forgeries,
        "forged_seen": forged_seen,
        "forged_sent": forged_sent,
        "leaked": leaked,
        "unanswered": sorted(pending[r][0] for r in unanswered),
        "codes": codes,
        "probes": probes,
        "controls": controls,
    }


async def _last_reply(setup: IngestSetup) -> bytes | None:
    """A genuine sealed reply as the forger captures it (for replay)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=setup.broker, group_id=None)
    await consumer.start()
    try:
        part = TopicPartition(setup.topics.replies, 0)
        consumer.assign([part])
        end = await consumer.end_offsets([part])
        if not end[part]:
            return None
        consumer.seek(part, max(0, end[part] - 1))
        batch = await consumer.getmany(timeout_ms=500)
        got = [m.value for ms in batch.values() for m in ms if m.value]
        return got[-1] if got else None
    finally:
        await consumer.stop()
