"""Dated personal records of the held-out seed suite (``seedheld``): orders, service visits and
class bookings, and the ``time_named`` kind (the question names the period). Pure.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality import seedheld_words as words
from memstream.bench.quality.seedheld_case import Case, amount, pick

SERVICES = {
    "en": [
        "boiler service",
        "air-conditioner cleaning",
        "window seal repair",
        "water heater descaling",
        "chimney sweep",
        "gutter clearing",
    ],
    "zh": ["锅炉保养", "空调清洗", "窗户密封条维修", "热水器除垢", "油烟机清洗", "下水道疏通"],
}


def dated_record(
    c: Case,
    kind: str,
    cid: str,
    at: datetime,
    item: tuple[Any, ...] | None = None,
    detail: int | None = None,
) -> str:
    """One dated personal record of ``kind`` (order / service / class) for ``cid``."""
    rng, lang = c.rng, c.lang
    if kind == "order":
        item = item or rng.choice(words.ITEMS)
        d = rng.randrange(3) if detail is None else detail
        (oid,) = words.order_ids(rng, 1, c.used)
        amt = amount(rng, lang, 19, 1500)
        if lang == "zh":
            text = pick(
                rng, ["订单{o}：{i}（{d}），实付{a}元。", "下单{o}，购买{i}{d}一件，合计{a}元。"]
            ).format(o=oid, i=item[1], d=item[3][d], a=amt)
        else:
            text = pick(
                rng, ["Order {o}: {i} ({d}), total {a}.", "Placed order {o}: {i}, {d}; paid {a}."]
            ).format(o=oid, i=item[0], d=item[2][d], a=amt)
        if rng.random() < 0.5:
            return c.put(
                f"order:{oid}",
                text,
                at,
                f"order:{oid}",
                "order",
                "erp",
                entities=[f"customer:{cid}"],
                attributes={"order": oid},
            )
        return c.put(
            f"customer:{cid}|order|{oid}",
            text,
            at,
            f"customer:{cid}",
            "order",
            "erp",
            attributes={"order": oid},
        )
    if kind == "service":
        tid = words.ticket_id(rng, c.used)
        svc = item[0] if item else rng.choice(SERVICES[lang])
        text = (
            f"上门服务{tid}：{svc}已完成，费用{amount(rng, lang, 80, 600)}元。"
            if lang == "zh"
            else f"Technician visit {tid}: {svc} completed, invoiced {amount(rng, lang, 80, 600)}."
        )
        return c.put(
            f"visit:{tid}",
            text,
            at,
            f"customer:{cid}",
            "service_visit",
            "crm",
            attributes={"ticket": tid},
        )
    # class booking
    classes = (
        ["流瑜伽", "动感单车", "普拉提", "拳击入门", "攀岩体验"]
        if lang == "zh"
        else ["vinyasa yoga", "spin class", "reformer pilates", "intro boxing", "bouldering taster"]
    )
    studios = (
        ["滨江馆", "城西馆", "科技园馆"]
        if lang == "zh"
        else ["Riverside studio", "West End studio", "Tech Park studio"]
    )
    cls = item[0] if item else rng.choice(classes)
    bid = f"BK{rng.randint(100000, 999999)}"
    text = (
        f"课程预约{bid}：{cls}，{rng.choice(studios)}。"
        if lang == "zh"
        else f"Class booking {bid}: {cls} at {rng.choice(studios)}."
    )
    return c.put(
        f"booking:{bid}", text, at, f"customer:{cid}", "booking", "crm", attributes={"booking": bid}
    )


def time_named(c: Case) -> None:
    """A customer's dated records of one kind in different periods; the question names the
    period (a month, a quarter, a year, last month, 去年)."""
    rng, lang, now = c.rng, c.lang, c.now
    me, other = words.customer_ids(rng, 2, c.used)
    kind = rng.choice(["order", "order", "service"])
    form = rng.choice(["month", "month", "last_month", "year", "quarter"])
    dates: list[datetime] = []
    if form in ("month", "last_month"):
        k = 1 if form == "last_month" else rng.randint(2, 15)
        ty, tm = words.months_back(now, k)
        target = words.in_month(rng, ty, tm)
        pool = [j for j in range(2 if form == "last_month" else 1, 27) if abs(j - k) >= 2]
        for j in rng.sample(pool, rng.randint(2, 4)):
            dates.append(words.in_month(rng, *words.months_back(now, j)))
        if lang == "zh":
            period = "上个月" if form == "last_month" else words.zh_month(ty, tm, rng)
        else:
            period = "last month" if form == "last_month" else "in " + words.en_month(ty, tm, rng)
    elif form == "year":
        ty = now.year - 1
        target = words.in_month(rng, ty, rng.randint(2, 11))
        choices = (
            [(now.year, m) for m in range(1, now.month)]
            + [(now.year - 2, m) for m in range(1, 13)]
            + [(now.year - 3, m) for m in range(4, 13)]
        )
        for y, m in rng.sample(choices, rng.randint(2, 4)):
            dates.append(words.in_month(rng, y, m))
        if lang == "zh":
            period = rng.choice(["去年", f"{ty}年"])
        else:
            period = rng.choice([f"in {ty}", "last year", f"during {ty}"])
    else:  # quarter
        cur_q = (now.month - 1) // 3
        back = rng.randint(1, 5)
        qi = cur_q - back
        ty = now.year + qi // 4
        q = qi % 4 + 1
        target = words.in_month(rng, ty, 3 * (q - 1) + rng.randint(1, 3))
        slots = []
        for j in range(1, 10):
            if j == back:
                continue
            qj = cur_q - j
            slots.append((now.year + qj // 4, qj % 4 + 1))
        for y, qq in rng.sample(slots, rng.randint(2, 4)):
            dates.append(words.in_month(rng, y, 3 * (qq - 1) + rng.randint(1, 3)))
        period = (
            f"{ty}年第{q}季度"
            if lang == "zh"
            else rng.choice([f"in Q{q} {ty}", f"in the Q{q} {ty} period"])
        )
    right = dated_record(c, kind, me, target)
    for at in dates:
        dated_record(c, kind, me, at)
    if rng.random() < 0.3:  # another customer's record in the same period
        dated_record(c, kind, other, target + timedelta(days=rng.choice([-2, -1, 1, 2])))
    c.noise(rng.randint(1, 3), me, rng.randint(0, 2))
    if kind == "order":
        qs = (
            ["我{P}买了什么？", "{P}我下过什么单？", "{P}那笔订单买的是啥？"]
            if lang == "zh"
            else ["what did I order {P}?", "which order did I place {P}?", "what did I buy {P}?"]
        )
    else:
        qs = (
            ["{P}师傅上门做了什么？", "我{P}那次上门服务是什么？"]
            if lang == "zh"
            else ["what did the technician do for me {P}?", "which service visit did I have {P}?"]
        )
    c.ask(rng.choice(qs).format(P=period), [right], {"user_id": me})
