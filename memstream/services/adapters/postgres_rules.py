"""PostgresRules: per-tenant rules that change at run time, and materialised time scores.

``tenant_rules`` holds half-lives (seconds, per fact type) and authorities (per source); the
query path reads them on every uncached retrieval and the rescoring timer once per tenant per
run, so a change takes effect without a restart (no in-process cache: a reply computed with
stale rules could otherwise be cached again after the tenant's replies were invalidated).
``version_scores`` holds the state (and the recency at that moment) of the current versions
whose state the clock changed, as last rescored; writes are guarded (compare-and-set on
``scored_at``) so several workers may rescore at once.
Must not import handlers or streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.services.adapters.postgres_rows import VERSION_COLUMNS, row_to_version, translate
from memstream.services.domain.model import MemoryVersion
from memstream.services.domain.rescoring import TimeScores
from memstream.services.domain.trust import DEFAULT_STATE_RULES, StateRules
from memstream.services.ports import DueCursor, DueItem, DuePage

KINDS = ("half_life", "authority")
# The version columns of ``m`` (memory_versions) next to its scores.
_M_COLUMNS = sql.SQL(", ").join(
    sql.SQL("m." + column.strip()) for column in VERSION_COLUMNS.split(",")
)


_FIRST = DueCursor(0, datetime.min.replace(tzinfo=UTC), "00000000-0000-0000-0000-000000000000")
# How long before a pass's start a version recorded then may not have been committed yet: a
# pass ``since`` another reads the versions recorded from this much before it on (an ingest
# batch's transaction takes seconds). Each version recorded is read by about this over the
# timer's period passes more; a version committed later still waits for the next full pass.
RECORDED_SLACK = timedelta(minutes=2)


def _due_query(state: StateRules, arm: int) -> sql.Composed:
    """One arm of the current versions past a transition (``rescoring.transitions``) since they
    were last scored: 0, a ``valid_to`` passed; 1, an open matter past its escalation; 2 (only
    in a pass ``since`` another), either, among the versions recorded since. Each arm matches a
    partial index (migrations 0014, 0016: the same literals, so the planner can use it) and is
    read in that index's order from a cursor (``%(at)s``, ``%(id)s``): a pass reads each due
    version once, and the versions its earlier pages scored are behind the cursor, not read
    again page after page."""
    opened = sql.SQL(", ").join(sql.Literal(s) for s in sorted(state.open_statuses))
    escalating = sql.SQL(", ").join(sql.Literal(f) for f in sorted(state.escalating_fact_types))
    matter = sql.SQL(
        "lower(btrim(m.status)) IN ({opened}) AND lower(m.fact_type) IN ({escalating})"
    ).format(opened=opened, escalating=escalating)
    expired = sql.SQL(
        "m.valid_to IS NOT NULL AND m.valid_to <= %(now)s"
        " AND (s.scored_at IS NULL OR s.scored_at <= m.valid_to)"
    )
    escalated = sql.SQL(
        "{matter} AND m.occurred_at <= %(now)s - %(escalate)s"
        " AND (s.scored_at IS NULL OR s.scored_at <= m.occurred_at + %(escalate)s)"
    ).format(matter=matter)
    due: sql.Composable
    if arm == 0:
        key, due = sql.SQL("m.valid_to"), expired
    elif arm == 1:
        key, due = sql.SQL("m.occurred_at"), escalated
    else:  # recorded since: migration 0016's predicate, then either transition
        key = sql.SQL("m.recorded_at")
        due = sql.SQL(
            "(m.valid_to IS NOT NULL OR ({matter})) AND (({expired}) OR ({escalated}))"
        ).format(matter=matter, expired=expired, escalated=escalated)
    return sql.SQL(
        "SELECT {columns}, s.recency AS s_recency, s.state AS s_state,"
        " s.effective_status AS s_status, s.scored_at AS s_scored_at"
        " FROM memory_versions m LEFT JOIN version_scores s USING (version_id)"
        " WHERE m.is_current AND {due}"
        " AND {key} >= %(at)s AND ({key} > %(at)s OR m.version_id > %(id)s::uuid)"
        " ORDER BY {key}, m.version_id LIMIT %(limit)s"
    ).format(columns=_M_COLUMNS, due=due, key=key)


class PostgresRules:
    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def tenants(self) -> list[str]:
        """Every tenant with a memory (or rules set ahead of its first event)."""
        try:
            async with self._pool.connection() as conn:
                rows = await (await conn.execute("SELECT tenant_id FROM tenants")).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "reading the tenants") from exc
        return [str(r[0]) for r in rows]

    async def overrides(self, tenant_id: str) -> dict[str, dict[str, float]]:
        """{"half_life": {fact_type: seconds}, "authority": {source: value}} for the tenant."""
        try:
            async with self._pool.connection() as conn:
                rows = await (
                    await conn.execute(
                        "SELECT kind, name, value FROM tenant_rules WHERE tenant_id = %s",
                        (tenant_id,),
                    )
                ).fetchall()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"reading the rules of tenant {tenant_id!r}") from exc
        table: dict[str, dict[str, float]] = {kind: {} for kind in KINDS}
        for kind, name, value in rows:
            table[kind][name] = float(value)
        return table

    async def set_rule(self, tenant_id: str, kind: str, name: str, value: float) -> None:
        if kind not in KINDS:
            raise ValueError(f"rule kind {kind!r} is not one of {', '.join(KINDS)}")
        try:
            async with self._pool.connection() as conn:
                await conn.execute(
                    "INSERT INTO tenant_rules (tenant_id, kind, name, value)"
                    " VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (tenant_id, kind, name) DO UPDATE SET value = EXCLUDED.value,"
                    " updated_at = clock_timestamp()",
                    (tenant_id, kind, name.casefold(), value),
                )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"setting a rule of tenant {tenant_id!r}") from exc

    async def due(
        self,
        now: datetime,
        limit: int,
        after: DueCursor | None = None,
        since: datetime | None = None,
        state: StateRules = DEFAULT_STATE_RULES,
    ) -> DuePage:
        """Current versions with a state transition passed since they were last scored, from
        ``after`` on (None: from the start of a pass). ``since``: the start of a complete pass
        before this one — then only what fell due after it (each arm from there on) and what
        was recorded after it (``RECORDED_SLACK`` earlier: a batch is committed after its
        clock was read) is read, not every open matter the store holds."""
        cursor = after or _FIRST
        arms = (0, 1) if since is None else (0, 1, 2)
        floors = {} if since is None else {
            0: since, 1: since - state.escalate_after, 2: since - RECORDED_SLACK
        }  # fmt: skip
        rows: list[dict[str, Any]] = []
        try:
            async with self._pool.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                for arm in arms:
                    if arm < cursor.arm:
                        continue
                    start = cursor if arm == cursor.arm else _FIRST
                    if arm in floors and start.at < floors[arm]:
                        start = DueCursor(arm, floors[arm], _FIRST.version_id)
                    params = {"now": now, "escalate": state.escalate_after, "at": start.at,
                              "id": start.version_id, "limit": limit - len(rows)}  # fmt: skip
                    await cur.execute(_due_query(state, arm), params)
                    page = await cur.fetchall()
                    rows += page
                    if len(rows) == limit:
                        end = page[-1]
                        key = end[("valid_to", "occurred_at", "recorded_at")[arm]]
                        return DuePage(
                            _due_items(rows), DueCursor(arm, key, str(end["version_id"]))
                        )
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, "listing versions due for rescoring") from exc
        return DuePage(_due_items(rows), None)

    async def save(
        self, items: Sequence[tuple[MemoryVersion, TimeScores, datetime | None]], now: datetime
    ) -> set[str]:
        """Store the scores where ``scored_at`` is still what was read (another worker may have
        been first); returns the version_ids written."""
        scored = [(v, sc, seen) for v, sc, seen in items if seen is not None]
        fresh = [(v, sc) for v, sc, seen in items if seen is None]
        written: set[str] = set()
        try:
            async with self._pool.connection() as conn, conn.transaction():
                if scored:  # compare-and-set on scored_at: another worker may have been first
                    cur = await conn.execute(
                        "UPDATE version_scores AS s SET recency = u.recency, state = u.state,"
                        " effective_status = u.status, scored_at = %s"
                        " FROM unnest(%s::uuid[], %s::float8[], %s::float8[], %s::text[],"
                        " %s::timestamptz[]) AS u(id, recency, state, status, seen)"
                        " WHERE s.version_id = u.id AND s.scored_at = u.seen"
                        " RETURNING s.version_id::text",
                        (
                            now,
                            [v.version_id for v, _, _ in scored],
                            [sc.recency for _, sc, _ in scored],
                            [sc.state for _, sc, _ in scored],
                            [sc.effective_status for _, sc, _ in scored],
                            [seen for _, _, seen in scored],
                        ),
                    )
                    written |= {row[0] for row in await cur.fetchall()}
                if fresh:
                    cur = await conn.execute(
                        "INSERT INTO version_scores (version_id, tenant_id, recency, state,"
                        " effective_status, scored_at)"
                        " SELECT id, tenant, recency, state, status, %s FROM unnest(%s::uuid[],"
                        " %s::text[], %s::float8[], %s::float8[], %s::text[])"
                        " AS u(id, tenant, recency, state, status)"
                        " ON CONFLICT (version_id) DO NOTHING RETURNING version_id::text",
                        (
                            now,
                            [v.version_id for v, _ in fresh],
                            [v.tenant_id for v, _ in fresh],
                            [sc.recency for _, sc in fresh],
                            [sc.state for _, sc in fresh],
                            [sc.effective_status for _, sc in fresh],
                        ),
                    )
                    written |= {row[0] for row in await cur.fetchall()}
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"saving {len(items)} rescored versions") from exc
        return written


def _due_items(rows: list[dict[str, Any]]) -> list[DueItem]:
    return [
        (
            row_to_version(r),
            TimeScores(r["s_recency"], r["s_state"], r["s_status"])
            if r["s_scored_at"] is not None
            else None,
            r["s_scored_at"],
        )
        for r in rows
    ]
