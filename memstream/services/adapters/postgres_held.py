"""PostgresHeldTerms: which of a question's words the asker's own memories hold, in one statement.

Implements ``services.ports.HeldTerms`` for the gate (``gating``, rule 5a). The asker's memories
are the UPSERT versions of the tenant whose ``anchors`` share one of the filter's anchors (the
GIN index on ``anchors``, scoped by tenant_id), at most ``OWN_CAP`` of them; each term is
matched as keyword search matches it (``postgres_queries.query_terms``: an English word by its
stem as a word prefix in the tsvector — "return" finds "returned" —, a stem under four letters
by its inflected whole words, a CJK gram as a substring of the searchable text) and counted
with ``count(*) FILTER``, next to how many memories were looked at. Without anchors nothing is
counted: this look is never tenant-wide.
SQL is composed with ``psycopg.sql`` and parameters. Driver errors become ``TransientError`` /
``AdapterError`` (``postgres.translate``). Must not import handlers or streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memstream.services.adapters.postgres_keyword import Term, filters, query_terms
from memstream.services.adapters.postgres_rows import translate
from memstream.services.ports import TermCounts, VectorFilter

# The asker's memories looked at: a person's own records are tens to hundreds; the cap bounds
# the statement for an anchor that holds a whole conversation.
OWN_CAP = 2_000
MAX_TERMS = 32  # a question's content words looked up (a longer text is not a question)


def _term(word: str) -> Term | None:
    """The keyword search's term for one content word or gram (its first, whole-word one)."""
    found = query_terms(word)
    return found[0] if found else None


def _holds(term: Term, i: int, params: dict[str, Any]) -> sql.Composable:
    """The condition "this version holds ``term``"."""
    key = f"h{i}"
    if term.gram:
        params[key] = term.text
        return sql.SQL("strpos(search_text, {}) > 0").format(sql.Placeholder(key))
    if term.tsquery is not None:  # letters only (query_terms): safe in to_tsquery's syntax
        params[key] = term.tsquery
        return sql.SQL("tsv @@ to_tsquery('simple', {})").format(sql.Placeholder(key))
    params[key] = term.text
    return sql.SQL("tsv @@ websearch_to_tsquery('simple', {})").format(sql.Placeholder(key))


def build_held(
    tenant_id: str, words: Sequence[str], flt: VectorFilter, cap: int = OWN_CAP
) -> tuple[sql.Composed, dict[str, Any], list[str]] | None:
    """The statement, its parameters and the words its columns count (in order, after the
    first column: the memories looked at); None without anchors. Exposed so that tests can
    EXPLAIN it."""
    if not flt.anchors:
        return None
    terms: list[tuple[str, Term]] = []
    for word in dict.fromkeys(words):
        term = _term(word)
        if term is not None:
            terms.append((word, term))
        if len(terms) >= MAX_TERMS:
            break
    params: dict[str, Any] = {"cap": cap}
    where = sql.SQL(" AND ").join(filters(tenant_id, flt, params))
    counts = sql.SQL(", ").join(
        [
            sql.SQL("count(*)"),
            *(
                sql.SQL("count(*) FILTER (WHERE {})").format(_holds(term, i, params))
                for i, (_, term) in enumerate(terms)
            ),
        ]
    )
    statement = sql.SQL(
        "SELECT {counts} FROM (SELECT tsv, search_text FROM memory_versions WHERE {where}"
        " LIMIT %(cap)s) AS own"
    ).format(counts=counts, where=where)
    return statement, params, [word for word, _ in terms]


class PostgresHeldTerms:
    """``HeldTerms`` over the repository's pool (tenant- and anchor-scoped, read only)."""

    def __init__(self, pool: AsyncConnectionPool[Any], *, cap: int = OWN_CAP) -> None:
        self._pool = pool
        self._cap = cap

    async def held_terms(
        self, tenant_id: str, terms: Sequence[str], flt: VectorFilter
    ) -> TermCounts:
        built = build_held(tenant_id, terms, flt, self._cap)
        if built is None:
            return TermCounts(0, {})
        statement, params, words = built
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(statement, params, prepare=False)
                row = await cur.fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, f"looking up the asker's words in tenant {tenant_id!r}") from exc
        if row is None:
            return TermCounts(0, {})
        held = {word: int(count) for word, count in zip(words, row[1:], strict=True)}
        return TermCounts(int(row[0]), held)
