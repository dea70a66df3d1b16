"""The seed trap suite: a third generator, written from the seed article's own examples.

Each kind builds instances in their own tenant, alternately in English and Chinese, with names,
products, ids and dates drawn from ``random.Random(f"seedtraps:{seed}:{kind}")`` (each
``--seed`` gives new wording); every question says which memory must rank first (``right``)
and which must not (``stale``; ``forbidden``: never returned). The request carries what an
agent knows: the user it serves, the entities in focus. Kinds about customers here, about
their orders in ``seed_orders`` (``ordinal_first``, ``ordinal_last``, ``period_named``,
``my_order_vs_policy``), about products in ``seed_catalogue`` (``this_model_whitepaper``,
``version_now``, ``version_named_date``, ``colour_port``, ``four_attributes``, ``doc_priority``):

- ``named_customer``: "张三上个月退过什么货" with no user_id: 张三's return, not 李四's
  near-identical, fresher one;
- ``closed_vs_recall``: a charger-overheating complaint resolved (replaced) vs the same user's
  later one on the same charger, a recalled batch still in progress: the open risk — also when
  the resolved one has a fresher follow-up note (the seed's timestamp trap);
- ``followup_logistics``: "那物流呢？" with the order in ``context.active_entities``: that
  order's shipment, not the fresher shipment of another order;
- ``last_time_view``: "上次看的蓝牙耳机有降噪吗": last week's view, not the three-year-old view
  whose text says "no active noise cancelling";
- ``source_ladder``: CRM record vs the user's own claim in a chat log vs a third-party forum:
  the CRM record (authority 0.95 > 0.65 > 0.3);
- ``named_identifier``: a ticket number or device SN named: that record, not the user's fresher
  look-alike.
Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta

from memstream.bench.quality.seed_catalogue import (
    colour_port,
    doc_priority,
    four_attributes,
    this_model_whitepaper,
    version_named_date,
    version_now,
)
from memstream.bench.quality.seed_orders import (
    my_order_vs_policy,
    ordinal_first,
    ordinal_last,
    period_named,
)
from memstream.bench.quality.seed_words import (
    COURIERS,
    DAY,
    EN_CITIES,
    RETURN_REASONS,
    ZH_CITIES,
    SeedCase,
)
from memstream.bench.quality.suite import Suite


def named_customer(case: SeedCase) -> None:
    rng = case.rng
    a, b = case.person(), case.person()
    ca, cb = case.customer(), case.customer()
    item, colour = case.goods()[0], case.colours(1)[0]
    en, zh = rng.choice(RETURN_REASONS)
    month_start = case.now.replace(day=1, hour=10, minute=0, second=0, microsecond=0)
    mine_at = month_start - rng.randint(12, 26) * DAY
    theirs_at = mine_at + rng.randint(2, 10) * DAY
    ids = []
    for name, cid, at in ((a, ca, mine_at), (b, cb, theirs_at)):
        text = case.say(
            f"Return record: {name} ({cid}) returned a {colour} {item}; reason: {en}; refunded.",
            f"退货记录：{name}（{cid}）退货：{colour}{item}，原因：{zh}，已退款。",
        )
        ids.append(case.put(f"return:{cid}", text, at, f"customer:{cid}", "return", "erp"))
        case.filler(cid)
    query = case.say(
        [
            f"What did {a} return last month?",
            f"{a}'s return last month?",
            f"which item did {a} send back last month?",
        ],
        [f"{a}上个月退过什么货？", f"{a}上个月退的是什么", f"{a}上月退货？"],
    )
    case.ask_seed(query, ids[0], ids[1:])


def closed_vs_recall(case: SeedCase) -> None:
    rng = case.rng
    u, charger = case.customer(), case.model()
    first = case.now - rng.randint(150, 250) * DAY
    key = f"complaint:{u}:1"
    closed = [
        case.put(
            key,
            case.say(
                f"Complaint: the {charger} charger overheats while charging. Status: in progress.",
                f"投诉：{charger} 充电器充电时发热。状态：处理中。",
            ),
            first,
            f"customer:{u}",
            "complaint",
            "crm",
            status="pending",
        ),
        case.put(
            key,
            case.say(
                f"Complaint: the {charger} charger overheats. Outcome: replaced with a new unit, "
                "issue resolved.",
                f"投诉：{charger} 充电器发热。处理结果：已换新，问题解决。",
            ),
            first + 3 * DAY,
            f"customer:{u}",
            "complaint",
            "crm",
            status="resolved",
        ),
    ]
    recall_at = first + rng.randint(80, 110) * DAY
    recall = case.put(
        f"complaint:{u}:2",
        case.say(
            f"Complaint: the same {charger} charger overheats again. Batch problem, the batch is "
            "recalled; in progress.",
            f"投诉：同款{charger}充电器再次发热。批次问题，已召回，处理中。",
        ),
        recall_at,
        f"customer:{u}",
        "complaint",
        "crm",
        status="high_risk",
    )
    if rng.random() < 0.5:  # the closed complaint's follow-up note is the freshest record
        closed.append(
            case.put(
                key,
                case.say(
                    f"Complaint about the {charger} charger overheating: follow-up call done, "
                    "customer confirmed the replacement works. Closed.",
                    f"{charger} 充电器发热投诉：已回访，客户确认换新后正常。已关闭。",
                ),
                recall_at + rng.randint(5, 20) * DAY,
                f"customer:{u}",
                "complaint",
                "crm",
                status="resolved",
            )
        )
    case.filler(u)
    query = case.say(
        [
            "Is my charger overheating problem still open?",
            "charger overheating — status?",
            "what's happening with my charger that gets hot?",
        ],
        ["我的充电器发热问题现在什么情况？", "充电器发热那个事？", "充电器发热的问题处理好了吗"],
    )
    case.ask_seed(query, recall, closed, {"user_id": u})


def followup_logistics(case: SeedCase) -> None:
    rng = case.rng
    u = case.customer()
    goods = case.goods(3)
    orders = [case.order() for _ in goods]
    focus = rng.randrange(3)
    ids = []
    for n, (order, item) in enumerate(zip(orders, goods, strict=True)):
        placed = rng.randint(8, 20) * DAY
        case.put(
            f"order:{order}",
            case.say(f"Order {order}: {item}, paid.", f"订单{order}：{item}，已付款。"),
            placed,
            f"customer:{u}",
            "order",
            "erp",
        )
        case.anchor([f"order:{order}"])
        courier = rng.choice(COURIERS)
        city = rng.randrange(len(EN_CITIES))
        number = rng.randint(10**9, 10**10 - 1)
        age = rng.randint(3, 6) * DAY if n == focus else timedelta(hours=rng.randint(2, 30))
        text = case.say(
            f"Order {order} shipment: {courier[0]} tracking {number}, in transit via "
            f"{EN_CITIES[city]}.",
            f"订单{order}物流：{courier[1]}运单{number}，运输中，途经{ZH_CITIES[city]}。",
        )
        ids.append(case.put(f"shipment:{order}", text, age, f"order:{order}", "shipment", "erp"))
        case.anchor([f"customer:{u}"])
    query = case.say(
        ["And the shipping?", "where is it now?", "what about delivery?", "tracking?"],
        ["那物流呢？", "物流到哪了", "快递呢？", "那发货了吗"],
    )
    request = {
        "user_id": u,
        "context": {"active_entities": [{"type": "order", "id": orders[focus]}]},
    }
    case.ask_seed(query, ids[focus], [i for n, i in enumerate(ids) if n != focus], request)


def last_time_view(case: SeedCase) -> None:
    rng = case.rng
    u, old_model, new_model = case.customer(), case.model(), case.model()
    old = case.put(
        f"view:{u}:{old_model}",
        case.say(
            f"Viewed product page: {old_model} bluetooth earbuds - no active noise cancelling.",
            f"浏览记录：{old_model} 蓝牙耳机 - 无主动降噪。",
        ),
        rng.randint(1000, 1200) * DAY,
        f"customer:{u}",
        "page_view",
        "clickstream",
    )
    new = case.put(
        f"view:{u}:{new_model}",
        case.say(
            f"Viewed product page: {new_model} wireless over-ear headphones.",
            f"浏览记录：{new_model} 头戴式无线耳机。",
        ),
        rng.randint(3, 9) * DAY,
        f"customer:{u}",
        "page_view",
        "clickstream",
    )
    case.filler(u)
    query = case.say(
        [
            "Do the bluetooth headphones I looked at last time have noise cancelling?",
            "the headphones I viewed last — ANC?",
            "did the earbuds I checked out last time have noise cancelling?",
        ],
        ["上次看的蓝牙耳机有降噪吗？", "我上次看的耳机有降噪吗", "上次那副耳机带降噪吗"],
    )
    case.ask_seed(query, new, [old], {"user_id": u})


def source_ladder(case: SeedCase) -> None:
    rng = case.rng
    u, m = case.customer(), case.model()
    until = case.now + rng.randint(100, 500) * DAY
    claimed = until + rng.randint(200, 400) * DAY
    crm = case.put(
        f"warranty:{u}",
        case.say(
            f"CRM contract record: the warranty of customer {u} for the {m} runs until "
            f"{case.date(until)}.",
            f"CRM合同记录：客户{u}的{m}保修期至{case.date(until)}。",
        ),
        rng.randint(60, 200) * DAY,
        f"customer:{u}",
        "warranty",
        "crm",
    )
    chat = case.put(
        f"chat:{u}:warranty",
        case.say(
            f"Chat log: the customer says their {m} warranty runs until {case.date(claimed)}.",
            f"聊天记录：客户说自己的{m}保修到{case.date(claimed)}。",
        ),
        rng.randint(2, 10) * DAY,
        f"customer:{u}",
        "warranty",
        "chat_log",
    )
    forum = case.put(
        f"forum:{m}:warranty",
        case.say(
            f"Third-party forum: the {m} always comes with a {rng.randint(3, 5)}-year warranty.",
            f"第三方论坛：{m}的保修期都是{rng.randint(3, 5)}年。",
        ),
        rng.randint(1, 5) * DAY,
        f"product:{m}",
        "warranty",
        "forum",
    )
    case.filler(u)
    query = case.say(
        ["When does my warranty end?", "warranty until when?", f"how long is my {m} covered?"],
        ["我的保修到什么时候？", "保修期？", f"我的{m}保修还有多久"],
    )
    case.ask_seed(query, crm, [chat, forum], {"user_id": u})


def named_identifier(case: SeedCase) -> None:
    rng = case.rng
    u, m = case.customer(), case.model()
    use_ticket = rng.random() < 0.5
    names = [case.ticket() if use_ticket else case.serial() for _ in range(3)]
    ages = sorted((rng.randint(5, 90) for _ in names), reverse=True)
    ids = []
    for name, age in zip(names, ages, strict=True):
        until = case.date(case.now + rng.randint(30, 700) * DAY)
        if use_ticket:
            text = case.say(
                f"Ticket #{name}: the {m} does not turn on; waiting for a technician.",
                f"工单#{name}：{m} 无法开机，等待技术人员处理。",
            )
            fact, key = "ticket", f"ticket:{name}"
        else:
            text = case.say(
                f"Device {name}: {m}, registered to the customer, warranty until {until}.",
                f"设备 {name}：{m}，已登记，保修至{until}。",
            )
            fact, key = "device", f"device:{name}"
        ids.append(
            case.put(key, text, age * DAY, f"customer:{u}", fact, "crm", attributes={fact: name})
        )
    target = rng.randrange(2)  # never the freshest
    name = names[target]
    if use_ticket:
        query = case.say(
            [f"What's the status of ticket #{name}?", f"#{name}?", f"ticket {name} update?"],
            [f"工单#{name}的状态？", f"{name}进展如何", f"工单{name}？"],
        )
    else:
        query = case.say(
            [f"warranty of {name}?", f"until when is device {name} covered?"],
            [f"{name} 保修到什么时候？", f"设备{name}的保修？"],
        )
    case.ask_seed(query, ids[target], [i for n, i in enumerate(ids) if n != target], {"user_id": u})


KINDS: dict[str, Callable[[SeedCase], None]] = {
    "named_customer": named_customer,
    "this_model_whitepaper": this_model_whitepaper,
    "closed_vs_recall": closed_vs_recall,
    "version_now": version_now,
    "version_named_date": version_named_date,
    "followup_logistics": followup_logistics,
    "colour_port": colour_port,
    "four_attributes": four_attributes,
    "last_time_view": last_time_view,
    "ordinal_first": ordinal_first,
    "ordinal_last": ordinal_last,
    "period_named": period_named,
    "source_ladder": source_ladder,
    "my_order_vs_policy": my_order_vs_policy,
    "named_identifier": named_identifier,
    "doc_priority": doc_priority,
}


def seed_trap_suite(per_kind: int, now: datetime, seed: int = 7) -> Suite:
    """``per_kind`` instances of every kind (alternately English and Chinese), each in its own
    tenant ``seed-<kind>-<i>``; the same seed and ``now`` give the same suite."""
    suite = Suite("seedtraps", limit=5)
    for kind, build in KINDS.items():
        rng = random.Random(f"seedtraps:{seed}:{kind}")  # noqa: S311 - benchmark data
        for index in range(per_kind):
            case = SeedCase(kind, index, f"seed-{kind}-{index}", now, rng)
            build(case)
            suite.events.extend(case.events)
            suite.late.extend(case.late)
            suite.questions.extend(case.questions)
    suite.notes.append(
        f"{per_kind} instances per kind (English and Chinese alternately), seed {seed}; wrong = "
        "top answer not the expected memory, or a forbidden one (retracted) in the top 5"
    )
    return suite
