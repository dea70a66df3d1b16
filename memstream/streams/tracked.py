"""Keep a producer's metadata on every topic it writes to.

An aiokafka client starts with metadata for every topic of the cluster. Once it tracks a topic by
name (the first send to a topic it did not know: a request generation's topic, created after it
started), every refresh asks for the tracked topics only and replaces what it knew with the
answer — so a topic it knew from that first answer and never named is dropped. A batch already
queued for a dropped topic then waits for a partition leader that no refresh brings back.

Measured on the served bench (embedded broker, 2 cores shared by three stacks): the worker's
replies to ``memory.replies`` were queued just before its first reply to ``memory.replies.g<N>``;
the refresh that fetched ``g<N>`` dropped ``memory.replies`` and the reply never left (the client
timed out after 120 s in 7 of ~45 runs; the worker could not stop, its last commit flushing the
producer). Naming each topic before writing to it keeps it known. Generations that are past
(deleted, or no longer written to) are forgotten again: otherwise every refresh would ask for
every topic the process ever wrote to, one more per generation for as long as it runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memstream.services.domain import generations as gens


def producer_client(app: Any) -> Any | None:
    """The aiokafka client under a Faust app's producer, once the producer has started."""
    producer = getattr(getattr(app, "producer", None), "_producer", None)
    return getattr(producer, "client", None)


def track(client: Any | None, topic: str, *, base: str | None = None) -> None:
    """Name ``topic`` to ``client`` (an ``AIOKafkaClient``) before a batch is queued for it.
    With ``base``: ``topic`` is one of its generations, and those before the previous one
    are forgotten (past: no refresh needs to ask for them again)."""
    topics = getattr(client, "_topics", None)
    if topics is not None and topic not in topics:
        client.add_topic(topic)  # type: ignore[union-attr]
        if base is not None and (gen := gens.parse(base, topic)) is not None:
            forget_generations_before(client, base, gen - 1)


def forget(client: Any | None, topics: Iterable[str]) -> None:
    """Stop tracking ``topics`` (deleted): later refreshes no longer ask for them."""
    tracked = getattr(client, "_topics", None)
    if tracked is not None:
        tracked.difference_update(topics)


def forget_generations_before(client: Any | None, base: str, generation: int) -> None:
    """Stop tracking ``base``'s generation topics older than ``generation``."""
    tracked = getattr(client, "_topics", None)
    if tracked is not None:
        forget(
            client,
            [t for t in tracked if (g := gens.parse(base, t)) is not None and g < generation],
        )
