"""The seed gate set: labelled questions over the seed suite's tenants, asked without ``force``.

Built from the seed article's gate: a question depends on memory when it is about the user's
own records (time words, possessives, state verbs, anaphora — "return reason?", "when's it
arriving", "我退的是哪个"), about an entity the tenant's memory holds (an order, a ticket, a
model), or when the conversation context says a task or an entity is active ("那物流呢？" with
the order in focus). It does not for small talk, general knowledge (the seed's "今天天气怎么样"),
instructions, a possessive or anaphor that is not about a record ("我的建议是…"), and general
questions near the shop's domain ("how does active noise cancelling work?").

Memory questions come with the tenant's user (``user_id``) and without (an entity named);
the others are spread over the tenants, every other one with a user. Reported per side: the
false-skip rate (memory questions skipped) and the invalid-query rate (others answered), with
and without ``user_id``. Groups are prefixed ``seed gate:`` so the bench keeps them apart from
its own labelled set. Pure: seeded, no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from memstream.bench.quality.gate_set import GateOutcome, GateQuestion
from memstream.bench.quality.suite import Suite

PREFIX = "seed gate: "
MEMORY = ("terse personal", "focus or task", "entity named")
OTHER = ("small talk", "general knowledge", "instruction", "generic possessive", "near-domain")

# fact_type → (English, Chinese) terse questions of the user about such a record
TERSE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "return": (
        ("return reason?", "why did I send it back?", "which one did I return?", "refund done?"),
        ("退货原因？", "我退的是哪个", "退款到了吗", "我为啥退的"),
    ),
    "shipment": (
        ("when's it arriving", "where's my parcel?", "is it shipped yet?", "tracking number?"),
        ("什么时候到", "到哪了", "发货了吗", "快递单号多少"),
    ),
    "order": (
        ("what did I order?", "my order?", "what did I buy?", "which one did I get?"),
        ("我买的是哪个", "我的订单呢", "我下单的是什么", "我之前买过什么"),
    ),
    "order_status": (
        ("when does it ship?", "has my order gone out?", "order status?"),
        ("啥时候发货", "我的订单发了没", "订单状态？"),
    ),
    "complaint": (
        ("my complaint?", "is it fixed yet?", "complaint status", "did you sort out my issue?"),
        ("我的投诉处理了吗", "那个问题解决了吗", "投诉进展？", "我反馈过的问题呢"),
    ),
    "page_view": (
        ("what was I looking at?", "the headphones I checked?", "what did I view last time?"),
        ("上次看的那个", "我之前看的耳机", "我浏览过什么"),
    ),
    "warranty": (
        ("my warranty?", "how long am I covered?", "warranty end date?"),
        ("我的保修？", "保修还有多久", "保修到哪天"),
    ),
    "ticket": (
        ("my ticket?", "any update on my repair?", "ticket status"),
        ("我的工单怎么样了", "维修进度？", "我提交过的工单"),
    ),
    "device": (
        ("my device's warranty?", "is my device still covered?"),
        ("我的设备还在保吗", "我登记的设备"),
    ),
}
FOCUS = (
    ("order", ("And the shipping?", "when will it come?", "tracking?"), ("那物流呢？", "到哪了？")),
    ("product", ("does it support fast charging?", "colours?"), ("它支持快充吗", "有几种颜色")),
)
TASKS = (
    (
        "return_request",
        ("how long does it take?", "what happens next?"),
        ("多久能到账？", "然后呢"),
    ),
    ("order_inquiry", ("any news?", "is it on its way?"), ("有消息吗", "在路上了吗")),
)
SMALL_TALK = (
    ("morning!", "thx", "ok cool", "nice one", "lol ok", "you there?", "cheers", "bye for now"),
    ("你好呀", "在吗", "多谢", "收到", "拜拜", "好的谢谢", "早", "辛苦啦"),
)
COUNTRIES = (
    ("France", "法国"),
    ("Japan", "日本"),
    ("Kenya", "肯尼亚"),
    ("Peru", "秘鲁"),
    ("Norway", "挪威"),
    ("Egypt", "埃及"),
    ("Canada", "加拿大"),
    ("Vietnam", "越南"),
)
CITIES = (("Paris", "巴黎"), ("Tokyo", "东京"), ("Berlin", "柏林"), ("Cairo", "开罗"))
WORDS = (("apple", "苹果"), ("window", "窗户"), ("river", "河流"), ("friend", "朋友"))
TOPICS = (("autumn", "秋天"), ("the sea", "大海"), ("a cat", "小猫"), ("mountains", "山"))
POSSESSIVE = (
    (
        "my advice: keep answers short. agree?",
        "in my opinion tea beats coffee, what do you think?",
        "my bad, ignore that",
        "is it 'me and him went' or 'he and I went'?",
        "what does this word mean: serendipity",
    ),
    (
        "我的建议是写短一点，你觉得呢？",
        "我的天，这也太难了吧",
        "这个成语什么意思：画蛇添足",
        "我觉得咖啡比茶好喝，你说呢",
        "这句话语法对吗：我把饭吃了",
    ),
)
RELATIVES = (("friend", "朋友"), ("brother", "哥哥"), ("boss", "老板"), ("teacher", "老师"))
OPINIONS = (
    ("cats are smarter than dogs", "猫比狗聪明"),
    ("breakfast is the most important meal", "早餐是最重要的一餐"),
    ("it always rains in autumn", "秋天总是下雨"),
    ("reading at night hurts your eyes", "晚上看书伤眼睛"),
)
NEAR_DOMAIN = (
    (
        "how does active noise cancelling work?",
        "what is USB-C?",
        "what's the difference between USB-C and Lightning?",
        "why do chargers get warm?",
        "what does mAh mean on a power bank?",
        "is it safe to leave a phone charging overnight?",
        "what is a product recall?",
        "how do couriers track parcels?",
    ),
    (
        "主动降噪的原理是什么？",
        "什么是Type-C快充协议？",
        "USB-C和Lightning有什么区别",
        "为什么充电器会发热",
        "移动电源的mAh是什么意思",
        "手机整晚充电安全吗",
        "什么是产品召回",
        "快递是怎么追踪包裹的",
    ),
)


def _tenants(suite: Suite) -> dict[str, dict[str, Any]]:
    """tenant → its users with their fact types, and the entities its memories' text names."""
    found: dict[str, dict[str, Any]] = {}
    text: dict[str, str] = {}
    for event in suite.events:
        text[event["tenant_id"]] = text.get(event["tenant_id"], "") + "\n" + event["content"]
    for event in suite.events:
        t = found.setdefault(event["tenant_id"], {"users": {}, "entities": []})
        anchors = [(event["entity_type"], event["entity_id"])]
        anchors += [(e["type"], e["id"]) for e in event.get("entities", [])]
        for kind, ident in anchors:
            if kind == "customer":
                t["users"].setdefault(ident, set()).add(event["fact_type"])
            elif kind in ("order", "product"):
                t["entities"].append((kind, ident))
        t["entities"] += [(k, event["attributes"][k]) for k in ("ticket", "device")
                          if k in event.get("attributes", {})]  # fmt: skip
    for tenant, t in found.items():
        named = dict.fromkeys(e for e in t["entities"] if e[1] in text[tenant])
        t["entities"] = list(named)
    return found


