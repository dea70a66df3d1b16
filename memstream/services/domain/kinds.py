"""Kinds of record a question names: "my order", "单子", "refund" — records first, notes after.

A question that names a kind of record a transaction leaves (an order, a return, a refund, a
complaint, a ticket, a delivery …; ``possession.transaction_named`` reads the words, in English
and Chinese) asks about records of that kind. Its *subject* is the memories it is about: those
about the focus (``context.active_entities``) when one is in focus, else those bound to the
user; with neither, every result. The records of the named kind among the subject *lead*
(a complaint and a ticket are one family: a complaint is filed as a ticket; a question about a
delivery with no shipment record among the subject is answered by the order, which carries
it), and (``named_kind_first``):

1. a memory of the subject that is no transaction record at all (a profile note, a preference,
   a page view, a chat message: its fact type names none of the kinds in ``KIND_FACT_TYPES``)
   yields to the leaders — whatever its relevance when it is bound to the user themselves (the
   user's own note says "delivery" as often as the question does), else when they are at least
   ``RELEVANCE_SHARE`` (half) as relevant — unless the question names notes themselves ("my
   preferences", "备注");
2. a record of another kind yields to the leaders at least half as relevant (whatever their
   relevance when an entity is in focus: the focused order's return is not what "the refund?"
   asks), except when the kind named is the order: "where is my order?" is answered by the
   order's shipment, a record of another kind about the same order;
3. with an entity in focus, a memory about none of the focused entities yields to the leaders,
   whatever its relevance: "and the tracking?" with an order in focus asks for that order's
   waybill, not for the delivery FAQ that repeats the word;
4. a delivery question ("where is my parcel?", "到哪了", "物流呢") with no ordinal and no period
   asks about the delivery under way: among the leaders, each yields to every newer leader at
   least half as relevant — the latest status update of a shipment, or the latest order when
   the order carries its delivery, not last year's delivered one that repeats more words;
5. in a question about the asker ("my warranty", "我的…保修"), a record of the kind anchored to
   no person (the product's standard warranty in the knowledge base) yields to the asker's
   own records of that kind at least half as relevant (the extended warranty in their
   contract): the question asks about theirs.

Why: "我的单子啥时候发" ("when does my order ship?") shares no word with the order record and, in
Chinese, the bundled English encoder finds the user's note "prefers weekday-evening delivery" as
close as the order; the question said which kind of record it is about. A question that asks
what a kind of source said ("what did I say in the chat about my warranty?": ``sources``) keeps
that source's memories where they are.

A question that names a kind of *fact* a catalogue keeps per product — its stock or its price
("is it in stock?", "how much is …", "库存", "多少钱"; ``named_fact_first``) — is answered by the
records of that fact type: a memory of another fact type about the same entity (a spec sheet or
a review that mentions a price) yields to them when they are at least half as relevant.

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from memstream.services.domain.periods import read_period
from memstream.services.domain.possession import transaction_named
from memstream.services.domain.query import ScoredResult
from memstream.services.domain.reading import ordinal_in
from memstream.services.domain.sources import asked_source_kinds, said_kind
from memstream.services.domain.yielding import RELEVANCE_SHARE, yield_to, yielded

KIND = "kind"

# The words of a question (as ``transaction_named`` returns them) → the kind, and each kind's
# fact-type names (a fact type is of a kind when one of its parts, split on "_", is listed).
_WORD_KINDS = {
    "order": "order", "orders": "order", "ordered": "order", "purchase": "order",
    "purchases": "order", "订单": "order", "单子": "order",
    "return": "return", "returns": "return", "退货": "return", "换货": "return",
    "exchange": "return",
    "refund": "refund", "refunds": "refund", "退款": "refund", "钱退": "refund", "退钱": "refund",
    "complaint": "complaint", "complaints": "complaint", "投诉": "complaint",
    "ticket": "ticket", "tickets": "ticket", "issue": "ticket", "工单": "ticket",
    "delivery": "shipment", "shipment": "shipment", "parcel": "shipment",
    "package": "shipment", "tracking": "shipment", "快递": "shipment", "物流": "shipment",
    "包裹": "shipment", "配送": "shipment", "到哪": "shipment", "到货": "shipment",
    "签收": "shipment", "什么时候到": "shipment", "ship": "shipment", "shipping": "shipment",
    "arrive": "shipment", "arrival": "shipment", "能到": "shipment", "哪天到": "shipment",
    "什么时候发": "shipment", "啥时候发": "shipment", "哪天发": "shipment", "发货": "shipment",
    "能发": "shipment", "我的单": "order", "那单": "order", "这单": "order", "退了": "return",
    "退过": "return",
    "waybill": "shipment", "运单": "shipment", "arrived": "shipment", "arriving": "shipment",
    "deliver": "shipment", "delivered": "shipment", "shipped": "shipment",
    "dispatched": "shipment", "没到": "shipment", "没收到": "shipment",
    "我的货": "shipment", "buy": "order", "bought": "order", "purchased": "order", "买了": "order",
    "买过": "order", "买的": "order", "约的": "booking", "约了": "booking", "约过": "booking",
    "退的": "return", "下单": "order", "下过": "order", "下的单": "order",
    "warranty": "warranty", "保修": "warranty", "repair": "repair", "维修": "repair",
    "invoice": "invoice", "发票": "invoice", "payment": "payment",
    "booking": "booking", "reservation": "booking", "预订": "booking", "预约": "booking",
    "subscription": "subscription",
}  # fmt: skip
KIND_FACT_TYPES = {
    "order": frozenset({"order", "purchase"}),
    "return": frozenset({"return", "exchange", "rma"}),
    "refund": frozenset({"refund"}),
    "complaint": frozenset({"complaint"}),
    "ticket": frozenset({"ticket", "issue", "case", "incident"}),
    "shipment": frozenset(
        {
            "shipment",
            "delivery",
            "logistics",
            "shipping",
            "tracking",
            "parcel",
            "waybill",
            "consignment",
            "courier",
            "dispatch",
            "fulfillment",
            "fulfilment",
        }
    ),
    "warranty": frozenset({"warranty", "contract"}),
    "repair": frozenset({"repair"}),
    "invoice": frozenset({"invoice", "bill", "billing"}),
    "payment": frozenset({"payment"}),
    "booking": frozenset({"booking", "reservation", "appointment"}),
    "subscription": frozenset({"subscription"}),
}
_ANY_KIND = frozenset().union(*KIND_FACT_TYPES.values())


def _parts(fact_type: str) -> frozenset[str]:
    return frozenset(p for p in re.split(r"[\W_]+", fact_type.casefold()) if p)


# "where is it now?", "where are they?", "where's my stuff": asked of a thing, a question about
# where it is is one about its delivery (not "where is it made / sold / from").
_WHEREABOUTS = re.compile(
    r"(?<![a-z])where(?:'s|\s+is|\s+are)\s+(?:it|they|them|that|this|those|these|(?:my|our)\s+"
    r"[a-z]+)(?:\s+(?:now|right\s+now|at\s+the\s+moment|currently|today))?\s*[?.!]*\s*$",
    re.IGNORECASE,
)


def named_kind(query: str) -> str | None:
    """The kind of record the question names ("order" for "我的单子啥时候发"; "shipment" for
    "where is it now?"), or None."""
    word = transaction_named(query)
    if word is not None:
        return _WORD_KINDS.get(word.casefold())
    return "shipment" if _WHEREABOUTS.search(query.strip()) else None


def named_fact_types(query: str) -> frozenset[str]:
    """The fact-type names of the kind of record the question names (empty for none)."""
    kind = named_kind(query)
    return _family(kind) if kind is not None else frozenset()


def of_fact_types(result: ScoredResult, names: frozenset[str]) -> bool:
    """Whether a memory's fact type is one of ``names`` (by its parts: "order_status")."""
    return bool(_parts(result.candidate.fact_type) & names)


