"""Blind seed kinds about a customer's service records: an open complaint beside a settled one,
and a return that another customer's near-identical return must never stand in for. Pure: each
builds one ``BlindCase``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memstream.bench.quality.seedblind_words import CATEGORIES, DAY, BlindCase, month_start

SYMPTOMS = (
    ("charger", "充电器", "overheating", "发热"),
    ("wireless earbuds", "无线耳机", "crackling", "有杂音"),
    ("tablet", "平板", "screen flickering", "屏幕闪烁"),
    ("power bank", "移动电源", "battery swelling", "电池鼓包"),
    ("smart kettle", "智能水壶", "leaking", "漏水"),
    ("robot mop", "拖地机器人", "not docking", "无法回充"),
)


def complaint_state(case: BlindCase) -> None:
    """Two complaints about the same product and symptom, one settled and one still open: the
    open one, whichever is newer."""
    c, rng = case, case.rng
    (
        prod_en,
        prod_zh,
        sym_en,
        sym_zh,
    ) = rng.choice(SYMPTOMS)
    prod, sym = c.of((prod_en, prod_zh)), c.of((sym_en, sym_zh))
    user, other = c.customer(), c.customer()
    t_open, t_done, t_other = c.ticket(), c.ticket(), c.ticket()
    open_newer = rng.random() < 0.5
    ages = sorted(rng.sample(range(8, 200), 2))
    age_open, age_done = (ages[0], ages[1]) if open_newer else (ages[1], ages[0])
    source = rng.choice(("ticketing", "crm"))
    open_text = c.say(
        (
            f"Ticket {t_open}: {prod} {sym} again; traced to a faulty batch, recall under way, "
            "replacement not yet shipped.",
            f"Ticket {t_open}: customer reports {prod} {sym}; escalated to quality team, awaiting "
            "their findings.",
        ),
        (
            f"工单{t_open}：{prod}{sym}，确认为批次问题，召回处理中，换新件尚未寄出。",
            f"工单{t_open}：客户反馈{prod}{sym}，已升级质检部门，等待检测结论。",
        ),
    )
    done_text = c.say(
        (
            f"Ticket {t_done}: {prod} {sym}; unit replaced, customer confirmed it is solved.",
            f"Ticket {t_done}: {prod} {sym} reported; refund issued, case closed.",
        ),
        (
            f"工单{t_done}：{prod}{sym}，已换新，客户确认问题解决。",
            f"工单{t_done}：反馈{prod}{sym}，已退款，工单关闭。",
        ),
    )
    status_open = rng.choice(("high_risk", "pending"))
    right = c.put(
        f"complaint:{t_open}",
        open_text,
        age_open * DAY,
        f"customer:{user}",
        "complaint",
        source,
        status=status_open,
    )
    done = c.put(
        f"complaint:{t_done}",
        done_text,
        age_done * DAY,
        f"customer:{user}",
        "complaint",
        source,
        status="resolved",
    )
    theirs = c.put(
        f"complaint:{t_other}",
        open_text.replace(t_open, t_other),
        rng.randint(1, 6) * DAY,
        f"customer:{other}",
        "complaint",
        source,
        status="pending",
    )
    c.profile(user)
    query = c.say(
        (
            f"which of my {prod} {sym} complaints is still open?",
            f"is anything still unresolved with my {prod} {sym}?",
            f"where do we stand on the {prod} {sym} case that hasn't been closed?",
        ),
        (
            f"我那个{prod}{sym}的问题，还有哪个没解决？",
            f"{prod}{sym}的投诉现在还在处理的是哪个",
            f"还没处理完的{prod}{sym}工单进展如何",
        ),
    )
    c.ask(query, right, [done, theirs], {"user_id": user})


RETURNS = (
    ("arrived with a cracked case", "外壳开裂"),
    ("did not pair with the phone", "无法与手机配对"),
    ("colour differs from the photos", "颜色与图片不符"),
    ("battery drained overnight", "一晚上就没电"),
)


def other_customer_forbidden(case: BlindCase) -> None:
    """ "What did Zhang San return last month?": his return, never Li Si's near-identical one
    (same product, same month, same reason)."""
    c, rng = case, case.rng
    cat_en, cat_zh, _, _ = rng.choice(CATEGORIES)
    cat = c.of((cat_en, cat_zh))
    reason = c.of(rng.choice(RETURNS))
    model = c.model()
    user, other, third = c.customer(), c.customer(), c.customer()
    name, other_name, third_name = c.person(), c.person(), c.person()
    last_month = month_start(c.now, 1)
    span = (month_start(c.now) - last_month).days

    def ret(who: str, who_name: str, order: str) -> str:
        text = c.say(
            f"Return for {who_name} ({who}): order {order}, {model} {cat} — {reason}; "
            "refund approved.",
            f"退货记录：{who_name}（{who}），订单{order}，{model} {cat}，"
            f"原因：{reason}，已同意退款。",
        )
        when = last_month + timedelta(days=rng.randint(0, span - 1), hours=rng.randint(8, 20))
        return c.put(
            f"return:{order}",
            text,
            when,
            f"customer:{who}",
            "return",
            "crm",
            anchors=[f"order:{order}"],
            status="resolved",
        )

    order = c.order()
    right = ret(user, name, order)
    forbidden = [ret(other, other_name, c.lookalike(order)), ret(third, third_name, c.order())]
    earlier_order = c.order()
    earlier = c.put(
        f"return:{earlier_order}",
        c.say(
            f"Return for {name} ({user}): order {earlier_order}, phone case — wrong size; "
            "refund approved.",
            f"退货记录：{name}（{user}），订单{earlier_order}，手机壳，原因：尺码不对，已同意退款。",
        ),
        rng.randint(120, 300) * DAY,
        f"customer:{user}",
        "return",
        "crm",
        status="resolved",
    )
    bought = c.put(
        f"purchase:{order}",
        c.say(
            f"Purchase: order {order}, {model} {cat}, paid by card.",
            f"购买记录：订单{order}，{model} {cat}，银行卡支付。",
        ),
        last_month - rng.randint(5, 30) * DAY,
        f"customer:{user}",
        "order",
        "erp",
    )
    c.profile(user, 3)
    if rng.random() < 0.5:
        query = c.say(
            ("what did I return last month?", "which item did I send back last month?"),
            ("我上个月退了什么货？", "上个月我退的是哪件"),
        )
        request: dict[str, Any] = {"user_id": user}
    else:
        query = c.say(
            (f"what did {name} return last month?", f"{name}'s return last month — which item?"),
            (f"{name}上个月退过什么货？", f"{name}上个月退的是什么"),
        )
        request = {"anchors": [{"type": "customer", "id": user}]}
    c.ask(query, right, [earlier, bought], request, forbidden)
