"""Blind seed kinds about one customer's own records: views, follow-ups, ordinals, terse asks,
complaint state and another customer's look-alike record. Pure: each builds one ``BlindCase``."""

from __future__ import annotations

from datetime import timedelta

from memstream.bench.quality.seedblind_words import (
    CATEGORIES,
    CITIES,
    DAY,
    HOUR,
    MAKERS,
    BlindCase,
)


def browse_recency(case: BlindCase) -> None:
    """ "The earbuds I looked at last time — noise cancelling?": last week's view, not the view
    three years ago that repeats the question's words."""
    c, rng = case, case.rng
    cat_en, cat_zh, feat_en, feat_zh = rng.choice(CATEGORIES)
    cat, feat = c.of((cat_en, cat_zh)), c.of((feat_en, feat_zh))
    user, other = c.customer(), c.customer()
    old, new, theirs = c.model(), c.model(), c.model()
    old_has = rng.random() < 0.5
    fact, source = rng.choice((("browsing", "web_analytics"), ("page_view", "app_events")))

    def view(model: str, has: bool) -> str:
        if c.zh:
            return f"浏览记录：{model} {cat}，{'支持' if has else '不支持'}{feat}。"
        return f"Browsing history: {model} {cat}, {'with' if has else 'without'} {feat}."

    ago_old = rng.randint(int(2.6 * 365), int(3.4 * 365)) * DAY
    stale = c.put(
        f"view:{user}:{old}", view(old, old_has), ago_old, f"customer:{user}", fact, source
    )
    right = c.put(
        f"view:{user}:{new}",
        view(new, not old_has),
        rng.randint(3, 9) * DAY,
        f"customer:{user}",
        fact,
        source,
    )
    other_view = c.put(
        f"view:{other}:{theirs}",
        view(theirs, old_has),
        rng.randint(1, 3) * DAY,
        f"customer:{other}",
        fact,
        source,
    )
    side = c.put(
        f"view:{user}:cable",
        c.say("Browsing history: braided USB-C cable, 2 m.", "浏览记录：编织USB-C数据线，2米。"),
        rng.randint(2, 12) * DAY,
        f"customer:{user}",
        fact,
        source,
    )
    c.profile(user)
    query = c.say(
        (
            f"the {cat} I looked at last time — does it have {feat}?",
            f"did the {cat} I viewed recently come with {feat}?",
            f"{cat} I was browsing the other day: {feat} or not?",
        ),
        (
            f"上次看的{cat}有{feat}吗？",
            f"我最近浏览的那款{cat}支持{feat}吗",
            f"前几天看的{cat}带不带{feat}？",
        ),
    )
    c.ask(query, right, [stale, other_view, side], {"user_id": user})


def focus_followup(case: BlindCase) -> None:
    """ "那物流呢？" after talking about one order: that order's shipment, not the customer's
    newer order's, nor a look-alike order's of someone else."""
    c, rng = case, case.rng
    user, other = c.customer(), c.customer()
    focus, newer = c.order(), c.order()
    twin = c.lookalike(focus)
    (cat_a, cat_a_zh, _, _), (cat_b, cat_b_zh, _, _) = rng.sample(CATEGORIES, 2)
    city = c.of(rng.choice(CITIES))
    placed = rng.randint(4, 8) * DAY

    def order_text(order: str, cat: tuple[str, str]) -> str:
        return c.say(
            f"Order {order}: 1 × {cat[0]}, paid in full, packed at the warehouse.",
            f"订单{order}：{cat[1]} 1件，已付款，仓库已打包。",
        )

    def ship_text(order: str, waybill: str, hub: str) -> str:
        return c.say(
            f"Shipment {waybill} for order {order} left the {hub} sorting hub; delivery expected "
            "within two days.",
            f"订单{order}的包裹（运单{waybill}）已离开{hub}分拨中心，预计两天内送达。",
        )

    c.put(
        f"order:{focus}",
        order_text(focus, (cat_a, cat_a_zh)),
        placed,
        f"order:{focus}",
        "order",
        "erp",
        anchors=[f"customer:{user}"],
    )
    right = c.put(
        f"shipment:{focus}",
        ship_text(focus, c.waybill(), city),
        placed - rng.randint(30, 60) * HOUR,
        f"order:{focus}",
        "logistics",
        "tms",
        anchors=[f"customer:{user}"],
    )
    c.put(
        f"order:{newer}",
        order_text(newer, (cat_b, cat_b_zh)),
        rng.randint(40, 70) * HOUR,
        f"order:{newer}",
        "order",
        "erp",
        anchors=[f"customer:{user}"],
    )
    mine_newer = c.put(
        f"shipment:{newer}",
        ship_text(newer, c.waybill(), city),
        rng.randint(3, 20) * HOUR,
        f"order:{newer}",
        "logistics",
        "tms",
        anchors=[f"customer:{user}"],
    )
    theirs = c.put(
        f"shipment:{twin}",
        ship_text(twin, c.waybill(), city),
        rng.randint(2, 30) * HOUR,
        f"order:{twin}",
        "logistics",
        "tms",
        anchors=[f"customer:{other}"],
    )
    c.profile(user)
    query = c.say(
        (
            "and the shipping?",
            "what about delivery then?",
            "ok, and where is the parcel now?",
            "has that one shipped yet?",
            "any tracking for it?",
        ),
        ("那物流呢？", "那快递到哪了？", "物流呢", "那发货了没？"),
    )
    context = {"active_entities": [{"type": "order", "id": focus}], "active_task": "order_inquiry"}
    c.ask(query, right, [mine_newer, theirs], {"user_id": user, "context": context})


