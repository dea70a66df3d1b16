"""Generations of the transient topics (requests and replies) on a broker that deletes nothing.

The embedded broker (Tansu, memory storage) keeps every record and walks a partition's record
batches on each fetch, so a requests or replies topic that lives forever makes every fetch
slower than the last. Requests and replies are transient: nothing in them matters once its
deadline has passed. So, where rotation is on, they go to generation topics
``<topic>.g<N>`` with ``N = floor(epoch ms / period ms)``: the clock names the current
generation, so nobody writes a pointer that others must trust (a client cannot redirect
another). Workers create the current and the next generation, read the previous, the current
and the next, and delete a generation once every request in it is past any token's lifetime
(``expired``): by then a request still in it would be refused, and its client has had its
timeout. Clients learn the period from a sealed reply (``rotation_ms``), so only the service
can switch them on. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from memstream.services.domain.identity import CLOCK_SKEW, MAX_TOKEN_LIFETIME

# A request in a generation that ended this long ago is past its token's lifetime: refused.
GRACE_MS = int((MAX_TOKEN_LIFETIME + 2 * CLOCK_SKEW).total_seconds() * 1000)

_SUFFIX = re.compile(r"\.g(\d{1,15})$")


def generation(now_ms: int, period_ms: int) -> int:
    return now_ms // period_ms


def named(base: str, gen: int) -> str:
    return f"{base}.g{gen}"


def parse(base: str, topic: str) -> int | None:
    """The generation of ``topic`` when it is one of ``base``'s, else None."""
    if not topic.startswith(base):
        return None
    found = _SUFFIX.fullmatch(topic[len(base) :])
    return int(found.group(1)) if found else None


def readable(now_ms: int, period_ms: int) -> tuple[int, int, int]:
    """The generations a worker reads: the previous (requests sent just before the turn),
    the current, and the next (a client whose clock runs slightly ahead)."""
    current = generation(now_ms, period_ms)
    return current - 1, current, current + 1


def expired(gen: int, now_ms: int, period_ms: int, grace_ms: int = GRACE_MS) -> bool:
    """Every request sent to ``gen`` is past any token's lifetime: the topic may go."""
    return now_ms >= (gen + 1) * period_ms + grace_ms


def live(gen: int, now_ms: int, period_ms: int, grace_ms: int = GRACE_MS) -> bool:
    """A generation a reply may still be written to: not expired, at most one ahead."""
    return gen <= generation(now_ms, period_ms) + 1 and not expired(
        gen, now_ms, period_ms, grace_ms
    )


class ReplyTopics(Mapping[str, int]):
    """The reply topics a worker may write to, with their partition counts: the configured
    one and, with rotation (``period_ms`` > 0), its live generations. A reply address is
    checked against this (``identity.reply_address``): the worker writes nowhere else."""

    def __init__(
        self,
        base: str,
        partitions: int,
        period_ms: int,
        clock_ms: Callable[[], int],
        grace_ms: int = GRACE_MS,
    ) -> None:
        self._grace_ms = grace_ms
        self._base = base
        self._partitions = partitions
        self._period_ms = period_ms
        self._clock_ms = clock_ms

    def __getitem__(self, topic: str) -> int:
        if topic == self._base:
            return self._partitions
        if self._period_ms > 0:
            gen = parse(self._base, topic)
            if gen is not None and live(gen, self._clock_ms(), self._period_ms, self._grace_ms):
                return self._partitions
        raise KeyError(topic)

    def __contains__(self, topic: object) -> bool:
        if not isinstance(topic, str):
            return False
        try:
            self[topic]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        yield self._base
        if self._period_ms > 0:
            for gen in readable(self._clock_ms(), self._period_ms):
                yield named(self._base, gen)

    def __len__(self) -> int:
        return 1 + (3 if self._period_ms > 0 else 0)
