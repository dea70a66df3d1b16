"""The generation rule of the transient topics (memstream.services.domain.generations)."""

from __future__ import annotations

import pytest

from memstream.services.domain import generations as gens
from memstream.services.domain.identity import BadReplyAddress, reply_address

P = 60_000


def test_the_clock_names_the_generation_and_names_parse_back() -> None:
    assert gens.generation(0, P) == 0 and gens.generation(P - 1, P) == 0
    assert gens.generation(P, P) == 1
    assert gens.named("memory.requests", 7) == "memory.requests.g7"
    assert gens.parse("memory.requests", "memory.requests.g7") == 7
    others = ("memory.requests", "memory.requests.dlq", "memory.requests.gx", "memory.replies.g7",
              "memory.requests.g7.g8", "memory.requests.g-1")  # fmt: skip
    for other in others:
        assert gens.parse("memory.requests", other) is None, other


def test_a_worker_reads_the_previous_current_and_next_generation() -> None:
    assert gens.readable(10 * P + 5, P) == (9, 10, 11)


def test_a_generation_expires_only_once_its_last_request_is_past_any_token() -> None:
    grace = gens.GRACE_MS
    assert grace >= 15 * 60_000  # the longest a request token may live
    end = 11 * P  # generation 10 ends here
    assert not gens.expired(10, end + grace - 1, P)
    assert gens.expired(10, end + grace, P)
    assert gens.expired(10, end + 5_000, P, grace_ms=5_000)


def test_replies_may_go_to_live_generations_only() -> None:
    now = [10 * P + 1]
    topics = gens.ReplyTopics("memory.replies", 4, P, lambda: now[0], grace_ms=30_000)
    assert reply_address("memory.replies", 3, topics) == ("memory.replies", 3)
    assert reply_address("memory.replies.g10", 0, topics) == ("memory.replies.g10", 0)
    assert reply_address("memory.replies.g11", 0, topics)  # a client's clock a little ahead
    for refused in (
        "memory.replies.g12",
        "memory.replies.g99",
        "memory.events",
        "memory.replies.g",
    ):
        with pytest.raises(BadReplyAddress):
            reply_address(refused, 0, topics)
    with pytest.raises(BadReplyAddress):
        reply_address("memory.replies.g10", 4, topics)  # no such partition
    now[0] = 11 * P + 30_000  # generation 10 past its grace: refused (it is being deleted)
    with pytest.raises(BadReplyAddress):
        reply_address("memory.replies.g10", 0, topics)
    now[0] = 12 * P  # and the mapping follows the clock: no copy taken at start
    assert "memory.replies.g13" in topics and "memory.replies.g11" in topics


def test_without_rotation_only_the_configured_topic_is_a_reply_topic() -> None:
    topics = gens.ReplyTopics("memory.replies", 4, 0, lambda: 10 * P)
    assert list(topics) == ["memory.replies"] and len(topics) == 1
    with pytest.raises(BadReplyAddress):
        reply_address("memory.replies.g10", 0, topics)