def ordinal_first_last(case: BlindCase) -> None:
    """The first (earliest) or the last (most recent) of the customer's purchases of one kind:
    separate orders, months apart."""
    c, rng = case, case.rng
    cat_en, cat_zh, _, _ = rng.choice(CATEGORIES)
    cat = c.of((cat_en, cat_zh))
    user, other = c.customer(), c.customer()
    maker = rng.choice(MAKERS)
    count = rng.randint(3, 4)
    ages = sorted(rng.sample(range(20, 900), count), reverse=True)  # oldest first
    docs = []
    for age in ages:
        order, model = c.order(), c.model(maker)
        text = c.say(
            f"Purchase: order {order}, {model} {cat}, delivered and kept.",
            f"购买记录：订单{order}，{model} {cat}，已签收。",
        )
        docs.append(c.put(f"purchase:{order}", text, age * DAY, f"customer:{user}", "order", "erp"))
    first = rng.random() < 0.5
    right, below = (docs[0], docs[1:]) if first else (docs[-1], docs[:-1])
    theirs_age = (ages[0] + rng.randint(20, 90)) if first else rng.randint(2, ages[-1] - 1)
    their_order = c.order()
    theirs = c.put(
        f"purchase:{their_order}",
        c.say(
            f"Purchase: order {their_order}, {c.model(maker)} {cat}, delivered and kept.",
            f"购买记录：订单{their_order}，{c.model(maker)} {cat}，已签收。",
        ),
        theirs_age * DAY,
        f"customer:{other}",
        "order",
        "erp",
    )
    c.profile(user)
    if first:
        query = c.say(
            (
                f"what was the first {cat} I bought from you?",
                f"which {cat} did I order earliest?",
                f"my very first {cat} purchase — which model was it?",
            ),
            (
                f"我第一次买的{cat}是哪款？",
                f"最早买的那个{cat}是什么型号",
                f"我头一回在你们这买的{cat}是啥",
            ),
        )
    else:
        query = c.say(
            (
                f"which {cat} did I buy last time?",
                f"my most recent {cat} order — which model?",
                f"what was the latest {cat} I purchased?",
            ),
            (
                f"上次买的{cat}是哪个型号？",
                f"我最近一次买的{cat}是什么",
                f"最新买的那个{cat}是哪款",
            ),
        )
    c.ask(query, right, [*below, theirs], {"user_id": user})


TERSE = (  # fact, source, English record, Chinese record, English asks, Chinese asks
    (
        "refund",
        "payments",
        "Refund of {amount} for order {order} approved; back on the card in 3–5 working days.",
        "订单{order}退款{amount}元已审核通过，3-5个工作日原路退回。",
        ("my refund?", "refund status?", "where's my money back?"),
        ("我的退款呢？", "退款到哪一步了", "钱退了没"),
    ),
    (
        "warranty",
        "crm",
        "Warranty registered for order {order}: covered until {until}, serial on file.",
        "订单{order}的商品已登记保修，保修期至{until}，序列号已存档。",
        ("my warranty?", "warranty on mine?", "am I still covered?"),
        ("我的保修呢？", "保修到什么时候", "还在保修期吗"),
    ),
    (
        "invoice",
        "billing",
        "Invoice for order {order} ({amount}) issued and e-mailed on {until}.",
        "订单{order}的发票（{amount}元）已于{until}开具并发送到邮箱。",
        ("my invoice?", "invoice sent?", "where is the receipt?"),
        ("我的发票呢？", "发票开了吗", "发票"),
    ),
    (
        "loyalty",
        "crm",
        "Loyalty balance {amount} points; {order} points expire at the end of {until}.",
        "会员积分余额{amount}分，其中{order}分将于{until}底过期。",
        ("my points?", "points balance?", "how many points have I got?"),
        ("我的积分？", "积分还剩多少", "积分呢"),
    ),
)


def terse_personal(case: BlindCase) -> None:
    """Two- or three-word personal questions ("my refund?"): the serving customer's record among
    other customers' records of the same kind, some of them newer."""
    c, rng = case, case.rng
    fact, source, en, zh, asks_en, asks_zh = rng.choice(TERSE)
    user = c.customer()

    def record(who: str, ago: timedelta) -> str:
        order = c.order() if fact != "loyalty" else str(rng.randint(50, 400))
        until = (
            c.day(c.now + rng.randint(20, 700) * DAY)
            if fact == "warranty"
            else (c.month_name(c.now) if fact == "loyalty" else c.day(c.now - ago))
        )
        amount = str(rng.randint(40, 3000))
        text = c.say(en, zh).format(order=order, amount=amount, until=until)
        return c.put(f"{fact}:{who}:{order}", text, ago, f"customer:{who}", fact, source)

    right = record(user, rng.randint(2, 40) * DAY)
    others = [record(c.customer(), rng.randint(1, 30) * HOUR) for _ in range(rng.randint(2, 3))]
    c.put(
        f"note:{user}:chat",
        c.say(
            "Chat: asked whether gift wrapping is free (it is).",
            "聊天记录：询问礼品包装是否免费（免费）。",
        ),
        rng.randint(1, 10) * DAY,
        f"customer:{user}",
        "note",
        "chat_log",
    )
    c.profile(user)
    c.ask(c.say(asks_en, asks_zh), right, others, {"user_id": user})
