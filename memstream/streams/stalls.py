"""Fetch stalls on Tansu: empty answers while records wait, and how a consumer notices them.

Tansu (memory storage) finds a fetch's offset by walking the partition's record batches, and
when that takes longer than the fetch's wait it answers with no records although they are
there. Measured on the bundled build, a consumer at the end of a partition of single-record
batches (one per request or reply, as the client and the worker send them) never saw a new
record with a wait of 1 ms at 3,000 batches, of 3 ms at 10,000, of 10 ms at 30,000; and
nothing is ever deleted, so every partition crosses each of these in time. A fetch that comes
back empty while the partition's high watermark (from the broker's own answers) is past the
consumer's position is that case: after ``STALL_STREAK`` of them in a row the wait doubles, up
to ``STALL_CAP_MS``. Stalls pass (a burst of CPU load, a partition rotated away: see
``memstream.streams.generations``), so after ``CALM_STREAK`` fetches in a row that delivered
records or had nothing to read, the learned wait halves again (down to none): one bad minute
does not cost every later request up to a second. A Kafka broker never answers so.

Shared by the worker's transport (``memstream.streams.transport``) and the client
(``memstream.streams.client``): imports neither Faust nor torch.
"""

from __future__ import annotations

from typing import Any

STALL_CAP_MS = 1_000
STALL_STREAK = 3  # empty fetches in a row, while lagging, before the wait is raised
CALM_STREAK = 20  # fetches in a row without a stall before the learned wait is halved


def lagging(consumer: Any, partitions: Any) -> bool:
    """Whether an aiokafka consumer is behind on any of ``partitions`` by the broker's last
    word: a high watermark past its position."""
    try:
        assignment = consumer._subscription.subscription.assignment
    except AttributeError:
        return False
    if assignment is None:
        return False
    for tp in partitions:
        try:
            state = assignment.state_value(tp)
        except (KeyError, AssertionError):
            continue
        if state is None or not state.has_valid_position or state.highwater is None:
            continue
        if state.highwater > state.position:
            return True
    return False


def raised(wait_ms: int) -> int:
    """The next wait after a stall: double, at least 2 ms, at most ``STALL_CAP_MS``."""
    return min(STALL_CAP_MS, max(2 * wait_ms, 2))


def lowered(floor_ms: int, base_ms: int) -> int:
    """The learned floor after a calm run: halved; none once it is at or under ``base_ms``
    (the wait the consumer would use anyway)."""
    half = floor_ms // 2
    return half if half > base_ms else 0


RAISE, LOWER, KEEP = 1, -1, 0


class StallWatch:
    """Counts the fetches that came back empty while the consumer was lagging; ``observe``
    says ``RAISE`` when ``STALL_STREAK`` of them in a row call for a longer wait (a single one
    may be a response that merely crossed the call's timeout), and ``LOWER`` after
    ``CALM_STREAK`` fetches in a row that delivered records or had nothing to read (the wait
    may come down again); else ``KEEP``."""

    def __init__(self) -> None:
        self._streak = 0
        self._calm = 0

    def observe(self, delivered: bool, behind: bool) -> int:
        if delivered or not behind:
            self._streak = 0
            self._calm += 1
            if self._calm < CALM_STREAK:
                return KEEP
            self._calm = 0
            return LOWER
        self._calm = 0
        self._streak += 1
        if self._streak < STALL_STREAK:
            return KEEP
        self._streak = 0
        return RAISE
