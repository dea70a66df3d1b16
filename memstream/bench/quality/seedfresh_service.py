"""Fresh seed kinds about customers, their returns, complaints and views (``seedfresh``).

- ``return_named_month``: a back-office agent asks what a named customer returned last month
  (no user in the request): that customer's RMA of last month, not their older RMA, not their
  order of last month, not another customer's fresher RMA of the same goods;
- ``recall_still_open``: "is my complaint still open?" — a charger complaint resolved in March
  (two versions: opened, replaced) and the same user's June complaint on the same charger, a
  recalled batch still in progress: the June ticket, not the closed one, not the quality
  department's recall notice, not another customer's fresher closed ticket;
- ``overdue_complaint``: "which of my complaints is overdue?": the ticket still processing
  more than 48 hours after it was opened, not the one opened hours ago, not a resolved one;
- ``last_view_recent``: "上次看的蓝牙耳机有降噪吗": last week's headphones view, not the
  three-year-old earbuds view that says "no ANC", not a fresher view of other goods, not another
  user's view.
Pure: ``now`` comes with the case.
"""

from __future__ import annotations

from datetime import datetime

from memstream.bench.quality.seed_words import DAY, month_start
from memstream.bench.quality.seedfresh_words import HOUR, ISSUES, REASONS, FreshCase


def return_named_month(case: FreshCase) -> None:
    rng = case.rng
    a, b = case.person(), case.person()
    ca, cb = case.customer(), case.customer()
    item, other_item, bought = case.goods(3)
    maker = case.model().split()[0]
    reason, old_reason = case.pair(REASONS, 2)
    last = month_start(case.now, 1)
    mine_at = last + rng.randint(2, 14) * DAY + rng.randint(9, 17) * HOUR
    theirs_at = mine_at + rng.randint(3, 12) * DAY
    older_at = month_start(case.now, rng.randint(3, 5)) + rng.randint(1, 25) * DAY
    for name, cid in ((a, ca), (b, cb)):
        case.put(
            f"card:{cid}",
            case.say(f"CRM customer card {cid}: {name}.", f"CRM客户档案 {cid}：{name}。"),
            rng.randint(300, 900) * DAY,
            f"customer:{cid}",
            "profile",
            "crm",
        )

    def rma(name: str, cid: str, goods: str, why: str, at: datetime) -> str:
        number = case.rma()
        text = case.say(
            f"{number} · {name} ({cid}) · {maker} {goods} returned · reason: {why} · refund "
            "issued to the original payment method.",
            f"{number}｜{name}（{cid}）｜退回{maker}{goods}｜原因：{why}｜已原路退款。",
        )
        return case.put(f"rma:{number}", text, at, f"customer:{cid}", "return", "erp")

    right = rma(a, ca, item, reason, mine_at)
    older = rma(a, ca, other_item, old_reason, older_at)
    theirs = rma(b, cb, item, reason, theirs_at)
    order = case.order()
    sale = case.put(
        f"order:{order}",
        case.say(
            f"Sales order {order} · {a} ({ca}) · {maker} {bought} · delivered.",
            f"销售订单{order}｜{a}（{ca}）｜{maker}{bought}｜已签收。",
        ),
        mine_at + rng.randint(1, 6) * DAY,
        f"customer:{ca}",
        "order",
        "erp",
    )
    month = case.month(last, year=False)
    query = case.say(
        [
            f"What did {a} return last month?",
            f"{a} — any returns in {month}?",
            f"pull up {a}'s return from last month",
        ],
        [f"{a}上个月退过什么货？", f"{a}{month}退了啥", f"查一下{a}上个月的退货"],
    )
    case.ask_fresh(query, right, [older, theirs, sale])


def recall_still_open(case: FreshCase) -> None:
    rng = case.rng
    u, v = case.customer(), case.customer()
    charger = case.model()
    year = case.now.year if case.now.month >= 8 else case.now.year - 1
    march = case.now.replace(year=year, month=3, day=rng.randint(3, 25), hour=10, minute=0)
    june = case.now.replace(year=year, month=6, day=rng.randint(3, 25), hour=14, minute=0)
    first, second = case.ticket(), case.ticket()
    closed = [
        case.put(
            f"ticket:{first}",
            case.say(
                f"Ticket {first} opened {case.stamp(march)}: {charger} charger gets hot while "
                "charging. Status: processing.",
                f"工单{first}（{case.stamp(march)}创建）：{charger}充电器充电时发热。状态：处理中。",
            ),
            march,
            f"customer:{u}",
            "complaint",
            "crm",
            status="processing",
            anchors=[f"product:{charger}"],
        ),
        case.put(
            f"ticket:{first}",
            case.say(
                f"Ticket {first}: {charger} charger heating — unit replaced, customer confirmed "
                "the problem is solved. Status: resolved.",
                f"工单{first}：{charger}充电器发热——已换新，客户确认问题解决。状态：已解决。",
            ),
            march + rng.randint(2, 5) * DAY,
            f"customer:{u}",
            "complaint",
            "crm",
            status="resolved",
            anchors=[f"product:{charger}"],
        ),
    ]
    opened = case.put(
        f"ticket:{second}",
        case.say(
            f"Ticket {second} opened {case.stamp(june)}: the same {charger} charger heats up "
            "again. Status: processing.",
            f"工单{second}（{case.stamp(june)}创建）：同款{charger}充电器再次发热。状态：处理中。",
        ),
        june,
        f"customer:{u}",
        "complaint",
        "crm",
        status="processing",
        anchors=[f"product:{charger}"],
    )
    batch = f"B{rng.randint(1000, 9999)}"
    ongoing = case.put(
        f"ticket:{second}",
        case.say(
            f"Ticket {second}: {charger} charger heating traced to batch {batch}; batch recalled, "
            "replacement pending. Status: processing (batch risk).",
            f"工单{second}：{charger}充电器发热确认为{batch}批次问题，该批次已召回，待换货。"
            "状态：处理中（批次风险）。",
        ),
        june + rng.randint(1, 4) * DAY,
        f"customer:{u}",
        "complaint",
        "crm",
        status="high_risk",
        anchors=[f"product:{charger}"],
    )
    notice = case.put(
        f"notice:recall:{batch}",
        case.say(
            f"Quality notice: {charger} chargers of batch {batch} are recalled for overheating.",
            f"质量部通知：{charger}充电器{batch}批次因发热召回。",
        ),
        june + rng.randint(5, 20) * DAY,
        f"product:{charger}",
        "notice",
        "wiki",
    )
    third = case.ticket()
    other = case.put(
        f"ticket:{third}",
        case.say(
            f"Ticket {third}: {charger} charger gets hot — unit replaced. Status: resolved.",
            f"工单{third}：{charger}充电器发热——已换新。状态：已解决。",
        ),
        case.now - rng.randint(3, 20) * DAY,
        f"customer:{v}",
        "complaint",
        "crm",
        status="resolved",
        anchors=[f"product:{charger}"],
    )
    case.filler(u)
    query = case.say(
        [
            "Is my complaint still open?",
            "my charger complaint — resolved yet?",
            "any open complaint on my charger?",
            "status of my overheating complaint?",
        ],
        [
            "我的投诉还没处理完吗？",
            "我那个充电器投诉结了没",
            "充电器发热的投诉还在处理吗",
            "我还有没结案的投诉吗",
        ],
    )
    case.ask_fresh(query, ongoing, [*closed, opened, notice, other], {"user_id": u})


