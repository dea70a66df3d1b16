"""Fresh seed kinds about a user's orders and their logistics (``seedfresh``).

- ``followup_waybill``: the agent has just answered "when will my order ship?" about one of the
  user's three orders; the follow-up "那物流呢？" comes with that order in
  ``context.active_entities``: the latest tracking node of its waybill (the logistics system
  keys it by waybill, anchored to the order), not its earlier nodes, not the fresher waybills
  of the user's other orders, not the order record itself, not the delivery FAQ;
- ``my_order_isolated``: "我的订单什么时候发货": the session user's own order, not other
  customers' near-identical fresher orders, not the user's generic shipping suggestion — and
  never the order of the same customer number in another shop (a twin tenant).
Pure: ``now`` comes with the case.
"""

from __future__ import annotations

from memstream.bench.quality.seed_words import DAY
from memstream.bench.quality.seedfresh_words import HOUR, FreshCase

EN_NODES = (
    "picked up by the courier in {a}",
    "departed the {a} sorting hub",
    "arrived at the {b} delivery station",
    "out for delivery in {b}",
)
ZH_NODES = ("{a}已揽收", "已离开{a}分拣中心", "已到达{b}派送站", "{b}派送中")
EN_PLACES = ("Shenzhen", "Suzhou", "Chengdu", "Wuhan", "Xiamen", "Tianjin", "Ningbo")
ZH_PLACES = ("深圳", "苏州", "成都", "武汉", "厦门", "天津", "宁波")


def followup_waybill(case: FreshCase) -> None:
    rng = case.rng
    u = case.customer()
    goods = case.goods(3)
    orders = [case.order() for _ in goods]
    focus = rng.randrange(3)
    nodes, places = (ZH_NODES, ZH_PLACES) if case.zh else (EN_NODES, EN_PLACES)
    records: list[str] = []
    tracks: list[tuple[int, str]] = []
    earlier: list[tuple[int, str]] = []
    for n, (order, item) in enumerate(zip(orders, goods, strict=True)):
        placed = case.now - rng.randint(6, 15) * DAY
        records.append(
            case.put(
                f"order:{order}",
                case.say(
                    f"Order {order}: {item}, paid; dispatched from the warehouse.",
                    f"订单{order}：{item}，已付款，已从仓库发出。",
                ),
                placed,
                f"customer:{u}",
                "order",
                "erp",
            )
        )
        waybill = case.waybill()
        a, b = rng.sample(places, 2)
        steps = rng.randint(2, 4) if n == focus else 1
        # the focused order's last node is older than the other orders' nodes
        start = case.now - (rng.randint(60, 90) if n == focus else rng.randint(2, 12)) * HOUR
        at = start
        for step in range(steps):
            # Each node some 8-14 hours after the one before: a waybill's nodes happen in order
            # (``step * gap`` with a gap drawn per step could put a later node before an
            # earlier one, and then the latest node by time is not the one the case expects).
            gap = rng.randint(8, 14) * HOUR
            at = start if step == 0 else at + gap
            node = nodes[step].format(a=a, b=b)
            text = case.say(
                f"Waybill {waybill} (order {order}): {node}.",
                f"运单{waybill}（订单{order}）：{node}。",
            )
            doc = case.put(
                f"waybill:{waybill}",
                text,
                at,
                f"shipment:{waybill}",
                "shipment",
                "logistics",
                anchors=[f"order:{order}", f"customer:{u}"],
            )
            (tracks if step == steps - 1 else earlier).append((n, doc))
    faq = case.put(
        "faq:delivery",
        case.say(
            "Delivery FAQ: parcels usually arrive 3-5 days after dispatch; tracking updates "
            "every few hours.",
            "物流常见问题：发货后一般3-5天送达，物流信息每隔几小时更新一次。",
        ),
        rng.randint(1, 10) * DAY,
        "policy:delivery",
        "faq",
        "wiki",
    )
    case.filler(u)
    right = next(doc for n, doc in tracks if n == focus)
    stale = [doc for n, doc in tracks if n != focus] + [doc for _, doc in earlier]
    query = case.say(
        [
            "And the tracking?",
            "where's the parcel now?",
            "what about delivery?",
            "shipping status?",
        ],
        ["那物流呢？", "物流到哪了", "快递走到哪了？", "那现在到哪了"],
    )
    request = {
        "user_id": u,
        "context": {"active_entities": [{"type": "order", "id": orders[focus]}]},
    }
    case.ask_fresh(query, right, [*stale, *records, faq], request)


def my_order_isolated(case: FreshCase) -> None:
    rng = case.rng
    u = case.customer()
    others = [case.customer() for _ in range(2)]
    item = case.goods()[0]
    maker = case.model().split()[0]

    def order(cid: str, age_hours: int, tenant: str | None = None) -> str:
        number = case.order()
        ship = case.date(case.now + rng.randint(1, 5) * DAY)
        text = case.say(
            f"Order {number}: {maker} {item}, paid; waiting for stock, expected to ship {ship}.",
            f"订单{number}：{maker}{item}，已付款，等待备货，预计{ship}发货。",
        )
        return case.put(
            f"order:{number}",
            text,
            age_hours * HOUR,
            f"customer:{cid}",
            "order_status",
            "erp",
            status="pending",
            tenant=tenant,
        )

    mine = order(u, rng.randint(30, 70))
    theirs = [order(cid, rng.randint(2, 20)) for cid in others]
    twin = order(u, rng.randint(1, 10), tenant=case.twin)  # another shop, same customer number
    suggestion = case.put(
        f"feedback:{u}",
        case.say(
            "Customer suggestion: please offer weekend shipping and let me pick the courier.",
            "客户建议：希望周末也能发货，并且可以自己选快递。",
        ),
        rng.randint(1, 24) * HOUR,
        f"customer:{u}",
        "feedback",
        "chat_log",
    )
    case.filler(u)
    query = case.say(
        ["When will my order ship?", "has my order shipped yet?", "my order — dispatch date?"],
        ["我的订单什么时候发货？", "我的订单发了没", "我的单什么时候能发"],
    )
    case.ask_fresh(query, mine, [*theirs, suggestion], {"user_id": u}, forbidden=[twin])
