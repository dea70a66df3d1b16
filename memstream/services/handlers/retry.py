"""Retrying transient failures with capped exponential backoff (a consumer never gives up on a
database that is only down for a while: it waits, and nothing is dead-lettered for that)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from memstream.services.ports import TransientError

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Backoff:
    first: float = 0.1
    factor: float = 2.0
    cap: float = 5.0

    def delays(self) -> Callable[[int], float]:
        return lambda attempt: min(self.cap, self.first * self.factor**attempt)


async def retrying(
    what: str, call: Callable[[], Awaitable[T]], backoff: Backoff | None = None
) -> T:
    """Await ``call()`` until it does not raise TransientError; other errors propagate."""
    delay = (backoff or Backoff()).delays()
    attempt = 0
    while True:
        try:
            return await call()
        except TransientError as exc:
            wait = delay(attempt)
            level = logging.WARNING if attempt in (0, 5) or attempt % 20 == 0 else logging.DEBUG
            log.log(
                level, "%s failed (attempt %d), retrying in %.1fs: %s", what, attempt + 1, wait, exc
            )
            attempt += 1
            await asyncio.sleep(wait)