def _family(kind: str) -> frozenset[str]:
    if kind in ("complaint", "ticket"):
        return KIND_FACT_TYPES["complaint"] | KIND_FACT_TYPES["ticket"]
    return KIND_FACT_TYPES[kind]


_NOTE_WORDS = re.compile(
    r"(?<![a-z])(?:notes?|preferences?|prefer|profile|remarks?)(?![a-z])|备注|偏好|喜好|资料",
    re.IGNORECASE,
)
_OWN = frozenset({"exact", "fuzzy"})


def _is_record(result: ScoredResult) -> bool:
    return bool(_parts(result.candidate.fact_type) & _ANY_KIND)


def named_kind_first(
    results: Sequence[ScoredResult],
    query: str,
    subject: Sequence[ScoredResult],
    focused: bool = False,
    user_id: str | None = None,
) -> list[ScoredResult]:
    """The rule of the module docstring; ``subject``: the memories the question is about (empty:
    every result), ``focused``: they are about the entities in focus; ``user_id``: the asker,
    when the question is about them."""
    kind = named_kind(query)
    if kind is None:
        return list(results)
    pool = list(subject) or list(results)
    wanted = _family(kind)
    leaders = {r.candidate.version_id for r in pool if _parts(r.candidate.fact_type) & wanted}
    if not leaders and kind == "shipment":  # the order carries its delivery
        wanted = KIND_FACT_TYPES["order"]
        leaders = {r.candidate.version_id for r in pool if _parts(r.candidate.fact_type) & wanted}
    if not leaders:
        return list(results)
    if kind == "shipment" and not _ordinal_or_period(query):
        results = _newest_first(results, leaders)
    asked = asked_source_kinds(query)
    inside = {r.candidate.version_id for r in pool}
    notes_named = _NOTE_WORDS.search(query) is not None

    def leads(r: ScoredResult) -> bool:
        return r.candidate.version_id in leaders

    def note(r: ScoredResult) -> bool:
        c = r.candidate
        return (
            c.version_id in inside
            and not notes_named
            and (said_kind(r) or "") not in asked  # "what did I say in the chat …" asks the chat
            and not _is_record(r)
        )

    out = yield_to(results, KIND, leads, lambda r: note(r) and r.binding_kind in _OWN, share=0.0)
    out = yield_to(out, KIND, leads, lambda r: note(r) and r.binding_kind not in _OWN)
    if kind != "order":
        out = yield_to(
            out,
            KIND,
            leads,
            lambda r: (
                r.candidate.version_id in inside
                and _is_record(r)
                and not _parts(r.candidate.fact_type) & wanted
                and (said_kind(r) or "") not in asked
            ),
            share=0.0 if focused else RELEVANCE_SHARE,
        )
    if focused:
        out = yield_to(out, KIND, leads, lambda r: r.candidate.version_id not in inside, share=0.0)
    if user_id is not None:  # "my warranty": the user's own record of it, not the generic one
        own = {r.candidate.version_id for r in pool if leads(r) and _anchored_to(r, user_id)}
        if own:
            out = yield_to(
                out,
                KIND,
                leads=lambda r: r.candidate.version_id in own,
                yields=lambda r: leads(r) and not _names_a_person(r),
            )
    return out


