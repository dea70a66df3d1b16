"""The held-out seed suite's personal kinds: ``twin_customer`` (look-alike customers' records,
a first-person question) and ``complaint_state`` (which complaint is still open). Pure.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from memstream.bench.quality import seedheld_pools as pools
from memstream.bench.quality import seedheld_words as words
from memstream.bench.quality.seedheld_case import Case, amount, pick


def _address(rng: random.Random, lang: str) -> str:
    if lang == "zh":
        return (
            f"{rng.choice(words.CITIES_ZH)}{rng.choice(words.DISTRICTS_ZH)}{rng.choice(words.ROADS_ZH)}"
            f"{rng.randint(3, 399)}号{rng.randint(1, 30)}栋{rng.randint(101, 2805)}室"
        )
    return f"{rng.randint(2, 240)} {rng.choice(words.STREETS_EN)}, {rng.choice(words.CITIES_EN)}"


def twin_customer(c: Case) -> None:
    """Several customers of one tenant hold the same kind of record in near-identical words; a
    first-person (often terse) question from one of them."""
    rng, lang, used = c.rng, c.lang, c.used
    ids = words.customer_ids(rng, 1 + rng.randint(1, 4), used)
    me = ids[0]
    scenario = rng.choice(["return", "address", "tier", "warranty", "appointment", "plan"])
    item = rng.choice(words.ITEMS)
    details = list(range(3))
    rng.shuffle(details)
    right = ""
    avoid: tuple[str, ...] = ()
    for n, cid in enumerate(ids):
        at = c.days_ago(3, 240)
        d = details[n % 3]
        amt = amount(rng, lang, 25, 900)
        if scenario == "return":
            rid = words.ticket_id(rng, used)
            (oid,) = words.order_ids(rng, 1, used)
            name, det = (item[1], item[3][d]) if lang == "zh" else (item[0], item[2][d])
            text = pick(
                rng,
                [
                    "退货单{r}已通过：{i}（{d}）已寄回，退款{a}元原路返回。",
                    "售后{r}：客户退回{i}，{d}，已退款{a}元。",
                ]
                if lang == "zh"
                else [
                    "Return {r} approved: {i} ({d}) sent back; refund of {a} issued to the "
                    "original card.",
                    "RMA {r}: the {i}, {d}, came back to the warehouse. Refunded {a}.",
                ],
            ).format(r=rid, i=name, d=det, a=amt)
            if rng.random() < 0.5:
                doc = c.put(
                    f"return:{oid}",
                    text,
                    at,
                    f"order:{oid}",
                    "return",
                    "erp",
                    status="resolved",
                    entities=[f"customer:{cid}"],
                    attributes={"order": oid},
                )
            else:
                doc = c.put(
                    f"customer:{cid}|return|{rid}",
                    text,
                    at,
                    f"customer:{cid}",
                    "return",
                    "ticketing",
                    status="resolved",
                    attributes={"order": oid},
                )
            qs = (
                [
                    "我退过什么货？",
                    "我退的是哪件东西？",
                    "我的退货退款到了吗？退的是什么？",
                    "我的退货？",
                ]
                if lang == "zh"
                else [
                    "what did I send back?",
                    "which item did I return?",
                    "was my return refunded, and what was it for?",
                    "my return?",
                ]
            )
        elif scenario == "address":
            avoid = ("parcel", "deliver", "包裹", "送货", "门卫")
            addr = _address(rng, lang)
            text = pick(
                rng,
                ["默认收货地址：{a}。", "收货地址已更新为{a}。"]
                if lang == "zh"
                else ["Default delivery address set to {a}.", "Shipping address on file: {a}."],
            ).format(a=addr)
            doc = c.put(
                f"customer:{cid}|shipping_address", text, at, f"customer:{cid}", "profile", "crm"
            )
            qs = (
                ["我的收货地址是哪里？", "我的地址？", "你们会把东西寄到我哪个地址？"]
                if lang == "zh"
                else [
                    "where do my orders get shipped to?",
                    "my address on file?",
                    "what address do you have for me?",
                ]
            )
        elif scenario == "tier":
            tiers = (
                ["银卡", "金卡", "白金卡", "钻石卡"]
                if lang == "zh"
                else ["Silver", "Gold", "Platinum", "Diamond"]
            )
            tier, pts = rng.choice(tiers), rng.randint(120, 48000)
            text = pick(
                rng,
                ["会员等级：{t}，积分余额{p}。", "当前为{t}会员，可用积分{p}分。"]
                if lang == "zh"
                else [
                    "Membership level: {t}; points balance {p}.",
                    "Member tier {t}, {p} reward points available.",
                ],
            ).format(t=tier, p=pts)
            doc = c.put(f"customer:{cid}|loyalty", text, at, f"customer:{cid}", "profile", "crm")
            qs = (
                ["我是什么等级的会员？", "我还有多少积分？", "我的会员等级？"]
                if lang == "zh"
                else ["what tier am I?", "how many points have I got?", "my membership level?"]
            )
        elif scenario == "warranty":
            tid = words.ticket_id(rng, used)
            outs = (
                ["已批准，换新机已寄出", "已批准，送修服务中心", "已拒绝：进水损坏"]
                if lang == "zh"
                else [
                    "approved, replacement shipped",
                    "approved, repair at the service centre",
                    "rejected: liquid damage",
                ]
            )
            name, det = (item[1], item[3][d]) if lang == "zh" else (item[0], item[2][d])
            sn = f"SN{rng.randint(10**7, 10**8 - 1)}"
            text = pick(
                rng,
                ["保修申请{t}：{i}（{d}，序列号{s}）{o}。"]
                if lang == "zh"
                else [
                    "Warranty claim {t} for the {i} ({d}, serial {s}): {o}.",
                    "Claim {t} / {i}, {d}, serial {s} — {o}.",
                ],
            ).format(t=tid, i=name, d=det, s=sn, o=rng.choice(outs))
            doc = c.put(
                f"warranty:{tid}",
                text,
                at,
                f"customer:{cid}",
                "warranty_claim",
                "ticketing",
                attributes={"serial": sn},
            )
            qs = (
                ["我的保修申请结果如何？", "我的保修批了吗？", "我的保修进度？"]
                if lang == "zh"
                else [
                    "what happened with my warranty claim?",
                    "did my warranty claim go through?",
                    "my warranty claim status?",
                ]
            )
        elif scenario == "appointment":
            when = c.now + timedelta(days=rng.randint(2, 30))
            slots = (
                ["上午", "下午", "晚上6-8点"]
                if lang == "zh"
                else ["morning", "afternoon", "8-10 am"]
            )
            team = rng.choice(["A", "B", "C", "D", "East", "North"])
            text = pick(
                rng,
                ["已预约{m}月{d}日{s}上门安装，师傅组{t}。"]
                if lang == "zh"
                else [
                    "Installation visit booked for {d} {M} ({s}), crew {t}.",
                    "Technician install scheduled {M} {d}, {s} slot; team {t}.",
                ],
            ).format(
                m=when.month,
                d=when.day,
                M=words.EN_MON[when.month - 1],
                s=rng.choice(slots),
                t=team,
            )
            doc = c.put(
                f"customer:{cid}|install_visit", text, at, f"customer:{cid}", "appointment", "crm"
            )
            qs = (
                ["师傅哪天来我家？", "我约的安装是哪天？", "我的安装时间？"]
                if lang == "zh"
                else [
                    "when is the technician coming to me?",
                    "when's my installation?",
                    "my install date?",
                ]
            )
        else:  # plan
            plans = (
                ["光纤300M", "光纤500M", "千兆光纤", "20G流量套餐", "50G流量套餐"]
                if lang == "zh"
                else ["Fibre 300", "Fibre 500", "Fibre 1000", "Mobile 20GB", "Mobile 50GB"]
            )
            text = pick(
                rng,
                ["套餐已变更为{p}，每月{a}元。", "当前套餐：{p}，月费{a}元。"]
                if lang == "zh"
                else [
                    "Plan switched to {p} at {a} per month.",
                    "Current plan: {p}, monthly fee {a}.",
                ],
            ).format(p=rng.choice(plans), a=amount(rng, lang, 9, 120))
            doc = c.put(f"customer:{cid}|plan", text, at, f"customer:{cid}", "subscription", "crm")
            qs = (
                ["我现在是什么套餐？", "我每个月交多少钱？", "我的套餐？"]
                if lang == "zh"
                else ["which plan am I on?", "how much do I pay a month?", "my plan?"]
            )
        if n == 0:
            right, questions = doc, qs
    c.noise(rng.randint(1, 3), me, rng.randint(0, 2), avoid)
    c.ask(rng.choice(questions), [right], {"user_id": me})


GENERIC_RESOLVED = {
    "en": [
        "Asked for a copy of the {p} invoice; PDF sent, closed.",
        "Question about the {p} instalment plan answered; ticket closed.",
        "Requested a spare {p} manual; emailed, done.",
    ],
    "zh": [
        "索要{p}发票副本，已发送电子版，结单。",
        "{p}分期付款疑问已解答，工单关闭。",
        "索要{p}电子说明书，已邮件发送，完成。",
    ],
}


def complaint_state(c: Case) -> None:
    """One customer, two or three complaints about the same product: the resolved ones are
    settled, one is still open; the question asks what is still unresolved."""
    rng, lang = c.rng, c.lang
    p_en, p_zh, res_en, res_zh, open_en, open_zh = rng.choice(pools.COMPLAINTS)
    p = p_zh if lang == "zh" else p_en
    ids = words.customer_ids(rng, 2, c.used)
    me, other = ids
    source = rng.choice(["ticketing", "crm"])
    open_at = c.days_ago(4, 70)
    resolved_newer = rng.random() < 0.5
    if resolved_newer:
        res_at = c.now - (c.now - open_at) * rng.uniform(0.1, 0.6)
        res_text = rng.choice(GENERIC_RESOLVED[lang]).format(p=p)
    else:
        res_at = open_at - timedelta(days=rng.uniform(20, 120))
        res_text = res_zh if lang == "zh" else res_en

    def ticket(cid: str, text: str, at: datetime, status: str) -> str:
        tid = words.ticket_id(rng, c.used)
        return c.put(
            f"complaint:{cid}:{tid}",
            text,
            at,
            f"customer:{cid}",
            "complaint",
            source,
            status=status,
            attributes={"ticket": tid, "product": p_en},
        )

    right = ticket(
        me, open_zh if lang == "zh" else open_en, open_at, rng.choice(["pending", "high_risk"])
    )
    ticket(me, res_text, res_at, "resolved")
    if rng.random() < 0.3:  # a third, long-settled one
        extra = rng.choice(GENERIC_RESOLVED[lang]).format(p=p)
        ticket(me, extra, open_at - timedelta(days=rng.uniform(150, 400)), "resolved")
    if rng.random() < 0.5:  # another customer's open complaint on the same product
        ticket(other, open_zh if lang == "zh" else open_en, c.days_ago(1, 40), "pending")
    c.noise(rng.randint(1, 3), me, rng.randint(0, 2))
    qs = (
        [
            "我的{p}还有什么问题没解决？",
            "{p}的投诉哪一个还在处理中？",
            "关于{p}，我还有没结的工单吗？",
            "{p}现在还有未处理完的问题吗？",
        ]
        if lang == "zh"
        else [
            "is anything still unresolved with my {p}?",
            "which of my {p} complaints is still open?",
            "what's still pending on my {p}?",
            "any open ticket left on my {p}?",
        ]
    )
    c.ask(rng.choice(qs).format(p=p), [right], {"user_id": me})
