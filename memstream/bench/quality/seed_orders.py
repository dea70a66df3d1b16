"""The seed trap kinds about a user's orders: ordinals, named periods, "my order".

- ``ordinal_first`` / ``ordinal_last``: first/earliest vs last/latest of the user's orders of
  one kind of goods (three over two years), with a fresher order of another kind and a fresh
  delivery note around;
- ``period_named``: a month ("三月", "March 2026"), a year or "last year"/"去年" named in the
  question, no time window in the request: the order placed then;
- ``my_order_vs_policy``: "我的订单什么时候发货": the user's own order, not the fresh shipping
  FAQ nor another customer's near-identical, fresher order.
Pure: ``now`` comes with the case.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memstream.bench.quality.seed_words import DAY, SeedCase, month_start

HOUR = timedelta(hours=1)


def _orders_of_one_kind(case: SeedCase) -> tuple[str, str, list[str], list[str]]:
    """Three orders of one kind of goods over two years, a fresher order of another kind and a
    fresh delivery note; returns (user, kind, the kind's order ids oldest first, the others)."""
    rng = case.rng
    u = case.customer()
    kind, other_kind = case.goods(2)
    ages = [rng.randint(500, 700), rng.randint(250, 400), rng.randint(40, 150)]
    ids = []
    for age in ages:
        brand, colour = case.model(), case.colours(1)[0]
        text = case.say(
            f"Order: {colour} {brand} {kind}, paid and delivered.",
            f"订单：{colour}{brand}{kind}，已付款，已送达。",
        )
        ids.append(
            case.put(f"order:{case.order()}", text, age * DAY, f"customer:{u}", "order", "erp")
        )
    last_order = case.order()
    others = [
        case.put(
            f"order:{last_order}",
            case.say(f"Order: {other_kind}, paid.", f"订单：{other_kind}，已付款。"),
            rng.randint(5, 20) * DAY,
            f"customer:{u}",
            "order",
            "erp",
        ),
        case.put(
            f"shipment:{last_order}",
            case.say(
                f"Shipment {last_order}: delivered, signed for at the door.",
                f"物流{last_order}：已签收。",
            ),
            rng.randint(1, 3) * DAY,
            f"customer:{u}",
            "shipment",
            "erp",
        ),
    ]
    case.filler(u)
    return u, kind, ids, others


def ordinal_first(case: SeedCase) -> None:
    u, kind, ids, others = _orders_of_one_kind(case)
    query = case.say(
        [
            f"What was the first {kind} I bought?",
            f"my earliest {kind} order?",
            f"which {kind} did I order first?",
        ],
        [f"我第一次买的{kind}是哪个？", f"最早买的那个{kind}", f"我最早下单的{kind}是什么"],
    )
    case.ask_seed(query, ids[0], [*ids[1:], *others], {"user_id": u})


def ordinal_last(case: SeedCase) -> None:
    u, kind, ids, others = _orders_of_one_kind(case)
    query = case.say(
        [
            f"What was the last {kind} I ordered?",
            f"most recent {kind} purchase?",
            f"the {kind} I bought most recently, which one?",
        ],
        [f"我最近一次买的{kind}是哪个？", f"上次买的{kind}", f"最近买的那个{kind}是什么"],
    )
    case.ask_seed(query, ids[-1], [*ids[:-1], *others], {"user_id": u})


def _in_year(case: SeedCase, year: int) -> datetime:
    start = case.now.replace(year=year, month=1, day=1, hour=11, minute=0, second=0, microsecond=0)
    end = min(start.replace(year=year + 1), case.now - DAY)
    return start + (end - start) * case.rng.uniform(0.05, 0.95)


def period_named(case: SeedCase) -> None:
    rng = case.rng
    u, kind = case.customer(), case.goods()[0]
    by_year = rng.random() < 0.4
    if by_year:
        moments = [_in_year(case, case.now.year - k) for k in (2, 1, 0)]
    else:
        offsets = sorted(rng.sample(range(1, 12), 3), reverse=True)  # distinct calendar months
        moments = [month_start(case.now, k) + rng.randint(0, 27) * DAY + 10 * HOUR for k in offsets]
    ids = []
    for at in moments:
        brand, colour = case.model(), case.colours(1)[0]
        text = case.say(
            f"Order: {colour} {brand} {kind}, paid.", f"订单：{colour}{brand}{kind}，已付款。"
        )
        ids.append(case.put(f"order:{case.order()}", text, at, f"customer:{u}", "order", "erp"))
    target = rng.randrange(3)
    at = moments[target]
    if by_year:
        relative = {0: ("this year", "今年"), 1: ("last year", "去年")}.get(case.now.year - at.year)
        en, zh = relative if relative and rng.random() < 0.6 else (f"in {at.year}", f"{at.year}年")
        query = case.say(
            [f"which {kind} did I buy {en}?", f"my {kind} order {en}?"],
            [f"我{zh}买的{kind}是哪个？", f"{zh}买的那个{kind}"],
        )
    else:
        when = case.month(at, year=rng.random() < 0.5)
        query = case.say(
            [f"which {kind} did I order in {when}?", f"my {when} {kind} order?"],
            [f"我{when}买的{kind}是哪个？", f"{when}那次买的{kind}"],
        )
    case.filler(u)
    case.ask_seed(query, ids[target], [i for n, i in enumerate(ids) if n != target], {"user_id": u})


def my_order_vs_policy(case: SeedCase) -> None:
    rng = case.rng
    u, v = case.customer(), case.customer()
    item = case.goods()[0]
    ship = case.date(case.now + rng.randint(1, 4) * DAY)
    ids = []
    for cid, age in ((u, rng.randint(20, 40)), (v, rng.randint(2, 10))):
        order = case.order()
        text = case.say(
            f"Order {order}: {item}, paid; expected to ship on {ship}.",
            f"订单{order}：{item}，已付款，预计{ship}发货。",
        )
        ids.append(
            case.put(
                f"order:{order}",
                text,
                timedelta(hours=age),
                f"customer:{cid}",
                "order_status",
                "erp",
                status="pending",
            )
        )
    faq = case.put(
        "faq:shipping",
        case.say(
            "Shipping policy: orders usually ship within 48 hours of payment.",
            "发货政策：订单一般在付款后48小时内发货。",
        ),
        timedelta(hours=rng.randint(1, 12)),
        "policy:shipping",
        "policy",
        "official",
    )
    case.filler(u)
    query = case.say(
        ["When will my order ship?", "my order — ship date?", "when does my order go out?"],
        ["我的订单什么时候发货？", "我的单子啥时候发", "我的订单发货了吗"],
    )
    case.ask_seed(query, ids[0], [ids[1], faq], {"user_id": u})
