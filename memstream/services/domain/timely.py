"""The time a question asks about: the latest or the earliest of something, or a named period.

Both rules act on ``final`` like the others (``yielding``) and are recorded in the result's
``factors``. Both work on the question's *subject*: the memories about the focus when one is in
focus (``context.active_entities``), else those bound to the user (a request with a ``user_id``
or a customer anchor) or to the user's entities. A request with neither has no subject: the
ordinal then orders only one memory's versions (an ordinal inside a story — "his first
tournament" — is not an order of records), and a period acts among all the results, only when
some of them happened in it (a year inside a story — "in 1998 he moved" — matches no record's
time, and changes nothing).

- **ordinal** (``by_time``): a question asking for the latest ("last time", "most recent",
  "上次", "最近") or the earliest ("first", "最早", "第一次") orders the memories that match it
  by time: each matching memory yields to every matching memory nearer the asked end (newest
  first for latest, oldest first for earliest). The question's *subject words* are its content
  words without the ordinal and time words and without the words that name a kind of record
  among the subject's memories (their fact types: "order" for orders — every order holds it;
  "the last keyboard I ordered" is told by "keyboard"); words compare by their stems ("rented"
  and "rent"). Of the subject's memories, those sharing a subject word when any do; of those,
  the *matching* ones are the memories of the fact type of the most relevant one (the kind of
  record asked about: views, orders, complaints; among the records of the kind the question
  names, when it names one and the subject has them, whatever their fact types in its family:
  "what did I buy last?" asks the orders and purchases)
  at least ``ORDINAL_SHARE`` (a third) as relevant as it — and when the question also names
  a period, those of them that happened in it (when any did). Any other memory that shares no
  subject word yields to the matching ones.
  Why: decay alone cannot answer "first"; "last" among records of one kind is a question of
  time, not of wording (the user's view of last week is "the headphones I looked at last
  time", however much closer an older view's text is to the question); the air purifier
  ordered yesterday is not "the last keyboard I ordered" although its record says "order";
  and a fresh record with no word of the question (a shipment for "the earbuds I looked at")
  is not it. With no subject (no user, no focus), the question is about one memory's history
  ("the original price of the AX-310"): the versions of the most relevant memory among the
  results are ordered by the time each became valid (the search adds each memory's first
  version for an "earliest" question); when that memory is about an id or model the question
  names and has no other version among them, the memories of its entity and fact type are
  ordered instead ("the latest stock of the AX-310": stock updates published one by one).
- **period** (``period_first``): a question that names a period ("in 2024", "last year", "in
  May", "上个月", "2025年", "1月"; ``periods.read_period``, in ``QuestionReading.period``) asks
  what happened then (with no subject, among all the results: "what did 吕海燕 return in
  November?" names its customer in words). The *leaders* are the subject's memories that
  happened in the period
  (``occurred_at`` within it) — those sharing a subject word (as for the ordinal) when any do.
  Every other memory of the subject yields to them when it is of a leader's fact type (another
  order, bought another year) or shares no word with the question's subject (a profile note
  for "the keyboard I bought in January"); one of a leader's fact type whatever its relevance
  when the question has a subject and the period is what picked the leaders (they share the
  subject's words; or an entity in focus is the subject; or no memory of it shares its words:
  "what was done on it in January?", "上个月那笔订单"), else when they are at least half as
  relevant. When the question also names a kind of record (and leaders are of it) or has an
  entity in focus, a memory outside the subject, not of that kind and not of that time (a
  notice whose digits look like the date) yields to them as well, whatever its relevance.
  Why: "which rice cooker did I buy in 2024?" is answered by the order of 2024, and the fresher
  order of 2025 for another rice cooker, its words as close, is the wrong one: decay favours it,
  so only the named period can put it below. Versioned memory is answered as of the period already
  (``periods.valid_time``); this rule orders *different* memories by whether they happened in it.

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstream.services.domain.kinds import named_fact_types, of_fact_types
from memstream.services.domain.lexicon import content_terms
from memstream.services.domain.query import ScoredResult
from memstream.services.domain.reading import EARLIEST, LATEST, QuestionReading
from memstream.services.domain.text import stem
from memstream.services.domain.yielding import (
    about_focus,
    about_named,
    described,
    yield_to,
    yielded,
)

ORDINAL_SHARE = 1 / 3
ORDINAL = "ordinal"
PERIOD = "period"

_SUBJECT_KINDS = frozenset({"exact", "fuzzy", "user_entity"})


def in_focus(results: Sequence[ScoredResult], reading: QuestionReading) -> bool:
    """Whether the subject is the focus: an entity in focus that some result is about."""
    focus = tuple(a for a in reading.focus if a.type.strip().casefold() not in ("user", "customer"))
    return bool(focus) and any(about_focus(r.candidate, focus) for r in results)


def subject_of(
    results: Sequence[ScoredResult], reading: QuestionReading, user: bool
) -> list[ScoredResult]:
    """The memories whose time the question asks about: about the focus when one is in focus,
    else bound to the user (or to the user's entities); none without either."""
    focus = tuple(a for a in reading.focus if a.type.strip().casefold() not in ("user", "customer"))
    pool = [r for r in results if focus and about_focus(r.candidate, focus)]
    if not pool and user:
        pool = [r for r in results if r.binding_kind in _SUBJECT_KINDS]
    return pool


def _stems(terms: frozenset[str]) -> frozenset[str]:
    """Terms with the stems of their parts: "rented" and "e-bike" share "rent" and "bike"."""
    out = set(terms)
    for term in terms:
        out.update(stem(part) for part in re.split(r"[-_']", term) if len(part) >= 3)
    return frozenset(out)


# Kinds of product, each with the names a question may use for it in either language: "耳机"
# asks about the record that says "earbuds". The terms are compared as ``content_terms`` gives
# them (Chinese as character pairs).
_PRODUCT_KINDS = (
    ("earbuds", "earbud", "earphones", "earphone", "headphones", "headphone", "headset", "耳机"),
    ("phone", "smartphone", "mobile", "手机"),
    ("laptop", "notebook", "笔记本", "电脑"),
    ("watch", "smartwatch", "手表"),
    ("speaker", "speakers", "音箱", "音响"),
    ("charger", "充电器", "充电头"),
    ("keyboard", "键盘"),
    ("mouse", "鼠标"),
    ("tablet", "平板"),
    ("camera", "相机"),
    ("monitor", "display", "显示器"),
    ("vacuum", "吸尘器"),
    ("kettle", "水壶"),
    ("shoes", "sneakers", "trainers", "鞋子", "跑鞋"),
    ("jacket", "coat", "夹克", "外套"),
    ("backpack", "背包"),
    ("television", "tv", "电视"),
    ("tent", "tents", "帐篷"),
    ("bicycle", "bike", "自行车", "单车"),
    ("printer", "打印机"),
    ("router", "路由器"),
    ("blender", "搅拌机"),
)  # fmt: skip
_KIND_OF_TERM = {
    term: index
    for index, names in enumerate(_PRODUCT_KINDS)
    for name in names
    for term in (content_terms(name) or {name})
}
# The Chinese names of kinds of record (fact types by their parts): they name the kind, not
# one record of it, as "order" does.
KIND_NAMES_ZH = {
    "order": ("订单", "下单", "购买", "买的", "买了", "买过"),
    "purchase": ("购买", "买的"),
    "view": ("浏览", "看过", "看的", "查看"),
    "page": ("浏览", "页面"),
    "browsing": ("浏览", "看过", "看的"),
    "complaint": ("投诉",),
    "ticket": ("工单",),
    "return": ("退货",),
    "refund": ("退款",),
    "shipment": ("物流", "快递", "发货"),
    "delivery": ("配送", "送货", "快递"),
    "review": ("评价", "评论"),
}


def _product_kinds(terms: frozenset[str]) -> frozenset[int]:
    return frozenset(_KIND_OF_TERM[t] for t in terms if t in _KIND_OF_TERM)


def _shares(result: ScoredResult, words: frozenset[str]) -> bool:
    """Whether a memory shares the subject's words: a word, or the kind of product; not when
    both name kinds of product and none is the same (the rain jacket for "the tent with a rain
    fly" shares "rain", and is another thing)."""
    said = _stems(content_terms(described(result.candidate)))
    asked, named = _product_kinds(words), _product_kinds(said)
    if asked and named:
        return bool(asked & named)
    return bool(words & said)


def _in_period(result: ScoredResult, reading: QuestionReading) -> bool:
    if reading.period is None:
        return False
    start, end = reading.period
    return start <= result.candidate.occurred_at < end


def period_first(
    results: Sequence[ScoredResult], reading: QuestionReading, user: bool = True
) -> list[ScoredResult]:
    """The period rule of the module docstring; ``user``: the request names its user."""
    if reading.period is None or not results:
        return list(results)
    own = subject_of(results, reading, user)
    pool = own or list(results)
    inside = [r for r in pool if _in_period(r, reading)]
    if not inside:
        return list(results)
    words = _stems(reading.subject_terms) - _kind_words(pool)
    sharing = [r for r in inside if _shares(r, words)]
    leaders = sharing or inside
    chosen = {r.candidate.version_id for r in leaders}
    kinds = {r.candidate.fact_type.casefold() for r in leaders}
    subject = {r.candidate.version_id for r in pool}
    focused = in_focus(results, reading)
    # With a subject, the period is what picks the leaders (they share what the question names,
    # the focus names the entity, or the question's other words tell no memory apart): another
    # record of their kind at another time yields whatever its relevance.
    picked = bool(own) and (bool(sharing) or focused or not any(_shares(r, words) for r in pool))

    def yields(result: ScoredResult) -> bool:
        c = result.candidate
        if c.version_id in chosen or c.version_id not in subject:
            return False
        return c.fact_type.casefold() in kinds or not _shares(result, words)

    def same_kind(result: ScoredResult) -> bool:
        return yields(result) and result.candidate.fact_type.casefold() in kinds

    leads = lambda r: r.candidate.version_id in chosen  # noqa: E731
    out = yield_to(results, PERIOD, leads=leads, yields=same_kind, share=0.0) if picked else results
    out = yield_to(out, PERIOD, leads=leads, yields=yields)
    named = named_fact_types(reading.text)
    if not picked or not (named or focused):
        return out
    # "上个月那笔订单", "这块表9月的读数": the subject's records (of the kind named), in the period,
    # before what is neither the subject's, of that kind nor of that time (a notice that shares
    # the digits).
    records = {r.candidate.version_id for r in leaders if not named or of_fact_types(r, named)}
    return yield_to(
        out,
        PERIOD,
        leads=lambda r: r.candidate.version_id in records,
        yields=lambda r: (
            r.candidate.version_id not in subject
            and not (named and of_fact_types(r, named))
            and not _in_period(r, reading)
        ),
        share=0.0,
    )


def _kind_words(pool: Sequence[ScoredResult]) -> frozenset[str]:
    """The words that name the kinds of record in ``pool`` (its fact types: "order",
    "page_view" → "page", "view"), stemmed: they do not tell one record of a kind from another."""
    names = {r.candidate.fact_type.casefold() for r in pool}
    parts = frozenset(part for name in names for part in re.split(r"[\W_]+", name) if part)
    chinese = {
        term
        for part in parts
        for word in KIND_NAMES_ZH.get(part, ())
        for term in content_terms(word)
    }
    return _stems(parts) | frozenset(chinese)


def by_time(
    results: Sequence[ScoredResult], reading: QuestionReading, user: bool = True
) -> list[ScoredResult]:
    """The ordinal rule of the module docstring; ``user``: the request names its user."""
    if reading.ordinal not in (LATEST, EARLIEST) or not results:
        return list(results)
    pool = subject_of(results, reading, user)
    if not pool:
        return _versions_of_one(results, reading)
    words = _stems(reading.subject_terms) - _kind_words(pool)
    sharing = [r for r in pool if _shares(r, words)]
    base = sharing or pool
    named = named_fact_types(reading.text)  # "what did I buy last?": the orders
    records = [r for r in base if of_fact_types(r, named)] or [
        r for r in pool if of_fact_types(r, named)
    ]
    base = records or base
    lead = max(base, key=lambda r: r.scores.fused)
    kind = lead.candidate.fact_type.casefold()
    matching = [
        r
        for r in base
        if (records or r.candidate.fact_type.casefold() == kind)  # the kind named: one family
        and r.scores.fused >= ORDINAL_SHARE * lead.scores.fused
    ]
    matching = [r for r in matching if _in_period(r, reading)] or matching
    return _chained(results, matching, reading, words)


def _versions_of_one(
    results: Sequence[ScoredResult], reading: QuestionReading
) -> list[ScoredResult]:
    """No subject: the versions of the most relevant memory, when it has several among the
    results ("the original price of the AX-310"), ordered by the time each became valid."""
    lead = max(results, key=lambda r: r.scores.fused)
    versions = [r for r in results if r.candidate.memory_key == lead.candidate.memory_key]
    if len(versions) < 2 and about_named(lead.candidate, reading):
        c = lead.candidate  # updates published as memories of their own: same entity and fact
        versions = [
            r
            for r in results
            if (r.candidate.entity_type, r.candidate.entity_id) == (c.entity_type, c.entity_id)
            and r.candidate.fact_type.casefold() == c.fact_type.casefold()
        ]
    if len(versions) < 2:
        return list(results)
    chain = sorted(
        versions,
        key=lambda r: (r.candidate.valid_from, r.candidate.version_id),
        reverse=reading.ordinal == LATEST,
    )
    placed = _in_order(chain)
    return [placed.get(r.candidate.version_id, r) for r in results]


def _in_order(chain: Sequence[ScoredResult]) -> dict[str, ScoredResult]:
    """Each result of ``chain`` placed below every one before it (by version id)."""
    placed: dict[str, ScoredResult] = {}
    ceiling: float | None = None
    for result in chain:
        if ceiling is not None:
            result = yielded(result, ceiling, ORDINAL)
        placed[result.candidate.version_id] = result
        ceiling = result.scores.final if ceiling is None else min(ceiling, result.scores.final)
    return placed


def _chained(
    results: Sequence[ScoredResult],
    matching: Sequence[ScoredResult],
    reading: QuestionReading,
    words: frozenset[str],
) -> list[ScoredResult]:
    chain = sorted(
        matching,
        key=lambda r: (r.candidate.occurred_at, r.candidate.version_id),
        reverse=reading.ordinal == LATEST,
    )
    placed = _in_order(chain)
    out = [placed.get(r.candidate.version_id, r) for r in results]
    chosen = set(placed)
    return yield_to(
        out,
        ORDINAL,
        leads=lambda r: r.candidate.version_id in chosen,
        yields=lambda r: r.candidate.version_id not in chosen and not _shares(r, words),
    )
