"""≥ 10,000 randomized attacks on the Guard with the real credential store (Postgres) and nonce
store (Redis): every attack is refused, none opens, no reply address leaves the reply topics,
and every refusal has its audit row. Controls (honest requests) are answered."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstream.schemas import codec, envelope
from memstream.services.adapters.postgres_credentials import PostgresCredentialStore
from memstream.services.adapters.redis_nonces import RedisNonceStore
from memstream.services.domain.identity import AuthError
from memstream.services.handlers.guard import Guard, Opened, ReadAgain, Refused
from memstream.services.ports import Position
from tests.conftest import MACHINE_REDIS, traversable_dir, unique
from tests.identity_kit import Keyring, signed_request, utcnow

REPLIES = {"memory.replies": 4}
REQUEST_PROBES = 9_000
EVENT_PROBES = 2_000
ATTACKS = (
    "spoofed_tenant",
    "no_token",
    "expired_token",
    "too_long_token",
    "expired_key",
    "revoked_key",
    "rotated_past_overlap",
    "foreign_signature",
    "replayed",
    "token_of_another_request",
    "producer_asks",
    "reply_to_outside",
    "partition_outside",
    "garbage_token",
    "swapped_reply_key",
    "tampered_body",
    "unknown_key",
)


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    import shutil

    path = traversable_dir("memstream-identity-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _past(minutes: int) -> int:
    return int((time.time() - minutes * 60) * 1000)


def _nonces() -> RedisNonceStore:
    return RedisNonceStore.from_url(MACHINE_REDIS, prefix=unique("test:nonce:") + ":")


def _guard(store: PostgresCredentialStore, nonces: RedisNonceStore, keyring: Keyring) -> Guard:
    """The worker's guard on ``store`` and ``nonces``, for this keyring's service key."""
    return Guard(
        store,
        nonces,
        keyring.service,
        REPLIES,
        "memory.replies",
        lambda data: codec.decode("RetrievalRequest", data),
        utcnow,
    )


async def _probes(dsn: str, keyring: Keyring) -> dict[str, Any]:
    rng = random.Random(12)
    acme, globex = unique("acme-"), unique("globex-")
    agent = await keyring.issue_async(acme, "agent")
    globex_agent = await keyring.issue_async(globex, "agent")
    producer = await keyring.issue_async(acme, "producer", ["forum"])
    expired = await keyring.issue_async(acme, "agent", expires_at=utcnow() - timedelta(seconds=1))
    revoked = await keyring.issue_async(acme, "admin")
    store = await PostgresCredentialStore.connect(dsn, utcnow, cache_seconds=0)
    await store.revoke(envelope.Credential.parse(revoked).key_id)
    rotated_old = await keyring.issue_async(acme, "agent")
    await store.rotate(
        envelope.Credential.parse(rotated_old).key_id, keyring.service_public, timedelta(0)
    )
    nonces = _nonces()
    guard = _guard(PostgresCredentialStore(store._pool, utcnow), nonces, keyring)  # cached
    outcome: Counter[str] = Counter()
    opened_attacks: list[str] = []
    bad_addresses: list[Any] = []
    refused = 0
    offsets = iter(range(10**9))  # the broker gives every record its own offset

    def position() -> Position:
        return Position("memory.requests", 0, next(offsets))

    secret = "planted-secret-" + uuid.uuid4().hex

    for n in range(REQUEST_PROBES):
        attack = rng.choice(ATTACKS) if n % 10 else "control"
        record: dict[str, Any] = {"query": f"what is {secret}?"}
        cred: str = agent
        kw: dict[str, Any] = {"partition": rng.randrange(4)}
        if attack == "spoofed_tenant":
            record["tenant_id"] = rng.choice([globex, "unknown-tenant", acme + " ", acme.upper()])
        elif attack == "expired_token":
            kw["expires_ms"] = _past(rng.randrange(1, 120))
        elif attack == "too_long_token":
            kw["expires_ms"] = int((time.time() + 3600 * rng.randrange(1, 48)) * 1000)
        elif attack == "expired_key":
            cred = expired
        elif attack == "revoked_key":
            cred = revoked
        elif attack == "rotated_past_overlap":
            cred = rotated_old
        elif attack == "producer_asks":
            cred = producer
        elif attack == "reply_to_outside":
            kw["reply_to"] = rng.choice(
                ["memory.events", "memory.changes", "memory.requests", "zz.attacker.topic", ""]
            )
        elif attack == "partition_outside":
            kw["partition"] = rng.choice([4, 99, -1, 2**31 - 1])
        value, headers, _keys = signed_request(cred, record, **kw)
        assert secret.encode() not in value  # the question is sealed
        if attack == "no_token":
            del headers[envelope.AUTH_HEADER]
        elif attack == "foreign_signature":  # globex's key signs, acme's key id is claimed
            g = envelope.Credential.parse(globex_agent)
            a = envelope.Credential.parse(agent)
            forged = envelope.Credential(a.key_id, g.seed, g.service_public)
            value, headers, _ = signed_request(forged, record, **kw)
        elif attack == "replayed":
            guard_result = await guard.open_request(value, headers, position())
            assert isinstance(guard_result, Opened), guard_result
            outcome["control"] += 1
        elif attack == "token_of_another_request":
            _, other_headers, _ = signed_request(agent, record, **kw)
            headers[envelope.AUTH_HEADER] = other_headers[envelope.AUTH_HEADER]
        elif attack == "garbage_token":
            headers[envelope.AUTH_HEADER] = rng.choice(
                [b"", b"v1", b"v1.x.y.z.w", b"v1.k0000000000000000.1.n." + b"A" * 86, b"\xff"]
            )
        elif attack == "swapped_reply_key":
            mine, _ = envelope.client_session(keyring.service_public)
            headers[envelope.REPLY_KEY_HEADER] = envelope.b64(mine).encode()
        elif attack == "tampered_body":
            i = rng.randrange(3, len(value))
            value = value[:i] + bytes([value[i] ^ 1]) + value[i + 1 :]
        elif attack == "unknown_key":
            fake = envelope.Credential.new(envelope.new_key_id(), keyring.service_public)
            value, headers, _ = signed_request(fake, record, **kw)
        result = await guard.open_request(value, headers, position())
        if isinstance(result, Opened):
            if attack != "control":
                opened_attacks.append(attack)
            else:
                assert result.request["tenant_id"] == acme
            outcome["control"] += 1
            continue
        assert isinstance(result, Refused)
        refused += 1
        outcome[f"{attack}:{result.code}"] += 1
        if result.address is not None and (
            result.address[0] not in REPLIES or not 0 <= result.address[1] < 4
        ):
            bad_addresses.append(result.address)

    # Events: the producer's signature, tenant and source.
    event_refusals = event_accepts = 0
    forum = envelope.EventSigner(producer)
    now = utcnow()
    for n in range(EVENT_PROBES):
        attack = rng.choice(["other_source", "other_tenant", "agent_key", "no_token", "control"])
        raw = {
            "event_id": f"e{n}-{uuid.uuid4().hex[:6]}",
            "tenant_id": acme,
            "source_system": "forum",
        }
        signer = forum
        if attack == "other_source":
            raw["source_system"] = rng.choice(["official_doc", "crm", "Forum"])
        elif attack == "other_tenant":
            raw["tenant_id"] = rng.choice([globex, "unknown-tenant"])
        elif attack == "agent_key":
            signer = envelope.EventSigner(agent)
        value = repr(raw).encode()
        headers = dict(signer.headers(value, str(raw["event_id"]), int(time.time() * 1000)))
        if attack == "no_token":
            headers = {}
        try:
            token, principal = await guard.verify_event(value, headers, now, now)
            event = Guard.authorize_event(token, principal, raw)
        except AuthError:
            event_refusals += 1
            assert attack != "control"
            continue
        assert attack == "control", attack
        assert event["tenant_id"] == acme
        event_accepts += 1
    await nonces.close()
    await store.close()
    return {
        "outcome": outcome,
        "opened_attacks": opened_attacks,
        "bad_addresses": bad_addresses,
        "refused": refused,
        "event_refusals": event_refusals,
        "event_accepts": event_accepts,
    }


def test_ten_thousand_probes_find_no_way_in(machine_schema_dsn: str, data_dir: Path) -> None:
    dsn = machine_schema_dsn
    started = datetime.now(UTC)
    keyring = Keyring(dsn, data_dir)
    found = asyncio.run(_probes(dsn, keyring))
    outcome = found["outcome"]
    print("identity probes:", dict(outcome), found["event_refusals"], found["event_accepts"])
    total = REQUEST_PROBES + EVENT_PROBES
    assert total >= 10_000
    assert found["opened_attacks"] == [], found["opened_attacks"]
    assert found["bad_addresses"] == []
    for attack in ATTACKS:  # every kind was tried, and each was refused with its code
        codes = {k.split(":")[1] for k in outcome if k.startswith(attack + ":")}
        assert codes, f"{attack} never tried"
        expected = {
            "spoofed_tenant": {"forbidden"},
            "producer_asks": {"forbidden"},
            "reply_to_outside": {"bad_reply_address"},
            "partition_outside": {"bad_reply_address"},
        }.get(attack, {"unauthenticated"})
        assert codes == expected, (attack, codes)
    assert outcome["control"] >= REQUEST_PROBES // 10
    assert found["event_accepts"] > 0 and found["event_refusals"] > 0
    with psycopg.connect(dsn) as conn:
        audited = conn.execute(
            "SELECT count(*) FROM auth_audit WHERE kind = 'request' AND at >= %s", (started,)
        ).fetchone()
    assert audited is not None and audited[0] == found["refused"]


async def _read_again(dsn: str, keyring: Keyring) -> dict[str, Any]:
    tenant = unique("acme-")
    agent = await keyring.issue_async(tenant, "agent")
    store = await PostgresCredentialStore.connect(dsn, utcnow, cache_seconds=0)
    nonces = _nonces()
    guard = _guard(store, nonces, keyring)
    value, headers, _ = signed_request(agent, {"query": "what did I order?"}, partition=2)
    first_read = Position("memory.requests.g7", 1, 40)
    verdicts = [
        await guard.open_request(value, headers, first_read),
        # the consumer reads the same record again (a rebalance, a restart before its commit)
        await guard.open_request(value, headers, Position("memory.requests.g7", 1, 40)),
        await guard.open_request(value, headers, first_read),
        # the same bytes sent again by anyone land at another offset, or another topic
        await guard.open_request(value, headers, Position("memory.requests.g7", 1, 41)),
        await guard.open_request(value, headers, Position("memory.requests", 1, 40)),
    ]
    await nonces.close()
    await store.close()
    return {"verdicts": verdicts, "request_id": headers["correlation_id"].decode()}


def test_a_record_read_again_is_not_answered_twice_and_a_copy_of_it_is_refused(
    machine_schema_dsn: str, data_dir: Path
) -> None:
    dsn = machine_schema_dsn
    found = asyncio.run(_read_again(dsn, Keyring(dsn, data_dir)))
    opened, again, again_later, copy, elsewhere = found["verdicts"]
    assert isinstance(opened, Opened) and opened.request_id == found["request_id"]
    for verdict in (again, again_later):  # no reply, no refusal row: it was answered once
        assert isinstance(verdict, ReadAgain), verdict
        assert verdict.request_id == found["request_id"]
    for verdict in (copy, elsewhere):  # a replay is refused, and told so (sealed)
        assert isinstance(verdict, Refused) and verdict.code == "unauthenticated", verdict
        assert verdict.answerable and verdict.address == ("memory.replies", 2)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM auth_audit WHERE kind = 'request' AND subject_id = %s",
            (found["request_id"],),
        ).fetchone()
    assert rows is not None and rows[0] == 2  # the two copies, not the reads again