def _ordinal_or_period(query: str) -> bool:
    return ordinal_in(query) is not None or read_period(query, _EPOCH_NOW) is not None


_EPOCH_NOW = datetime(9000, 1, 1, tzinfo=UTC)  # any period the question names has begun by then


def _newest_first(results: Sequence[ScoredResult], leaders: set[str]) -> list[ScoredResult]:
    """Each leader below every newer leader at least half as relevant (the delivery rule)."""
    chain = sorted(
        (r for r in results if r.candidate.version_id in leaders),
        key=lambda r: (r.candidate.occurred_at, r.candidate.version_id),
        reverse=True,
    )
    placed: dict[str, ScoredResult] = {}
    for index, result in enumerate(chain):
        newer = [
            placed[r.candidate.version_id].scores.final
            for r in chain[:index]
            if r.scores.fused >= RELEVANCE_SHARE * result.scores.fused
        ]
        placed[result.candidate.version_id] = yielded(result, min(newer), KIND) if newer else result
    return [placed.get(r.candidate.version_id, r) for r in results]


def _anchored_to(result: ScoredResult, user_id: str) -> bool:
    return any(
        a.id == user_id and a.type.strip().casefold() in _PERSONS for a in result.candidate.anchors
    )


def _names_a_person(result: ScoredResult) -> bool:
    return any(a.type.strip().casefold() in _PERSONS for a in result.candidate.anchors)


_PERSONS = frozenset({"customer", "user"})


# The kinds of fact a catalogue keeps per product, and the words that name them.
_FACTS = (
    (
        frozenset({"stock", "inventory", "availability"}),
        re.compile(
            r"(?<![a-z])(?:in[\s-]+stock|out\s+of\s+stock|stock|inventory|available|"
            r"availability|sold\s+out)(?![a-z])|库存|有货|缺货|现货|卖完|售罄",
            re.IGNORECASE,
        ),
    ),
    (
        frozenset({"price", "pricing"}),
        re.compile(
            r"(?<![a-z])(?:price[sd]?|pricing|cost[s]?|how\s+much)(?![a-z])|价格|价钱|多少钱|售价|定价",
            re.IGNORECASE,
        ),
    ),
)


def named_fact_first(results: Sequence[ScoredResult], query: str) -> list[ScoredResult]:
    """The stock / price rule of the module docstring."""
    out = list(results)
    for names, words in _FACTS:
        if words.search(query):
            out = _fact_first(out, names)
    return out


def _fact_first(results: list[ScoredResult], names: frozenset[str]) -> list[ScoredResult]:
    chosen = {r.candidate.version_id for r in results if _parts(r.candidate.fact_type) & names}
    if not chosen:
        return results
    entities = {
        (r.candidate.entity_type, r.candidate.entity_id)
        for r in results
        if r.candidate.version_id in chosen
    }

    def entity(r: ScoredResult) -> tuple[str, str]:
        return (r.candidate.entity_type, r.candidate.entity_id)

    return yield_to(
        results,
        KIND,
        leads=lambda r: r.candidate.version_id in chosen,
        yields=lambda r: r.candidate.version_id not in chosen and entity(r) in entities,
        group=entity,
    )
