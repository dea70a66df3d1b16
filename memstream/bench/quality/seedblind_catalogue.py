"""Blind seed kinds about products: source authority, stock versions, a spec or price as of a
named past month or quarter, the current spec after supersession, and attribute combinations
among near-identical variants. Pure: each builds one ``BlindCase``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memstream.bench.quality.seedblind_words import (
    CATEGORIES,
    CITIES,
    COLOURS,
    DAY,
    HOUR,
    MAKERS,
    BlindCase,
    month_start,
    quarter_start,
)

# A yes/no capability: (English, Chinese) name; what a record says for yes and for no.
CAPABILITIES = (
    ("Type-C fast charging", "Type-C快充"),
    ("wireless charging", "无线充电"),
    ("multipoint Bluetooth", "蓝牙多点连接"),
    ("dust and water resistance (IP67)", "IP67防尘防水"),
    ("a replaceable battery", "可更换电池"),
)


def capability(case: BlindCase, model: str, cap: tuple[str, str], yes: bool, lead: str) -> str:
    """``lead`` names the record ("Official spec sheet", "官方规格书")."""
    if case.zh:
        return f"{lead}：{model}{'支持' if yes else '不支持'}{cap[1]}。"
    return f"{lead}: the {model} {'supports' if yes else 'does not support'} {cap[0]}."


def source_ladder(case: BlindCase) -> None:
    """An official spec sheet against a reseller listing, a user review and a forum post that
    was later retracted: the spec sheet; the retracted post never."""
    c, rng = case, case.rng
    cap = rng.choice(CAPABILITIES)
    maker = rng.choice(MAKERS)
    model, sibling = c.model(maker), c.model(maker)
    truth = rng.random() < 0.5
    entity = f"product:{model}"
    right = c.put(
        f"spec:{model}:{cap[0]}",
        capability(c, model, cap, truth, c.say("Official spec sheet", "官方规格书")),
        rng.randint(90, 300) * DAY,
        entity,
        "product_spec",
        "official_document",
    )
    listing = c.put(
        f"listing:{model}:{c.sku()}",
        capability(c, model, cap, not truth, c.say("Reseller listing", "第三方店铺商品页")),
        rng.randint(10, 60) * DAY,
        entity,
        "listing",
        "third_party",
    )
    review = c.put(
        f"review:{model}:{c.sku()}",
        capability(
            c,
            model,
            cap,
            not truth,
            c.say(("Customer review", "Buyer's comment"), ("买家评价", "用户晒单")),
        ),
        rng.randint(3, 30) * DAY,
        entity,
        "review",
        "user_review",
    )
    forum_key = f"forum:{model}:{c.sku()}"
    forum_at = rng.randint(400, 1100) * DAY
    forum = c.put(
        forum_key,
        capability(c, model, cap, not truth, c.say("Forum post", "论坛帖子")),
        forum_at,
        entity,
        "forum_post",
        "forum",
    )
    c.retract(forum_key, forum_at - rng.randint(5, 60) * DAY, entity, "forum_post", "forum")
    other = c.put(
        f"spec:{sibling}:{cap[0]}",
        capability(c, sibling, cap, not truth, c.say("Official spec sheet", "官方规格书")),
        rng.randint(30, 200) * DAY,
        f"product:{sibling}",
        "product_spec",
        "official_document",
    )
    query = c.say(
        (
            f"does the {model} support {cap[0]}?",
            f"{model}: {cap[0]}, yes or no?",
            f"can I count on {cap[0]} with the {model}?",
        ),
        (f"{model}支持{cap[1]}吗？", f"{model}到底有没有{cap[1]}", f"请问{model}能不能{cap[1]}"),
    )
    c.ask(query, right, [listing, review, other], forbidden=[forum])


def stock_latest(case: BlindCase) -> None:
    """A warehouse's stock and price for one SKU, updated several times in the last days: the
    newest update; not a look-alike SKU's (another colour)."""
    c, rng = case, case.rng
    cat_en, cat_zh, _, _ = rng.choice(CATEGORIES)
    cat = c.of((cat_en, cat_zh))
    model = c.model()
    (col_a, col_b) = [c.of(p) for p in rng.sample(COLOURS, 2)]
    sku = c.sku()
    twin = c.lookalike(sku)
    city = c.of(rng.choice(CITIES))
    price = rng.randint(20, 300) * 10

    def stock(code: str, colour: str, units: int, cost: int) -> str:
        if c.zh:
            left = f"库存{units}件" if units else "已售罄"
            return f"{city}仓 {model} {colour}（SKU {code}）：{left}，售价{cost}元。"
        left = f"{units} units in stock" if units else "sold out"
        return f"{city} warehouse, {model} {colour} (SKU {code}): {left}, price {cost}."

    hours = sorted(rng.sample(range(2, 24 * 12), rng.randint(3, 5)), reverse=True)
    docs = []
    for n, age in enumerate(hours):
        units = rng.choice((0, rng.randint(1, 9), rng.randint(10, 400)))
        if n:
            price += rng.choice((-30, -10, 0, 10, 20))
        docs.append(
            c.put(
                f"stock:{sku}:{city}",
                stock(sku, col_a, units, price),
                age * HOUR,
                f"product:{sku}",
                "inventory",
                "erp",
            )
        )
    other = c.put(
        f"stock:{twin}:{city}",
        stock(twin, col_b, rng.randint(0, 300), price),
        rng.randint(1, hours[-1]) * HOUR,
        f"product:{twin}",
        "inventory",
        "erp",
    )
    query = c.say(
        (
            f"is the {model} in {col_a} in stock right now, and at what price?",
            f"how many {col_a} {model} units are left?",
            f"current stock and price of the {col_a} {model} {cat}?",
        ),
        (
            f"{model}{col_a}现在还有货吗？多少钱？",
            f"{col_a}的{model}还剩几台",
            f"{model} {col_a}款{cat}现在库存和价格是多少",
        ),
    )
    c.ask(query, docs[-1], [*docs[:-1], other])


