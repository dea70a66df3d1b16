"""The held-out seed suite's catalogue kinds: ``spec_supersede`` (a changed spec),
``authority`` (official against low-authority sources), ``variant_attrs`` (the one variant with
all three asked attributes) and ``stale_behaviour`` (what the user viewed recently, not years
ago); and the spec helpers the combined kinds share. Pure.
"""

from __future__ import annotations

import random
from typing import Any

from memstream.bench.quality import seedheld_pools as pools
from memstream.bench.quality import seedheld_words as words
from memstream.bench.quality.seedheld_case import Case, amount, pick


def spec_key(rng: random.Random, code: str, aspect: str) -> str:
    return rng.choice(
        [f"spec:{code}:{aspect}", f"product:{code}|{aspect}", f"{code}:{aspect}:sheet"]
    )


def distractor_products(
    c: Case, aspect: dict[str, Any], models: list[str], source: str, fact: str
) -> None:
    rng, lang = c.rng, c.lang
    for other in models:
        code = words.sku(rng, c.used)
        v = rng.choice(rng.choice(aspect["values"]))
        text = rng.choice(aspect[f"off_{lang}"]).format(m=other, v=v)
        c.put(
            spec_key(rng, code, aspect["key"]),
            text,
            c.days_ago(10, 500),
            f"product:{code}",
            fact,
            source,
        )


def spec_question(c: Case, aspect: dict[str, Any], m: str, q: str) -> str:
    template: str = c.rng.choice(aspect[f"q_{c.lang}"])
    return template.format(m=m, q=q)


def spec_supersede(c: Case) -> None:
    """A product spec changed: the same memory has two or three versions; sometimes an older
    separate datasheet repeats the old value. The current version must come first; the
    superseded versions of the memory must not be served."""
    rng, lang = c.rng, c.lang
    aspect = rng.choice(pools.ASPECTS)
    old, new = rng.choice(aspect["values"])
    models = words.model_names(rng, 1 + rng.randint(1, 3), c.used)
    m, others = models[0], models[1:]
    code = words.sku(rng, c.used)
    source, fact = rng.choice(words.SPEC_SOURCES), rng.choice(words.SPEC_FACTS)
    key = spec_key(rng, code, aspect["key"])
    template = rng.choice(aspect[f"off_{lang}"])
    t1 = c.days_ago(320, 800)
    t2 = c.days_ago(40, 260)
    forbidden = [c.put(key, template.format(m=m, v=old), t1, f"product:{code}", fact, source)]
    current = c.put(key, template.format(m=m, v=new), t2, f"product:{code}", fact, source)
    if rng.random() < 0.35:  # a third version restating the new value with a revision note
        forbidden.append(current)
        note = rng.choice(
            ["（修订版C）", "（量产后复核）"]
            if lang == "zh"
            else [" (rev C)", " (re-checked after mass production)"]
        )
        t3 = c.days_ago(3, 35)
        current = c.put(
            key,
            template.format(m=m, v=new).rstrip("。.") + note + ("。" if lang == "zh" else "."),
            t3,
            f"product:{code}",
            fact,
            source,
        )
    if rng.random() < 0.5:  # an older, separate launch datasheet with the old value
        year = (t1 + (t2 - t1) / 3).year
        prefix = f"{year}年首发资料：" if lang == "zh" else f"{year} launch datasheet: "
        text = prefix + rng.choice(aspect[f"off_{lang}"]).format(m=m, v=old)
        c.put(
            f"datasheet:{code}:{year}",
            text,
            t1 + (t2 - t1) / 3,
            f"product:{code}",
            "product_doc",
            source,
        )
    distractor_products(c, aspect, others, source, fact)
    c.noise(rng.randint(1, 3))
    request = (
        {"context": {"active_entities": [{"type": "product", "id": code}]}}
        if rng.random() < 0.33
        else {}
    )
    q = old if rng.random() < 0.5 else new
    c.ask(spec_question(c, aspect, m, q), [current], request, forbidden)


