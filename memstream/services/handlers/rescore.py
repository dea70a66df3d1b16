"""handle_rescore: materialise the state changes the clock makes to current versions.

Proportional to what changed: a run reads only the versions with a state transition passed
since they were last scored (an open matter escalating, a ``valid_to`` passing: see
``domain.rescoring``), never the whole store. Recency is not rescored: every query computes it
from the version's time and the tenant's half-lives. Bounded per run and safe on several
workers at once (guarded writes). A state change is stored in Postgres (``version_scores``)
and announced on the scores topic, with the recency at that moment. The vector store is not
written: nothing reads a state from it (every query computes the state), and a payload write to
a built point copies it out of its index (at 10^6 memories with parts, those writes, the
retrieves that found each point's part and their flushes were 58 % of a catch-up).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memstream.services.domain.decay import DEFAULT_DECAY, DecayRules
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.rescoring import TimeScores, is_material, time_scores
from memstream.services.domain.trust import DEFAULT_STATE_RULES
from memstream.services.ports import DueCursor, RulesRepository


@dataclass(frozen=True, slots=True)
class RescoreReport:
    examined: int
    changed: int
    runs: int = 1


# Versions a run reads, scores and writes at once.
BATCH = 2_000
# A run scores its versions on the event loop; it lets the loop's other work run this often.
_YIELD_EVERY = 250
# A pass after a complete one reads only what fell due since that one began (the transitions
# passed since, the versions recorded since: ``RulesRepository.due``'s ``since``), not every
# open matter of the store (at 10^6 memories ~225,000, 3.5 s of a 60 s period to find two).
# A full pass at a start, after a failed run, after the clock went back, and this often catches
# what that cannot see: a version committed long after the moment it was recorded at (or by a
# worker whose clock ran behind), scores removed by hand.
FULL_PASS_EVERY = timedelta(hours=1)


class Rescorer:
    def __init__(
        self,
        rules: RulesRepository,
        announce: Callable[[MemoryVersion, TimeScores, datetime], Awaitable[None]],
        clock: Callable[[], datetime],
        *,
        batch: int = BATCH,
    ) -> None:
        self._rules = rules
        self._announce = announce
        self._clock = clock
        self._batch = batch
        # Where the pass under way stands: a run goes on from the last one's page, and after
        # the page that ends a pass the next run starts a new one (what fell due meanwhile).
        self._cursor: DueCursor | None = None
        # The pass under way: its start, whether it reads everything, whether a run of it failed.
        self._pass: tuple[datetime, bool, bool] = (clock(), True, False)
        self._since: datetime | None = None  # the start of the last complete pass
        self._full_at: datetime | None = None  # the start of the last complete full pass

    async def catch_up(self, budget: timedelta) -> RescoreReport:
        """Bounded runs back to back while the last one was full, for at most ``budget``: a
        large store is rescored within a period or two, not ``batch`` versions per tick."""
        started = time.monotonic()
        examined = changed = runs = 0
        while True:
            report = await self.run_once()
            examined, changed, runs = examined + report.examined, changed + report.changed, runs + 1
            if (
                report.examined < self._batch
                or time.monotonic() - started >= budget.total_seconds()
            ):
                return RescoreReport(examined, changed, runs)

    async def run_once(self) -> RescoreReport:
        now = self._clock()
        if self._cursor is None:  # a new pass: only what fell due since the last, or all
            self._pass = (now, self._full_due(now), False)
        started, full, failed = self._pass
        try:
            report = await self._run(now, None if full or failed else self._since)
        except BaseException:
            # This run's page may be unscored and behind the cursor: the rest of this pass
            # reads everything from the cursor on, and the next pass everything.
            self._pass, self._since = (started, full, True), None
            raise
        if self._cursor is None:  # this run ended the pass
            # All that was due at its start is scored, unless a run of it failed.
            self._since = None if failed else started
            self._full_at = started if full and not failed else self._full_at
        return report

    def _full_due(self, now: datetime) -> bool:
        return (
            self._since is None
            or self._full_at is None
            or now < self._since  # the clock went back
            or now - self._full_at >= FULL_PASS_EVERY
        )

    async def _run(self, now: datetime, since: datetime | None) -> RescoreReport:
        page = await self._rules.due(now, self._batch, self._cursor, since)
        self._cursor, due = page.next, page.items
        computed = []
        tenant_decay: dict[str, DecayRules] = {}
        for n, (version, previous, seen) in enumerate(due, 1):
            if n % _YIELD_EVERY == 0:  # the loop's other work (questions) between slices
                await asyncio.sleep(0)
            decay = tenant_decay.get(version.tenant_id)
            if decay is None:  # once per tenant per run (per version: 6-9 % of a catch-up)
                overrides = await self._rules.overrides(version.tenant_id)
                decay = tenant_decay[version.tenant_id] = DEFAULT_DECAY.merged(
                    {k: timedelta(seconds=v) for k, v in overrides["half_life"].items()}
                )
            computed.append(
                (version, time_scores(version, now, decay, DEFAULT_STATE_RULES), previous, seen)
            )
        written = await self._rules.save(
            [(v, scores, seen) for v, scores, _, seen in computed], now
        )
        changed = [
            (v, s)
            for v, s, previous, _ in computed
            if v.version_id in written and is_material(s, previous, v)
        ]
        for version, scores in changed:
            await self._announce(version, scores, now)
        return RescoreReport(examined=len(due), changed=len(changed))