# (English, Chinese) aspect of a spec chain, its value formats and the values it takes
PRICED = (
    ("list price", "售价", "{v}", "{v}元", (399, 449, 499, 529, 559, 599, 649)),
    ("battery capacity", "电池容量", "{v} mAh", "{v}毫安时", (3800, 4200, 4500, 5000, 5500)),
    ("maximum charging power", "最大充电功率", "{v} W", "{v}瓦", (18, 25, 33, 45, 65, 80)),
    ("rated runtime", "标称续航", "{v} hours", "{v}小时", (10, 14, 18, 24, 30, 36)),
)


def _chain_text(c: BlindCase, model: str, aspect: tuple[Any, ...], value: int) -> str:
    name_en, name_zh, fmt_en, fmt_zh, _ = aspect
    if c.zh:
        return f"{model}的{name_zh}调整为{fmt_zh.format(v=value)}。"
    return f"The {model}'s {name_en} is now {fmt_en.format(v=value)}."


def spec_as_of_period(case: BlindCase) -> None:
    """A price or spec changed a few times: asked for a named past month or quarter (and
    ``as_of`` its last day), the version valid throughout that period."""
    c, rng = case, case.rng
    aspect = rng.choice(PRICED)
    model = c.model()
    quarter = rng.random() < 0.5
    if quarter:
        back = rng.randint(1, 4)
        if c.now - quarter_start(c.now, back - 1) < 10 * DAY:  # a quarter only just over
            back += 1
        start = quarter_start(c.now, back)
        end = quarter_start(start, -1)
        named = c.quarter_name(start)
    else:
        start = month_start(c.now, rng.randint(2, 13))
        end = month_start(start, -1)
        named = c.month_name(start)
    moments: list[datetime] = [start - rng.randint(3, 50) * DAY]
    moments.insert(0, moments[0] - rng.randint(60, 200) * DAY)  # an earlier version
    # the change after the period: always there, so the answer is not simply today's value
    room = min(40, (c.now - end).days - 2)
    nxt = end + rng.randint(2, room) * DAY + rng.randint(1, 20) * HOUR
    moments.append(nxt)
    later = nxt + rng.randint(30, 120) * DAY
    if later < c.now - DAY and rng.random() < 0.6:
        moments.append(later)
    values = rng.sample(aspect[4], len(moments))
    key = f"spec:{model}:{aspect[0]}"
    fact, source = (
        ("price", "erp") if aspect[0] == "list price" else ("product_spec", "official_document")
    )
    docs = [
        c.put(key, _chain_text(c, model, aspect, v), m, f"product:{model}", fact, source)
        for v, m in zip(values, moments, strict=True)
    ]
    right = docs[1]
    name = c.of(aspect[:2])
    query = c.say(
        (
            f"what was the {name} of the {model} in {named}?",
            f"back in {named}, what {name} did we list for the {model}?",
            f"{model} {name} during {named}?",
        ),
        (
            f"{named}的时候{model}的{name}是多少？",
            f"{model}在{named}期间{name}是多少",
            f"查一下{named}{model}的{name}",
        ),
    )
    as_of = (end - HOUR).isoformat()
    c.ask(query, right, [d for d in docs if d != right], {"as_of": as_of})


