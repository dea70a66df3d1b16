"""Identity rules (pure) and the wire envelope: tokens, sealing, credentials."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from memstream.schemas import envelope
from memstream.services.domain.identity import (
    MAX_TOKEN_LIFETIME,
    BadReplyAddress,
    Forbidden,
    KeyRecord,
    Principal,
    Role,
    Unauthenticated,
    check_expiry,
    check_key,
    may_ask,
    may_erase,
    may_publish,
    reply_address,
    valid_tenant_id,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_- .A", min_size=0, max_size=12)


def principal(role: Role = Role.AGENT, sources: frozenset[str] = frozenset()) -> Principal:
    return Principal("acme", role, sources, "k0123456789abcdef")


@given(names)
def test_a_payload_tenant_other_than_the_credentials_is_forbidden(payload: str) -> None:
    p = principal()
    if payload in ("", "acme"):
        assert may_ask(p, payload) == "acme"
    else:  # "acme ", "ACME", unknown and foreign tenants alike: one answer
        with pytest.raises(Forbidden) as caught:
            may_ask(p, payload)
        assert caught.value.code == "forbidden"


@given(names, st.sets(names, max_size=3))
def test_a_producer_speaks_only_for_its_sources(source: str, sources: set[str]) -> None:
    p = principal(Role.PRODUCER, frozenset(sources))
    if source in sources:
        assert may_publish(p, "acme", source) == "acme"
    else:
        with pytest.raises(Forbidden):
            may_publish(p, "acme", source)
    with pytest.raises(Forbidden):
        may_publish(p, "globex", source)


def test_an_unbound_source_is_refused_with_the_command_that_binds_a_key_to_it() -> None:
    """The refusal's reason is what the dead letter says: the key, what it speaks for, and
    the command for a key that speaks for those and the new source (the development tenant's
    producer is bound like any other; see memstream.ops.identity)."""
    p = principal(Role.PRODUCER, frozenset({"crm", "wiki"}))
    with pytest.raises(Forbidden) as caught:
        may_publish(p, "acme", "catalogue")
    reason = caught.value.reason
    assert "'catalogue'" in reason and "k0123456789abcdef" in reason and "crm, wiki" in reason
    assert (
        "`memstream keys create --tenant acme --role producer --source crm --source wiki "
        "--source catalogue --save`" in reason
    )
    assert caught.value.code == "forbidden"  # a client is still told only the public message


def test_roles() -> None:
    with pytest.raises(Forbidden):
        may_ask(principal(Role.PRODUCER, frozenset({"crm"})), "acme")
    with pytest.raises(Forbidden):
        may_publish(principal(Role.AGENT), "acme", "crm")
    assert may_publish(principal(Role.ADMIN), None, "official_doc") == "acme"
    assert not valid_tenant_id("acme ") and not valid_tenant_id("Acme") and valid_tenant_id("a-1")


@given(st.sampled_from(list(Role)), st.one_of(names, st.none()))
def test_only_an_admin_erases_and_only_in_its_own_tenant(role: Role, payload: str | None) -> None:
    p = principal(role, frozenset({"crm"}))
    if role is Role.ADMIN and payload in (None, "", "acme"):
        assert may_erase(p, payload) == "acme"
    else:
        with pytest.raises(Forbidden):
            may_erase(p, payload)


@given(st.one_of(st.text(max_size=20), st.none()), st.one_of(st.integers(), st.none(), st.text()))
def test_replies_go_only_to_a_reply_topics_partition(topic: object, partition: object) -> None:
    allowed = {"memory.replies": 4}
    try:
        assert reply_address(topic, partition, allowed) == (topic, partition)
        assert topic == "memory.replies" and isinstance(partition, int) and 0 <= partition < 4
    except BadReplyAddress:
        assert not (topic == "memory.replies" and type(partition) is int and 0 <= partition < 4)


@given(st.integers(min_value=-3600, max_value=3600))
def test_key_states(offset: int) -> None:
    at = NOW + timedelta(seconds=offset)
    record = KeyRecord("k0123456789abcdef", "acme", Role.AGENT, frozenset(), b"h" * 32, b"p" * 32,
                       NOW - timedelta(days=1), expires_at=NOW)  # fmt: skip
    if at < NOW:
        assert check_key(record, at).tenant_id == "acme"
    else:
        with pytest.raises(Unauthenticated):
            check_key(record, at)
    with pytest.raises(Unauthenticated):
        check_key(None, at)


def test_token_expiry_bounds() -> None:
    check_expiry(NOW + timedelta(minutes=5), NOW)
    with pytest.raises(Unauthenticated):
        check_expiry(NOW - timedelta(minutes=1), NOW)
    with pytest.raises(Unauthenticated):
        check_expiry(NOW + MAX_TOKEN_LIFETIME + timedelta(minutes=1), NOW)


def test_tokens_bind_the_record_the_kind_and_the_address() -> None:
    service = X25519PrivateKey.generate()
    cred = envelope.Credential.new(envelope.new_key_id(), envelope.service_public(service))
    assert envelope.Credential.parse(str(cred)) == cred and "seed" not in repr(cred)
    text = envelope.sign(cred, cred.signer(), "request", b"value", "r.1", 1000, b"addr")
    token = envelope.parse_token(text)
    assert token.nonce == "r.1"
    assert envelope.verify(cred.public_key, token, "request", b"value", b"addr")
    assert not envelope.verify(cred.public_key, token, "event", b"value", b"addr")
    assert not envelope.verify(cred.public_key, token, "request", b"valuE", b"addr")
    assert not envelope.verify(cred.public_key, token, "request", b"value", b"other")
    other = envelope.Credential.new(cred.key_id, cred.service_public)
    assert not envelope.verify(other.public_key, token, "request", b"value", b"addr")


def test_sealed_replies_open_only_for_the_asking_client() -> None:
    service = X25519PrivateKey.generate()
    mine, client = envelope.client_session(envelope.service_public(service))
    server = envelope.server_session(service, mine)
    request = envelope.seal(client.request, b"question", envelope.REQUEST_AAD)
    assert b"question" not in request
    assert envelope.open_sealed(server.request, request, envelope.REQUEST_AAD) == b"question"
    reply = envelope.seal(server.reply, b"answer", envelope.reply_aad("r1"))
    assert envelope.open_sealed(client.reply, reply, envelope.reply_aad("r1")) == b"answer"
    with pytest.raises(envelope.EnvelopeError):  # the same reply for another request
        envelope.open_sealed(client.reply, reply, envelope.reply_aad("r2"))
    _, stranger = envelope.client_session(envelope.service_public(service))
    with pytest.raises(envelope.EnvelopeError):  # another client, or a forger
        envelope.open_sealed(stranger.reply, reply, envelope.reply_aad("r1"))
    forged = envelope.seal(stranger.reply, b"forged", envelope.reply_aad("r1"))
    with pytest.raises(envelope.EnvelopeError):
        envelope.open_sealed(client.reply, forged, envelope.reply_aad("r1"))
