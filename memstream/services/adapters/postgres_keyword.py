"""The keyword search statement of the read side (``PostgresMemoryQueries.keyword_search``).

Candidates come from three indexes (the 'simple' tsvector, which since migration 0005 also sees
words written between Chinese characters; pg_trgm on ``search_text`` for the exact terms the
parser cannot keep whole; CJK uni/bigrams from migration 0002, since the tsvector does not
segment Chinese), then only those candidates are scored by the weighted fraction of query terms
they contain, each term weighed by its rarity in the tenant (``term_weights``). ``filters`` is
the tenant, entity, time and status filter every statement of the read side shares. SQL is built
with ``psycopg.sql`` composition and parameters, never by formatting user text. Pure statement
building: no connection here. Must not import handlers or streams.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from memstream.services.adapters.vector_common import wellformed_ids
from memstream.services.domain.lexicon import exact_terms
from memstream.services.domain.text import SAFE_PREFIX, inflections, stem
from memstream.services.ports import VectorFilter

EXACT_WEIGHT = 3
WORD_WEIGHT = 1
CJK_WEIGHT = 1
# Candidates: exact terms always, then words and grams from the rarest up while their versions
# add up to at most this (without an exact term, the rarest always). Every term is scored.
BROAD_AFTER = 1_000
FREQUENCY_TTL_S = 300.0  # how long a term's frequency in a tenant is reused
FREQUENCY_CACHE_SIZE = 50_000  # (tenant, term) pairs kept

# Han (with extension A and compatibility ideographs), Hiragana, Katakana, Hangul syllables.
# Must stay equal to the ranges of cjk_grams() in ops/migrations/0002_cjk_grams.sql.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A word: letters and digits (not CJK), hyphenated parts kept together ("usb-c", "xr-500").
WORD = re.compile(f"[^\\W_{_CJK}]+(?:-[^\\W_{_CJK}]+)*")
_ASCII_ALNUM = re.compile(r"[a-z0-9]")
_LETTERS = re.compile(r"[a-z]+")
_STOP_TEXT = (
    "a an and are as at be been but by can could did do does for from had has have how i if in"
    " into is it its me my of on or our so than that the their them then there these they this"
    " those to us was we were what when where which who why will with would you your"
    " he she him her his hers himself herself"  # pronouns say nothing of a memory's topic
)
_STOP_WORDS = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True, slots=True)
class Term:
    """One distinct query term: lower-cased text, weight, and how it is matched.

    ``exact``: an exact attribute, which counts only where it does not sit inside a longer
    ASCII word or number ("xr-500" is not found in "xr-5000"); ``gram``: a CJK uni/bigram,
    searched through the ``cjk_grams`` index; ``prefix``: the stem of an English word
    (``text.stem``), which counts where a word starts with it ("paint" in "painted");
    ``forms``: for a stem too short to be a safe prefix, the whole words that count
    (``text.inflections``: "go", "goes", "going" — not "gold").
    """

    text: str
    weight: int
    exact: bool = False
    gram: bool = False
    prefix: bool = False
    forms: tuple[str, ...] = ()

    @property
    def tsquery(self) -> str | None:
        """The term as ``to_tsquery`` text (letters only, so safe in its syntax), or None
        for a term searched another way."""
        if self.prefix:
            return f"{self.text}:*"
        if self.forms:
            return " | ".join(self.forms)
        return None


def _grams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def query_terms(query: str) -> list[Term]:
    """The distinct terms of ``query``, in order of discovery: words (letters/digits, minus
    stop words and one-character tokens; hyphenated ones whole and split; a word of English
    letters as its stem, searched as a word prefix, unless it is an exact term), the bigrams of
    each CJK run (the character itself for a one-character run), and ``lexicon.exact_terms``.
    A term found by several rules keeps the highest weight and every way of matching; two
    forms of one word ("paint", "painting") are one term."""
    lowered = query.lower()
    exact = [raw.lower().strip() for raw in exact_terms(query)]
    found: dict[str, Term] = {}

    def add(term: Term) -> None:
        seen = found.get(term.text)
        if seen is not None:
            term = Term(
                term.text,
                max(seen.weight, term.weight),
                exact=seen.exact or term.exact,
                gram=seen.gram or term.gram,
                prefix=seen.prefix or term.prefix,
                forms=tuple(dict.fromkeys((*seen.forms, *term.forms))),
            )
        found[term.text] = term

    for match in WORD.finditer(lowered):
        word = match.group(0)
        for token in (word, *(word.split("-") if "-" in word else ())):
            if len(token) < 2 or token in _STOP_WORDS:
                continue
            if token in exact or not _LETTERS.fullmatch(token):
                add(Term(token, WORD_WEIGHT))
            elif len(stem(token)) >= SAFE_PREFIX:
                add(Term(stem(token), WORD_WEIGHT, prefix=True))
            else:
                add(Term(stem(token), WORD_WEIGHT, forms=inflections(token)))
    for run in _CJK_RUN.findall(lowered):
        for gram in _grams(run):
            add(Term(gram, CJK_WEIGHT, gram=True))
    for text in exact:
        if text:
            add(Term(text, EXACT_WEIGHT, exact=True))
    return list(found.values())


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _word_start_regex(term: str, forms: Sequence[str] = ()) -> str:
    """A POSIX regex (ARE) matching ``term`` (ASCII letters) at the start of a word, or, given
    its ``forms``, any of them as a whole word."""
    if forms:
        return "(?:^|[^a-z0-9])(?:" + "|".join(forms) + ")(?:$|[^a-z0-9])"
    return "(?:^|[^a-z0-9])" + term


def _bounded_regex(term: str) -> str:
    """A POSIX regex (ARE) matching ``term`` literally, not inside a longer ASCII word."""
    body = "".join(c if c.isalnum() else "\\" + c for c in term)
    head = "(?:^|[^a-z0-9])" if _ASCII_ALNUM.fullmatch(term[0]) else ""
    tail = "(?:$|[^a-z0-9])" if _ASCII_ALNUM.fullmatch(term[-1]) else ""
    return head + body + tail


def filters(tenant_id: str, flt: VectorFilter, params: dict[str, Any]) -> list[sql.Composable]:
    """The WHERE conditions for ``flt`` (semantics of ``memstream.services.ports.VectorFilter``)."""
    params["tenant"] = tenant_id
    conds: list[sql.Composable] = [sql.SQL("tenant_id = %(tenant)s AND op = 'UPSERT'")]
    if flt.as_of is not None:  # as_of overrides current_only: a past version may be the answer
        params["as_of"] = flt.as_of
        conds.append(
            sql.SQL("valid_from <= %(as_of)s AND (valid_to IS NULL OR valid_to > %(as_of)s)")
        )
    elif flt.current_only:
        conds.append(sql.SQL("is_current"))
    if flt.anchors:
        params["anchors"] = list(flt.anchors)
        conds.append(sql.SQL("anchors && %(anchors)s::text[]"))
    if flt.ids:
        params["ids"] = wellformed_ids(flt.ids)
        conds.append(sql.SQL("version_id = ANY(%(ids)s::uuid[])"))
    if flt.window is not None:
        params["w_from"], params["w_to"] = flt.window
        conds.append(sql.SQL("occurred_at BETWEEN %(w_from)s AND %(w_to)s"))
    if flt.fact_types:
        params["fact_types"] = list(flt.fact_types)
        conds.append(sql.SQL("fact_type = ANY(%(fact_types)s::text[])"))
    if flt.exclude_statuses:
        params["statuses"] = list(flt.exclude_statuses)
        conds.append(sql.SQL("status <> ALL(%(statuses)s::text[])"))
    return conds


def _needs_trigrams(term: str) -> bool:
    """Whether an exact term needs the trigram index: one the text-search parser cannot keep
    whole (a phrase, a quoted string with spaces or symbols). A word-shaped term — a colour,
    "hdmi", an id such as "xr-500" or "c-12" — is left to the tsvector, which since migration
    0005 also finds it between Chinese words; ILIKE for those made the planner scan the whole
    tenant wherever pg_trgm could not serve the pattern. pg_trgm needs three characters."""
    return len(term) >= 3 and WORD.fullmatch(term) is None


def generators(
    terms: Sequence[Term], frequencies: Mapping[str, int], budget: int = BROAD_AFTER
) -> list[Term]:
    """The terms whose matches become candidates: every exact term, then words and grams from
    the rarest up (unknown frequencies first) while their frequencies add up to at most
    ``budget``. Without an exact term the rarest word or gram is always taken, so that a query
    of broad words still finds the versions that contain all of them."""
    chosen = [t for t in terms if t.exact]
    loose = sorted(
        (t for t in terms if not t.exact), key=lambda t: (frequencies.get(t.text, 0), t.text)
    )
    spent = 0
    for term in loose:
        spent += frequencies.get(term.text, 0)
        if spent > budget and chosen:
            break
        chosen.append(term)
    return chosen


def _candidates(
    terms: Sequence[Term], filters: sql.Composable, params: dict[str, Any]
) -> list[sql.Composable]:
    """One SELECT per index, each excluding the rows of the ones before, so that they can be
    appended without de-duplication: the tsvector for words, pg_trgm for exact terms, the CJK
    gram index for CJK terms. Separate statements keep each on its index (one OR would let a
    misestimate scan the whole tenant and evaluate every condition on every row)."""
    conditions: list[sql.Composable] = []
    words = [t.text for t in terms if t.tsquery is None and WORD.fullmatch(t.text)]
    stems = [t.tsquery for t in terms if t.tsquery is not None]
    queries: list[sql.Composable] = []
    if words:
        params["tsq"] = " or ".join(words)
        queries.append(sql.SQL("websearch_to_tsquery('simple', %(tsq)s)"))
    if stems:  # letters only (query_terms), so safe in to_tsquery's syntax
        params["stems"] = " | ".join(stems)
        queries.append(sql.SQL("to_tsquery('simple', %(stems)s)"))
    if queries:
        conditions.append(sql.SQL("tsv @@ ({})").format(sql.SQL(" || ").join(queries)))
    likes = [_like_pattern(t.text) for t in terms if t.exact and _needs_trigrams(t.text)]
    if likes:
        params["likes"] = likes
        conditions.append(sql.SQL("search_text ILIKE ANY(%(likes)s::text[])"))
    grams = [t.text for t in terms if t.gram]
    if grams:
        params["grams"] = grams
        conditions.append(sql.SQL("cjk_grams(search_text) && %(grams)s::text[]"))
    return [
        sql.SQL("SELECT version_id, search_text FROM memory_versions WHERE {}").format(
            sql.SQL(" AND ").join(
                [filters, condition, *(sql.SQL("NOT ({})").format(c) for c in conditions[:i])]
            )
        )
        for i, condition in enumerate(conditions)
    ]


def _needs_full_lower(term: Term) -> bool:
    # lt is search_text with only its ASCII letters lower-cased (cheap); lf, lower() of it all,
    # is needed only for a term with non-ASCII letters that have case ("größe", "дом").
    return not term.text.isascii() and term.text.upper() != term.text


def _found(term: Term, weight: float, i: int, params: dict[str, Any]) -> sql.Composable:
    """``weight`` if the candidate contains ``term``, else 0."""
    column = sql.Identifier("lf" if _needs_full_lower(term) else "lt")
    params[f"t{i}"] = term.text
    test = sql.SQL("strpos({}, {}) > 0").format(column, sql.Placeholder(f"t{i}"))
    if (term.prefix or term.forms) and not term.exact:
        params[f"r{i}"] = _word_start_regex(term.text, term.forms)
        test = sql.SQL("{} AND {} ~ {}").format(test, column, sql.Placeholder(f"r{i}"))
    if term.exact:
        params[f"r{i}"] = _bounded_regex(term.text)
        test = sql.SQL("{} AND {} ~ {}").format(test, column, sql.Placeholder(f"r{i}"))
    return sql.SQL("CASE WHEN {} THEN {} ELSE 0 END").format(test, sql.Literal(weight))


def rarity(frequency: int, broad_after: int = BROAD_AFTER) -> float:
    """How much finding a word or gram says, from the versions of the tenant that contain it
    (counted up to ``broad_after`` + 1): ``ln(1 + broad_after / (frequency + 0.5))``, the
    inverse document frequency of BM25 with the broad-term cap standing in for the collection
    size. A word in 2 versions weighs 6.0, in 300 weighs 1.5 (a speaker's name in every one of
    their turns), in more than ``broad_after`` 0.69 ("customer", "order"): it still counts."""
    counted = min(max(0, frequency), broad_after + 1)  # what the counts are capped at
    return math.log1p(broad_after / (counted + 0.5))


def term_weights(
    terms: Sequence[Term], frequencies: Mapping[str, int] | None, broad_after: int = BROAD_AFTER
) -> list[float]:
    """Each term's weight in the score: without frequencies its base weight (exact 3, word or
    gram 1); with them, a word or gram weighs its ``rarity`` and an exact term (an id, a
    model number, a colour: never broad by intent) ``EXACT_WEIGHT`` times the rarity of a term
    found nowhere else."""
    if frequencies is None:
        return [float(t.weight) for t in terms]
    rarest = rarity(0, broad_after)

    def weight(term: Term) -> float:
        if term.exact:
            return EXACT_WEIGHT * rarest
        frequency = frequencies.get(term.text)
        if frequency == 0:
            return 0.0
        return term.weight * rarity(frequency or 0, broad_after)

    return [weight(t) for t in terms]


@dataclass(frozen=True, slots=True)
class Search:
    """A keyword-search statement: rows (version_id, found weight), best first."""

    statement: sql.Composed
    params: dict[str, Any]
    total: float  # the weight of every term: score = found / total


def build_search(
    tenant_id: str,
    query: str,
    flt: VectorFilter,
    limit: int,
    frequencies: Mapping[str, int] | None = None,
    budget: int = BROAD_AFTER,
    *,
    narrowed: bool = False,
) -> Search | None:
    """The keyword-search statement for ``query``; None when there is nothing to search.
    ``frequencies`` (versions of the tenant per term) weigh the terms (``term_weights``) and,
    unless the filter is ``narrowed`` (anchors, a time window: it finds the candidates
    itself), select the terms that make candidates (``generators`` within ``budget``);
    without them every term does, each at its base weight.

    Exposed so that tests can EXPLAIN it.
    """
    terms = query_terms(query)
    if not terms or limit <= 0:
        return None
    params: dict[str, Any] = {"limit": limit}
    where = sql.SQL(" AND ").join(filters(tenant_id, flt, params))
    select = frequencies is not None and not narrowed
    chosen = generators(terms, frequencies or {}, budget) if select else terms
    if flt.ids:
        # A few known rows: read them by primary key and score them, not through the term
        # indexes (a broad word's postings would be walked for rows the ids already name).
        candidates: list[sql.Composable] = [
            sql.SQL("SELECT version_id, search_text FROM memory_versions WHERE {}").format(where)
        ]
    else:
        candidates = _candidates(chosen, where, params)
    if not candidates:
        return None
    weights = term_weights(terms, frequencies, budget)
    found = sql.SQL(" + ").join(
        _found(term, weight, i, params)
        for i, (term, weight) in enumerate(zip(terms, weights, strict=True))
    )
    # OFFSET 0 keeps the candidates from being flattened into the scoring, so that the texts
    # are lower-cased once per row; ordering by the output column computes the sum once.
    # Rows found by an index but scoring 0 sort last and are dropped by the caller.
    statement = sql.SQL(
        "SELECT version_id::text AS id, {found} AS found FROM ("
        ' SELECT version_id, (lower(search_text COLLATE "C")) COLLATE "default" AS lt,'
        " {lf} AS lf FROM ({candidates}) AS u OFFSET 0"
        ") AS c ORDER BY found DESC, version_id LIMIT %(limit)s"
    ).format(
        found=found,
        lf=sql.SQL("lower(search_text)" if any(map(_needs_full_lower, terms)) else "NULL::text"),
        candidates=sql.SQL(" UNION ALL ").join(candidates),
    )
    return Search(statement, params, sum(weights))