def authority(c: Case) -> None:
    """An official source and a low-authority one (forum, user review, third-party site)
    contradict each other on a spec; the low one is newer and often echoes the question."""
    rng, lang = c.rng, c.lang
    aspect = rng.choice(pools.ASPECTS)
    pair = list(rng.choice(aspect["values"]))
    rng.shuffle(pair)
    v, w = pair
    models = words.model_names(rng, 1 + rng.randint(1, 2), c.used)
    m, others = models[0], models[1:]
    code = words.sku(rng, c.used)
    high, low = rng.choice(words.HIGH_SOURCES), rng.choice(words.LOW_SOURCES)
    fact = rng.choice(words.SPEC_FACTS)
    official = c.put(
        spec_key(rng, code, aspect["key"]),
        rng.choice(aspect[f"off_{lang}"]).format(m=m, v=v),
        c.days_ago(45, 420),
        f"product:{code}",
        fact,
        high,
    )
    post = f"{low}:{rng.randint(1000, 99999)}"
    q = w if rng.random() < 0.6 else v
    question = spec_question(c, aspect, m, q)
    claim = rng.choice(aspect[f"claim_{lang}"]).format(m=m, v=w)
    if rng.random() < 0.5:  # a thread whose title is the very question
        claim = (
            f"帖子：{question} 回复：{claim}"
            if lang == "zh"
            else f"Thread: {question} Reply: {claim}"
        )
    c.put(post, claim, c.days_ago(1, 30), f"product:{code}", fact, low)
    distractor_products(c, aspect, others, high, fact)
    for _ in range(rng.randint(0, 2)):  # low-authority chatter about other models and aspects
        other_aspect = rng.choice([a for a in pools.ASPECTS if a is not aspect])
        om = words.model_names(rng, 1, c.used)[0]
        ov = rng.choice(rng.choice(other_aspect["values"]))
        c.put(
            f"{rng.choice(words.LOW_SOURCES)}:{rng.randint(1000, 99999)}",
            rng.choice(other_aspect[f"claim_{lang}"]).format(m=om, v=ov),
            c.days_ago(1, 90),
            f"product:{words.sku(rng, c.used)}",
            fact,
            rng.choice(words.LOW_SOURCES),
        )
    c.noise(rng.randint(1, 2))
    c.ask(question, [official])


def variant_attrs(c: Case) -> None:
    """A product sold in variants; the question names three attributes that only one variant has
    all of (near-misses share two; a sibling model may share all three)."""
    rng, lang = c.rng, c.lang
    fam = rng.choice(pools.VARIANT_FAMILIES)
    fname = fam[f"name_{lang}"]
    name, sibling = words.model_names(rng, 2, c.used)
    attrs = fam["attrs"]

    def label(a: int, idx: int) -> str:
        _, en, zh = attrs[a]
        chosen: str = (zh or en)[idx] if lang == "zh" else en[idx]
        return chosen

    target = tuple(rng.randrange(len(a[1])) for a in attrs)
    combos = {target}
    for a in range(3):  # one near-miss per attribute
        alt = list(target)
        alt[a] = rng.choice([i for i in range(len(attrs[a][1])) if i != target[a]])
        combos.add(tuple(alt))
    for _ in range(rng.randint(0, 3)):
        combos.add(tuple(rng.randrange(len(a[1])) for a in attrs))
    order = sorted(combos)
    rng.shuffle(order)
    source = rng.choice(["erp", "catalogue"])
    fact = rng.choice(["product_spec", "price"])
    tpl = rng.choice(
        [
            "{n}{f}（{a}/{b}/{c}）售价¥{p}，库存{s}件。",
            "{n} {f}，{a}，{b}，{c}，到手价{p}元，现货{s}台。",
        ]
        if lang == "zh"
        else [
            "{n} {f} — {a}, {b}, {c}. Price {p}; {s} in stock.",
            "{f} {n} ({a} / {b} / {c}): {p}, stock {s}.",
        ]
    )
    right = ""

    def variant(model: str, combo: tuple[int, ...]) -> str:
        code = words.sku(rng, c.used)
        vals = [label(a, combo[a]) for a in range(3)]
        price = amount(rng, lang, 19, 3000)
        text = tpl.format(
            n=model, f=fname, a=vals[0], b=vals[1], c=vals[2], p=price, s=rng.randint(0, 60)
        )
        attributes = {attrs[a][0]: vals[a] for a in range(3)} | {"model": model}
        return c.put(
            f"variant:{code}",
            text,
            c.days_ago(2, 40),
            f"product:{code}",
            fact,
            source,
            attributes=attributes,
        )

    for combo in order:
        doc = variant(name, combo)
        if combo == target:
            right = doc
    if rng.random() < 0.5:  # the sibling model in exactly the asked combination
        variant(sibling, target)
    c.noise(rng.randint(1, 2))
    vals = [label(a, target[a]) for a in range(3)]
    rng.shuffle(vals)
    qs = (
        [
            "{x}、{y}、{z}的{n}多少钱？",
            "{n} {x} {y} {z} 还有货吗？",
            "我要{x}{y}{z}那款{n}{f}，什么价？",
        ]
        if lang == "zh"
        else [
            "how much is the {n} in {x}, {y}, {z}?",
            "is the {x} / {y} / {z} {n} in stock?",
            "price of the {n} {f}, {x} {y} {z}?",
        ]
    )
    c.ask(rng.choice(qs).format(x=vals[0], y=vals[1], z=vals[2], n=name, f=fname), [right])


