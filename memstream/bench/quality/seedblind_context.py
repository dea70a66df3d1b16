"""Blind seed kinds that lean on the conversation: colloquial Chinese order questions and
Chinese pronoun questions about the product in focus (both Chinese only), and contract
questions that only an authoritative record may answer. Pure: each builds one ``BlindCase``."""

from __future__ import annotations

from memstream.bench.quality.seedblind_catalogue import CAPABILITIES, capability
from memstream.bench.quality.seedblind_words import CATEGORIES, CITIES, DAY, HOUR, BlindCase

STEPS = (
    "买家已付款，等待商家发货",
    "商家已发货，快递已揽收",
    "运输中，已到达{city}转运中心",
    "派送中，快递员正在派送",
)


def zh_colloquial_order(case: BlindCase) -> None:
    """ "我那单到哪了？" and its colloquial cousins: the newest status of the customer's open
    order; not its earlier statuses, an order delivered months ago, or someone else's parcel."""
    c, rng = case, case.rng
    (_, cat, _, _), (_, old_cat, _, _) = rng.sample(CATEGORIES, 2)
    user, other = c.customer(), c.customer()
    order, old, theirs = c.order(), c.order(), c.order()
    city = rng.choice(CITIES)[1]
    steps = rng.randint(2, len(STEPS))
    ages = sorted(rng.sample(range(2, 90), steps), reverse=True)
    docs = []
    for step, age in zip(STEPS, ages, strict=False):
        text = f"订单{order}（{cat}）：{step.format(city=city)}。"
        docs.append(
            c.put(
                f"order-status:{order}",
                text,
                age * HOUR,
                f"order:{order}",
                "order_status",
                "oms",
                anchors=[f"customer:{user}"],
            )
        )
    delivered = c.put(
        f"order-status:{old}",
        f"订单{old}（{old_cat}）：已签收，感谢购买。",
        rng.randint(40, 120) * DAY,
        f"order:{old}",
        "order_status",
        "oms",
        anchors=[f"customer:{user}"],
    )
    other_parcel = c.put(
        f"order-status:{theirs}",
        f"订单{theirs}（{cat}）：{STEPS[-1]}。",
        rng.randint(1, ages[-1]) * HOUR,
        f"order:{theirs}",
        "order_status",
        "oms",
        anchors=[f"customer:{other}"],
    )
    c.profile(user)
    query = rng.choice(
        (
            "我那单到哪了？",
            "东西咋还没到",
            f"我买的{cat}发了没",
            "快递到哪儿啦",
            "俺的包裹呢",
            f"{cat}啥时候能到啊",
            "我的货现在啥情况",
        )
    )
    c.ask(query, docs[-1], [*docs[:-1], delivered, other_parcel], {"user_id": user})


def zh_pronoun_reference(case: BlindCase) -> None:
    """ "这个型号支持Type-C快充吗？" with the product in focus named only by the conversation's
    active entities: that product's spec, not its sibling's (newer) spec on the same point."""
    c, rng = case, case.rng
    cap, other_cap = rng.sample(CAPABILITIES, 2)
    model, sibling = c.model(), c.model()
    pid, sid = c.sku(), c.sku()
    truth = rng.random() < 0.5
    right = c.put(
        f"spec:{pid}:{cap[0]}",
        capability(c, model, cap, truth, "官方规格书"),
        rng.randint(60, 300) * DAY,
        f"product:{pid}",
        "product_spec",
        "official_document",
    )
    also = c.put(
        f"spec:{pid}:{other_cap[0]}",
        capability(c, model, other_cap, not truth, "官方规格书"),
        rng.randint(60, 300) * DAY,
        f"product:{pid}",
        "product_spec",
        "official_document",
    )
    theirs = c.put(
        f"spec:{sid}:{cap[0]}",
        capability(c, sibling, cap, not truth, "官方规格书"),
        rng.randint(5, 50) * DAY,
        f"product:{sid}",
        "product_spec",
        "official_document",
    )
    pronoun = rng.choice(("这个型号", "它", "这款", "那个", "这台"))
    query = rng.choice(
        (f"{pronoun}支持{cap[1]}吗？", f"{pronoun}有没有{cap[1]}", f"那{pronoun}能{cap[1]}不？")
    )
    context = {"active_entities": [{"type": "product", "id": pid}]}
    c.ask(query, right, [also, theirs], {"context": context})


TERMS = (  # clause and topic (English, Chinese); values a contract, a chat and the wiki give
    (
        "on-site repair within {v} hours",
        "{v}小时内上门维修",
        "repair time",
        "上门维修时效",
        (24, 48, 72),
    ),
    ("a replacement unit within {v} days", "{v}天内提供备用机", "a loan unit", "备用机", (3, 5, 7)),
    ("free returns within {v} days", "{v}天内免费退货", "returns", "免费退货期限", (15, 30, 60)),
    ("a service term of {v} months", "服务期{v}个月", "the service term", "服务期", (12, 24, 36)),
)


def contract_clause(case: BlindCase) -> None:
    """ "What does my contract say about …": the CRM contract record, not a support agent's chat
    remark (newer), the general wiki policy, or another customer's contract."""
    c, rng = case, case.rng
    en, zh, topic_en, topic_zh, values = rng.choice(TERMS)
    contract_v, chat_v, wiki_v = rng.sample(values, 3)
    user, other = c.customer(), c.customer()
    number = f"SC-{rng.randint(10000, 99999)}"
    other_number = c.lookalike(number)
    clause = c.say(en, zh)

    def contract(num: str, value: int) -> str:
        return c.say(
            f"Service contract {num}: the customer is entitled to {clause.format(v=value)}.",
            f"服务合同{num}条款：客户享有{clause.format(v=value)}。",
        )

    right = c.put(
        f"contract:{number}",
        contract(number, contract_v),
        rng.randint(90, 330) * DAY,
        f"customer:{user}",
        "contract",
        "crm",
    )
    chat = c.put(
        f"chat:{user}:{rng.randint(100, 999)}",
        c.say(
            f"Support chat: agent told the customer they get {clause.format(v=chat_v)}.",
            f"客服聊天：客服告诉客户可以享受{clause.format(v=chat_v)}。",
        ),
        rng.randint(1, 10) * DAY,
        f"customer:{user}",
        "chat",
        "chat_log",
    )
    wiki = c.put(
        f"policy:{en[:12]}",
        c.say(
            f"Standard service policy: {clause.format(v=wiki_v)}.",
            f"标准服务政策：{clause.format(v=wiki_v)}。",
        ),
        rng.randint(30, 200) * DAY,
        "policy:standard",
        "policy",
        "wiki",
    )
    theirs = c.put(
        f"contract:{other_number}",
        contract(other_number, chat_v),
        rng.randint(5, 60) * DAY,
        f"customer:{other}",
        "contract",
        "crm",
    )
    c.profile(user)
    topic = c.say(topic_en, topic_zh)
    query = c.say(
        (
            f"what does my contract say about {topic}?",
            f"under the terms of my service contract, what am I entitled to for {topic}?",
            f"per my contract clause, {topic} — what's agreed?",
        ),
        (
            f"按我的合同条款，{topic}是怎么约定的？",
            f"我合同里关于{topic}的条款是什么",
            f"合同上写的{topic}是什么",
        ),
    )
    c.ask(query, right, [chat, wiki, theirs], {"user_id": user})
