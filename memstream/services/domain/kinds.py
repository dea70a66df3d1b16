"""Kinds of record a question names: "my order", "单子", "refund" — records first, notes after.

A question that names a kind of record a transaction leaves (an order, a return, a refund, a
complaint, a ticket, a delivery …; ``possession.transaction_named`` reads the words, in English
and Chinese) asks about the user's records of that kind. The rule (``named_kind_first``):

    among the subject's memories (bound to the user, or about the focus), a memory that is no
    transaction record at all (a profile note, a preference, a page view, a chat message:
    its fact type names none of the kinds in ``KIND_FACT_TYPES``) yields to the subject's
    records of the named kind that are at least ``RELEVANCE_SHARE`` (half) as relevant.

Why: "我的单子啥时候发" ("when does my order ship?") shares no word with the order record and, in
Chinese, the bundled English encoder finds the user's note "prefers weekday-evening delivery" as
close as the order; the question said which kind of record it is about. Why only notes yield,
not another kind of record: "where is my order?" is answered by the order's shipment, a record
of another kind about the same order — the rule must not put the order above it. A question
that asks what a kind of source said ("what did I say in the chat about my warranty?":
``sources``) keeps that source's memories where they are.

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstream.services.domain.possession import transaction_named
from memstream.services.domain.query import ScoredResult
from memstream.services.domain.sources import asked_source_kinds, said_kind
from memstream.services.domain.yielding import yield_to

KIND = "kind"

# The words of a question (as ``transaction_named`` returns them) → the kind, and each kind's
# fact-type names (a fact type is of a kind when one of its parts, split on "_", is listed).
_WORD_KINDS = {
    "order": "order", "orders": "order", "ordered": "order", "purchase": "order",
    "purchases": "order", "订单": "order", "单子": "order",
    "return": "return", "returns": "return", "退货": "return", "换货": "return",
    "exchange": "return",
    "refund": "refund", "refunds": "refund", "退款": "refund",
    "complaint": "complaint", "complaints": "complaint", "投诉": "complaint",
    "ticket": "ticket", "tickets": "ticket", "issue": "ticket", "工单": "ticket",
    "delivery": "shipment", "shipment": "shipment", "parcel": "shipment",
    "package": "shipment", "tracking": "shipment", "快递": "shipment", "物流": "shipment",
    "包裹": "shipment", "配送": "shipment", "到哪": "shipment", "到货": "shipment",
    "签收": "shipment", "什么时候到": "shipment", "ship": "shipment", "shipping": "shipment",
    "arrive": "shipment", "arrival": "shipment", "能到": "shipment", "哪天到": "shipment",
    "什么时候发": "shipment", "啥时候发": "shipment", "哪天发": "shipment",
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
    "shipment": frozenset({"shipment", "delivery", "logistics", "shipping", "tracking", "parcel"}),
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


def named_kind(query: str) -> str | None:
    """The kind of record the question names ("order" for "我的单子啥时候发"), or None."""
    word = transaction_named(query)
    return _WORD_KINDS.get(word.casefold()) if word is not None else None


def named_kind_first(
    results: Sequence[ScoredResult], query: str, subject: Sequence[ScoredResult]
) -> list[ScoredResult]:
    """The rule of the module docstring; ``subject``: the memories the question is about."""
    kind = named_kind(query)
    if kind is None or not subject:
        return list(results)
    wanted = KIND_FACT_TYPES[kind]
    asked = asked_source_kinds(query)
    mine = {
        r.candidate.version_id
        for r in subject
        if (said_kind(r) or "") not in asked  # "what did I say in the chat …" asks the chat
    }
    leaders = {r.candidate.version_id for r in subject if _parts(r.candidate.fact_type) & wanted}
    if not leaders:
        return list(results)
    return yield_to(
        results,
        KIND,
        leads=lambda r: r.candidate.version_id in leaders,
        yields=lambda r: (
            r.candidate.version_id in mine and not _parts(r.candidate.fact_type) & _ANY_KIND
        ),
    )