def stale_behaviour(c: Case) -> None:
    """Browsing events: one or two views years ago (more similar to the question), one view in
    the last days, in the same category; the question is about what the user is looking at."""
    rng, lang = c.rng, c.lang
    b = rng.choice(pools.BEHAVIOUR)
    cat = rng.choice(b[f"cat_{lang}"])
    feat = b[f"feat_{lang}"]
    ids = words.customer_ids(rng, 2, c.used)
    me, other = ids
    fact = rng.choice(["page_view", "browsing_history"])
    source = rng.choice(["web_analytics", "clickstream", "app_events"])
    names = words.model_names(rng, 4, c.used)
    for n in range(rng.randint(1, 2)):
        text = pick(
            rng,
            ["浏览了{c}商品页：{p}（{o}）。", "查看{p}{c}，参数：{o}。"]
            if lang == "zh"
            else [
                "Viewed {p} ({c}) product page; spec highlights: {o}.",
                "Browsed {c}: {p} — {o}.",
            ],
        ).format(c=cat, p=names[1 + n], o=b[f"old_{lang}"])
        c.put(
            f"view:{me}:{names[1 + n]}", text, c.days_ago(380, 1150), f"customer:{me}", fact, source
        )
    if rng.random() < 0.5:
        text = pick(
            rng,
            ["浏览了{p}{c}商品页，停留{n}分钟。", "查看了{c} {p}的详情页。"]
            if lang == "zh"
            else ["Viewed {p} ({c}) product page for {n} minutes.", "Opened the {c} page for {p}."],
        ).format(p=names[0], c=cat, n=rng.randint(2, 9))
    else:
        text = pick(
            rng,
            ["浏览了{c}商品页：{p}（{o}）。"]
            if lang == "zh"
            else ["Viewed {p} ({c}) product page; spec highlights: {o}."],
        ).format(p=names[0], c=cat, o=b[f"new_{lang}"])
    right = c.put(
        f"view:{me}:{names[0]}", text, c.days_ago(0.5, 12), f"customer:{me}", fact, source
    )
    for thing in rng.sample(pools.OTHER_VIEWS[lang], rng.randint(1, 2)):
        om = words.model_names(rng, 1, c.used)[0]
        t = (
            f"浏览了{thing}商品页：{om}。"
            if lang == "zh"
            else f"Viewed {om} ({thing}) product page."
        )
        c.put(f"view:{me}:{om}", t, c.days_ago(0.5, 20), f"customer:{me}", fact, source)
    if rng.random() < 0.3:
        t = (
            f"浏览了{cat}商品页：{names[3]}。"
            if lang == "zh"
            else f"Viewed {names[3]} ({cat}) product page."
        )
        c.put(f"view:{other}:{names[3]}", t, c.days_ago(0.5, 6), f"customer:{other}", fact, source)
    c.noise(rng.randint(1, 2), me, rng.randint(0, 1))
    qs = (
        ["我最近在看的那款{c}有{f}吗？", "上次看的{c}支持{f}吗？", "我这几天看的那个{c}带不带{f}？"]
        if lang == "zh"
        else [
            "does the {c} I've been looking at have {f}?",
            "the {c} I was checking out the other day — does it have {f}?",
            "does that {c} I looked at recently come with {f}?",
        ]
    )
    q = rng.choice(qs).format(c=cat, f=feat)
    if lang == "en" and cat.endswith("s"):  # headphones, earbuds: plural
        q = (
            q.replace("does the", "do the")
            .replace("does it", "do they")
            .replace("does that", "do those")
        )
    c.ask(q, [right], {"user_id": me})