def _named(rng: random.Random, kind: str, ident: str, zh: bool) -> str:
    shapes = {
        "order": (
            ("status of order {i}?", "{i} shipping?", "where is {i}?"),
            ("订单{i}到哪了", "{i}发货了吗"),
        ),
        "product": (
            ("does the {i} support USB-C?", "{i} warranty?", "what do we know about the {i}?"),
            ("{i}支持USB-C吗", "{i}保修几年？", "{i}怎么样"),
        ),
        "ticket": (("ticket {i}?", "update on {i}?"), ("工单{i}进展", "{i}处理了吗")),
        "device": (("is {i} under warranty?",), ("{i}还在保修期吗",)),
    }[kind]
    return rng.choice(shapes[1] if zh else shapes[0]).format(i=ident)


def _generic(rng: random.Random, group: str, zh: bool) -> str:
    side = 1 if zh else 0
    if group == "small talk":
        return rng.choice(SMALL_TALK[side]) + rng.choice(
            ("", "!", " :)", "~") if zh else ("", "!", " :)", " then")
        )
    if group == "general knowledge":
        country, city = rng.choice(COUNTRIES), rng.choice(CITIES)
        a, b = rng.randint(12, 99), rng.randint(3, 19)
        return rng.choice(
            (
                ("What's the capital of {c}?", "what's the weather like in {t} today?",
                 "what is {a} times {b}?", "how many days are in {a} weeks?"),
                ("{c}的首都是哪里？", "今天天气怎么样", "{t}今天天气如何", "{a}乘以{b}等于多少"),
            )[side]
        ).format(c=country[side], t=city[side], a=a, b=b)  # fmt: skip
    if group == "instruction":
        word, topic = rng.choice(WORDS), rng.choice(TOPICS)
        return rng.choice(
            (
                ("translate '{w}' into French", "write a two-line poem about {p}",
                 "summarise that in one sentence", "make it shorter"),
                ("把“{w}”翻译成英文", "写一首关于{p}的短诗", "用三点总结一下", "请用表格列出来"),
            )[side]
        ).format(w=word[side], p=topic[side])  # fmt: skip
    if group == "generic possessive":
        if rng.random() < 0.5:
            return rng.choice(POSSESSIVE[side])
        rel, claim = rng.choice(RELATIVES), rng.choice(OPINIONS)
        shape = "我{r}说{c}，你觉得呢？" if zh else "my {r} says {c} — do you agree?"
        return shape.format(r=rel[side], c=claim[side])
    return rng.choice(NEAR_DOMAIN[side])