def overdue_complaint(case: FreshCase) -> None:
    rng = case.rng
    u, v = case.customer(), case.customer()
    goods = case.goods(3)
    issues = case.pair(ISSUES, 3)
    ages = [rng.randint(52, 96), rng.randint(3, 30), rng.randint(120, 300)]
    statuses = [("processing", "Status: processing.", "状态：处理中。")] * 2
    statuses.append(("resolved", "Status: resolved, refund issued.", "状态：已解决，已退款。"))
    ids = []
    for item, issue, age, (status, en, zh) in zip(goods, issues, ages, statuses, strict=True):
        number, at = case.ticket(), case.now - age * HOUR
        text = case.say(
            f"Complaint {number} opened {case.stamp(at)}: {item} — {issue}. {en}",
            f"投诉{number}（{case.stamp(at)}创建）：{item}——{issue}。{zh}",
        )
        ids.append(
            case.put(
                f"ticket:{number}", text, at, f"customer:{u}", "complaint", "crm", status=status
            )
        )
    number, at = case.ticket(), case.now - rng.randint(50, 90) * HOUR
    theirs = case.put(
        f"ticket:{number}",
        case.say(
            f"Complaint {number} opened {case.stamp(at)}: {goods[1]} — {issues[1]}. "
            "Status: processing.",
            f"投诉{number}（{case.stamp(at)}创建）：{goods[1]}——{issues[1]}。状态：处理中。",
        ),
        at,
        f"customer:{v}",
        "complaint",
        "crm",
        status="processing",
    )
    case.filler(u)
    query = case.say(
        [
            "Which of my complaints is overdue?",
            "anything of mine open for more than 48 hours?",
            "which complaint of mine should be escalated?",
        ],
        ["我哪个投诉超时了？", "我有超过48小时还没处理的投诉吗", "我哪个投诉该升级了"],
    )
    case.ask_fresh(query, ids[0], [*ids[1:], theirs], {"user_id": u})


def last_view_recent(case: FreshCase) -> None:
    rng = case.rng
    u, v = case.customer(), case.customer()
    recent, old, theirs = case.model(), case.model(), case.model()
    price = rng.randrange(1299, 2999, 100)

    def view(who: str, text: str, age: int) -> str:
        return case.put(
            f"view:{who}:{age}", text, age * DAY, f"customer:{who}", "page_view", "clickstream"
        )

    right = view(
        u,
        case.say(
            f"Browsing history: {recent} over-ear bluetooth headphones, product page, {price} CNY.",
            f"浏览记录：{recent} 头戴式蓝牙耳机，商品详情页，¥{price}。",
        ),
        rng.randint(4, 9),
    )
    stale_view = view(
        u,
        case.say(
            f"Browsing history: {old} bluetooth earbuds - no active noise cancelling.",
            f"浏览记录：{old} 蓝牙耳机 - 无主动降噪。",
        ),
        rng.randint(1050, 1200),
    )
    other_goods = view(
        u,
        case.say(
            f"Browsing history: {case.goods()[0]}, product page.",
            f"浏览记录：{case.goods()[0]}，商品详情页。",
        ),
        rng.randint(1, 3),
    )
    other_user = view(
        v,
        case.say(
            f"Browsing history: {theirs} bluetooth headphones with noise cancelling.",
            f"浏览记录：{theirs} 降噪蓝牙耳机。",
        ),
        rng.randint(1, 3),
    )
    case.filler(u)
    query = case.say(
        [
            "Do the bluetooth headphones I looked at last time have noise cancelling?",
            "the headphones I viewed last — do they have ANC?",
            "last headphones I checked: noise cancelling or not?",
        ],
        [
            "上次看的蓝牙耳机有降噪吗？",
            "我上回看的那款耳机带降噪吗",
            "上次浏览的耳机有没有主动降噪",
        ],
    )
    case.ask_fresh(query, right, [stale_view, other_goods, other_user], {"user_id": u})