def spec_superseded_now(case: BlindCase) -> None:
    """v1 "does not support" (old spec sheet) → v2 "supports" (new spec sheet) → v3 "supports,
    Pro model only" (engineering notice): today's answer is v3; not a sibling model's."""
    c, rng = case, case.rng
    cap = rng.choice(CAPABILITIES)
    maker = rng.choice(MAKERS)
    model, sibling = c.model(maker), c.model(maker)
    key = f"spec:{model}:{cap[0]}"
    entity = f"product:{model}"
    ages = (rng.randint(500, 800), rng.randint(200, 400), rng.randint(15, 120))
    firmware = f"{rng.randint(2, 6)}.{rng.randint(0, 9)}"
    v1 = c.put(
        key,
        capability(c, model, cap, False, c.say("Spec sheet (first edition)", "规格书（初版）")),
        ages[0] * DAY,
        entity,
        "product_spec",
        "official_document",
    )
    v2 = c.put(
        key,
        capability(c, model, cap, True, c.say("Spec sheet (revised)", "规格书（修订版）")),
        ages[1] * DAY,
        entity,
        "product_spec",
        "official_document",
    )
    v3 = c.put(
        key,
        c.say(
            f"Engineering notice: the {model} supports {cap[0]} on the Pro edition only, from "
            f"firmware {firmware}; the standard edition does not.",
            f"工程部公告：{model}仅Pro版支持{cap[1]}（固件{firmware}起），标准版不支持。",
        ),
        ages[2] * DAY,
        entity,
        "product_spec",
        rng.choice(("engineering", "official_document")),
    )
    other = c.put(
        f"spec:{sibling}:{cap[0]}",
        capability(c, sibling, cap, True, c.say("Spec sheet", "规格书")),
        rng.randint(5, 60) * DAY,
        f"product:{sibling}",
        "product_spec",
        "official_document",
    )
    query = c.say(
        (
            f"does the {model} support {cap[0]}?",
            f"is {cap[0]} available on the {model} now?",
            f"what's the current word on {cap[0]} for the {model}?",
        ),
        (
            f"{model}现在支持{cap[1]}吗？",
            f"{model}到底支不支持{cap[1]}",
            f"{model}的{cap[1]}最新说法是什么",
        ),
    )
    c.ask(query, v3, [v1, v2, other])


# (English, Chinese) category; three attributes, each (name, English values, Chinese values)
VARIANTS = (
    (
        ("power bank", "移动电源"),
        (
            ("port", ("USB-C", "Lightning", "micro-USB"), ("USB-C", "Lightning", "Micro-USB")),
            (
                "capacity",
                ("10000 mAh", "20000 mAh", "5000 mAh"),
                ("10000毫安", "20000毫安", "5000毫安"),
            ),
        ),
    ),
    (
        ("phone", "手机"),
        (
            ("storage", ("128 GB", "256 GB", "512 GB"), ("128G", "256G", "512G")),
            ("network", ("5G", "4G"), ("5G", "4G")),
        ),
    ),
    (
        ("earbuds", "耳机"),
        (
            ("case", ("wireless-charging case", "wired case"), ("无线充电盒", "有线充电盒")),
            ("tips", ("silicone tips", "foam tips"), ("硅胶耳塞", "记忆海绵耳塞")),
        ),
    ),
)


def variant_attributes(case: BlindCase) -> None:
    """ "The blue one with USB-C, 20000 mAh": among variants that share two of the three
    attributes, the one that has all three."""
    c, rng = case, case.rng
    (cat, attrs) = rng.choice(VARIANTS)
    (a_name, a_en, a_zh), (b_name, b_en, b_zh) = attrs
    i_col, j_col = rng.sample(range(len(COLOURS)), 2)
    i_a, j_a = rng.sample(range(len(a_en)), 2)
    i_b, j_b = rng.sample(range(len(b_en)), 2)
    family = c.model()
    combos = [(i_col, i_a, i_b), (i_col, i_a, j_b), (i_col, j_a, i_b), (j_col, i_a, i_b)]
    rng.shuffle(combos)
    docs = {}
    for col, a, b in combos:
        sku = c.sku()
        colour = c.of(COLOURS[col])
        va, vb = (a_zh[a], b_zh[b]) if c.zh else (a_en[a], b_en[b])
        price = rng.randint(15, 90) * 10
        text = c.say(
            f"{family} {cat[0]}, {colour}, {va}, {vb} — SKU {sku}, {price}.",
            f"{family} {cat[1]}，{colour}，{va}，{vb}——SKU {sku}，售价{price}元。",
        )
        attributes = {"colour": COLOURS[col][0], a_name: a_en[a], b_name: b_en[b]}
        docs[(col, a, b)] = c.put(
            f"sku:{sku}",
            text,
            rng.randint(20, 200) * DAY,
            f"product:{sku}",
            "product_listing",
            "catalogue",
            attributes=attributes,
        )
    right = docs[(i_col, i_a, i_b)]
    colour = c.of(COLOURS[i_col])
    va, vb = (a_zh[i_a], b_zh[i_b]) if c.zh else (a_en[i_a], b_en[i_b])
    query = c.say(
        (
            f"the {colour} {family} {cat[0]} with {va} and {vb} — which SKU and price?",
            f"do you have a {colour} {cat[0]} from {family} with {va}, {vb}?",
            f"{family} {cat[0]}: {vb}, {va}, {colour} — what does it cost?",
        ),
        (
            f"那个{colour}的、{va}、{vb}的{family}{cat[1]}是哪个SKU？",
            f"{family}{cat[1]}有没有{colour}{va}{vb}的",
            f"我要{vb}、{va}、{colour}的{family}{cat[1]}，多少钱",
        ),
    )
    c.ask(query, right, [d for k, d in docs.items() if k != (i_col, i_a, i_b)])