def seed_gate_set(suite: Suite, seed: int = 7, per_side: int = 60) -> list[GateQuestion]:
    """``per_side`` memory questions with a user_id and as many without; as many others of
    each kind (``2 * per_side`` in all), English and Chinese alternately."""
    rng = random.Random(f"seedgate:{seed}")  # noqa: S311 - benchmark data, not crypto
    tenants = sorted(_tenants(suite).items())
    with_users = [
        (t, info)
        for t, info in tenants
        if any(TERSE.keys() & facts for facts in info["users"].values())
    ]
    named = [(t, info) for t, info in tenants if info["entities"]]
    out: list[GateQuestion] = []

    def add(tenant: str, query: str, group: str, needs: bool, request: dict[str, Any]) -> None:
        out.append(GateQuestion(suite.name, tenant, query, PREFIX + group, needs, request))

    for n in range(per_side):
        zh = (n + n // 4) % 2 == 1  # both languages in both branches below
        tenant, info = rng.choice(with_users)
        user = rng.choice(sorted(u for u, fs in info["users"].items() if TERSE.keys() & fs))
        facts = sorted(f for f in info["users"][user] if f in TERSE)
        if n % 4 == 3:  # the context layer: an entity in focus, or a task under way
            focus = [e for e in info["entities"] if e[0] in dict((f[0], f) for f in FOCUS)]
            if focus and rng.random() < 0.5:
                kind, ident = rng.choice(focus)
                shapes = next(f for f in FOCUS if f[0] == kind)
                query = rng.choice(shapes[2] if zh else shapes[1])
                context: dict[str, Any] = {"active_entities": [{"type": kind, "id": ident}]}
            else:
                task = rng.choice(TASKS)
                query, context = rng.choice(task[2] if zh else task[1]), {"active_task": task[0]}
            add(tenant, query, MEMORY[1], True, {"user_id": user, "context": context})
        else:
            en, zh_shapes = TERSE[rng.choice(facts)]
            add(tenant, rng.choice(zh_shapes if zh else en), MEMORY[0], True, {"user_id": user})
    for n in range(per_side):
        tenant, info = rng.choice(named)
        kind, ident = rng.choice(info["entities"])
        add(tenant, _named(rng, kind, ident, n % 2 == 1), MEMORY[2], True, {})
    for n in range(2 * per_side):
        group = OTHER[n % len(OTHER)]
        tenant, info = rng.choice(with_users)
        request = {"user_id": rng.choice(sorted(info["users"]))} if (n // 5) % 2 == 0 else {}
        add(tenant, _generic(rng, group, (n // 10) % 2 == 1), group, False, request)
    return out


def seed_gate_questions(suites: Sequence[Suite], seed: int = 7) -> list[GateQuestion]:
    """The seed gate set over the ``seedtraps`` suite among ``suites`` (none without it)."""
    return [q for s in suites if s.name == "seedtraps" for q in seed_gate_set(s, seed)]


def is_seed_gate(outcome: GateOutcome) -> bool:
    return outcome.question.group.startswith(PREFIX)


def seed_gate_rates(outcomes: Sequence[GateOutcome]) -> dict[str, dict[str, float]]:
    """ "with user_id" / "without user_id" / "all" → n, false-skip rate, invalid-query rate;
    and every group → n, answered (the share answered from memory)."""
    table: dict[str, dict[str, float]] = {}
    sides = {
        "with user_id": [o for o in outcomes if o.question.request.get("user_id")],
        "without user_id": [o for o in outcomes if not o.question.request.get("user_id")],
        "all": list(outcomes),
    }
    for side, rows in sides.items():
        needed = [o for o in rows if o.question.needs_memory]
        other = [o for o in rows if not o.question.needs_memory]
        table[side] = {
            "memory questions": float(len(needed)),
            "other questions": float(len(other)),
            "false-skip rate": sum(not o.answered for o in needed) / max(1, len(needed)),
            "invalid-query rate": sum(o.answered for o in other) / max(1, len(other)),
        }
    groups: dict[str, list[GateOutcome]] = {}
    for o in outcomes:
        groups.setdefault(o.question.group.removeprefix(PREFIX), []).append(o)
    for group, rows in sorted(groups.items()):
        table[group] = {
            "n": float(len(rows)),
            "answered": sum(o.answered for o in rows) / len(rows),
        }
    return table


def seed_gate_markdown(table: dict[str, dict[str, float]], misses: Sequence[str]) -> list[str]:
    """The report's section: both rates with and without user_id, each group, the errors."""
    sides = ("with user_id", "without user_id", "all")
    out = ["## The gate on the seed gate set (asked without force)", ""]
    out += ["| questions | memory | other | false-skip rate ↓ | invalid-query rate ↓ |"]
    out += ["|---|---|---|---|---|"]
    for side in sides:
        row = table[side]
        out.append(
            f"| {side} | {int(row['memory questions'])} | {int(row['other questions'])} | "
            f"{row['false-skip rate']:.1%} | {row['invalid-query rate']:.1%} |"
        )
    out += ["", "| group | n | answered from memory |", "|---|---|---|"]
    out += [
        f"| {group} | {int(v['n'])} | {v['answered']:.1%} |"
        for group, v in table.items()
        if group not in sides
    ]
    out += ["", f"**seed gate errors** ({len(misses)} listed)", ""]
    out += [f"- {line}" for line in misses[:80]] or ["- none"]
    return [*out, ""]
