"""What a possessive possesses: a record memory can hold, or a manner of speaking.

"my order", "our booking", "我的快递" point at the asker's records; "my advice is", "my teacher
says", "in my opinion", "我的建议是" do not — there "my" is the speaker talking, not a record.
A possessive is a strong memory cue only when one of the (up to three) words it governs names a
record kind (``RECORD_NOUNS_EN`` by stem, ``RECORD_NOUNS_ZH`` within the next few characters);
otherwise it is weak and the gate looks at memory (the asker's own memory holding the possessed
word — "my wife" with memories about her — still answers the question).

Pure: stdlib only.
"""

from __future__ import annotations

import re

# Kinds of record a memory substrate holds about a person or an account (stems: "orders",
# "ordered" → "order"). Words, not product names: a possessed product ("my headphones") is
# looked up in the asker's own memory instead.
RECORD_NOUNS_EN = frozenset(
    {
        "order", "return", "refund", "complaint", "ticket", "account", "subscription", "device",
        "warranty", "delivery", "parcel", "package", "shipment", "booking", "reservation",
        "invoice", "receipt", "payment", "purchase", "address", "plan", "cart", "appointment",
        "claim", "case", "membership", "point", "balance", "bill", "history", "profile",
        "request", "exchange", "repair", "tracking", "last", "previous", "recent", "past",
        "issue",
    }
)  # fmt: skip
RECORD_NOUNS_ZH = (
    "订单", "快递", "包裹", "退货", "退款", "换货", "投诉", "工单", "账户", "账号", "帐户",
    "订阅", "设备", "保修", "发票", "预订", "预约", "地址", "会员", "积分", "购物车", "物流",
    "配送", "收据", "付款", "支付", "余额", "账单", "记录", "维修", "申请", "上次", "之前",
)  # fmt: skip
# The kinds of record a transaction leaves (a subset of the above), and the verbs that name one
# ("bought", "hasn't arrived", "买了", "没到", "钱退了没"): a user's question naming one is about
# their own records even without "my" ("refund done?", "when is the delivery?", "快递到哪了").
TRANSACTION_NOUNS_EN = frozenset(
    {
        "order", "return", "refund", "complaint", "ticket", "delivery", "parcel", "package",
        "shipment", "booking", "reservation", "invoice", "receipt", "payment", "purchase",
        "subscription", "warranty", "repair", "exchange", "tracking", "claim", "issue",
        "ship", "shipping", "arrive", "arrival", "waybill", "arrived", "arriving", "deliver",
        "delivered", "shipped", "dispatched", "buy", "bought", "purchased",
    }
)  # fmt: skip
TRANSACTION_NOUNS_ZH = (
    "订单", "快递", "包裹", "退货", "退款", "钱退", "退钱", "换货", "投诉", "工单", "发票", "物流",
    "配送", "维修", "保修", "预订", "预约", "单子", "到货", "到哪", "什么时候到", "到了吗",
    "到了没",
    "签收", "能到", "哪天到", "什么时候发", "啥时候发", "哪天发", "发货", "能发", "我的单",
    "退了", "退过", "运单", "那单", "这单", "没到", "没收到", "我的货",
    "买了", "买过", "买的", "约的", "约了", "约过", "退的", "下单", "下过", "下的单",
)  # fmt: skip
_EN = re.compile(r"(?<![a-z])(?:my|our)\s+((?:[a-z'-]+\s+){0,2}[a-z'-]+)", re.IGNORECASE)
_ZH = ("我的", "我们的", "咱们的", "俺的", "俺们的", "咱的")
_ZH_REACH = 6


def _stem(word: str) -> str:
    word = word.casefold().strip("'-")
    for suffix in ("ies", "es", "s", "ed", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            return stem + "y" if suffix == "ies" else stem
    return word


def possesses_record(query: str) -> bool:
    """Whether a possessive in the query governs a record kind ("where is my order?", "our
    last booking", "我的快递到哪了"). False when it possesses only other things ("my advice",
    "in my opinion", "我的建议是") or when there is no possessive."""
    for match in _EN.finditer(query):
        words = match.group(1).split()
        if any(_stem(w) in RECORD_NOUNS_EN or w.casefold() in RECORD_NOUNS_EN for w in words):
            return True
    for mark in _ZH:
        start = query.find(mark)
        while start >= 0:
            reach = query[start + len(mark) : start + len(mark) + _ZH_REACH]
            if any(noun in reach for noun in RECORD_NOUNS_ZH):
                return True
            start = query.find(mark, start + 1)
    return False


def transaction_named(query: str) -> str | None:
    """The first kind of transaction record the query names ("refund" in "refund done?",
    "快递" in "快递到哪了"), or None."""
    words: list[str] = re.findall(r"[a-z][a-z'-]*", query.casefold())
    for word in words:
        if _stem(word) in TRANSACTION_NOUNS_EN or word in TRANSACTION_NOUNS_EN:
            return word
    for noun in TRANSACTION_NOUNS_ZH:
        if noun in query:
            return noun
    return None


def bare_possessive(query: str) -> bool:
    """Whether the query's only possessives are "my"/"our"/"我的"-forms that govern no record
    kind ("my teacher says …"). "mine"/"ours" (the thing itself is named elsewhere) are not
    bare."""
    lowered = query.casefold()
    has_form = bool(_EN.search(query)) or any(mark in lowered for mark in _ZH)
    standalone = re.search(r"(?<![a-z])(?:mine|ours)(?![a-z])", lowered) is not None
    return has_form and not standalone and not possesses_record(query)


_ALL_EN = re.compile(r"(?<![a-z])(?:my|our)(?![a-z'])", re.IGNORECASE)


def without_possessives(query: str) -> str:
    """The query with its "my"/"our"/"我的"-forms taken out (what remains says whether the
    question is still about the speaker: "what did I say about my teacher" is)."""
    text = _ALL_EN.sub(" ", query)
    for mark in _ZH:
        text = text.replace(mark, " ")
    return text
