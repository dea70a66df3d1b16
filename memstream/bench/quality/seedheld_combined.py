"""The held-out seed suite's deliberately combined situations, two traps in one case:
``focus_month`` (the entity in focus AND a named month), ``retract_supersede`` (a retracted post
AND a superseded version), ``first_twin`` (an ordinal AND a look-alike customer). Pure.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memstream.bench.quality import seedheld_pools as pools
from memstream.bench.quality import seedheld_words as words
from memstream.bench.quality.seedheld_case import Case, amount
from memstream.bench.quality.seedheld_catalogue import distractor_products, spec_key, spec_question
from memstream.bench.quality.seedheld_records import SERVICES, dated_record


def focus_month(c: Case) -> None:
    """Combination: a follow-up about the entity in focus (context.active_entities) AND a month
    named in the question. The customer has two or three such entities, each with monthly
    records; another entity also has a record in the named month."""
    rng, lang, now = c.rng, c.lang, c.now
    me = words.customer_ids(rng, 1, c.used)[0]
    scen = rng.choice(["subscription", "meter", "device"])
    n_ent = rng.randint(2, 3)
    k = rng.randint(1, 14)
    relative = k == 1 and rng.random() < 0.6
    ty, tm = words.months_back(now, k)
    ents: list[str] = []
    for _ in range(n_ent):
        if scen == "subscription":
            ents.append(f"SUB-{rng.randint(10000, 99999)}")
        elif scen == "meter":
            ents.append(f"MTR{rng.randint(100000, 999999)}")
        else:
            ents.append(f"SN-{rng.choice('ABCDEFGH')}{rng.randint(10000, 99999)}")
    etype = {"subscription": "subscription", "meter": "meter", "device": "device"}[scen]
    plans = (
        ["视频会员", "云存储2TB", "音乐家庭版", "健身App年卡"]
        if lang == "zh"
        else ["video streaming", "2 TB cloud storage", "music family plan", "fitness app"]
    )
    rng.shuffle(plans)
    services = (
        ["更换滤芯", "固件升级", "年度检测", "压缩机检查", "更换皮带", "除垢"]
        if lang == "zh"
        else [
            "filter replaced",
            "firmware updated",
            "annual inspection",
            "compressor checked",
            "drive belt replaced",
            "descaled",
        ]
    )

    def record(e: int, y: int, m: int) -> str:
        at = words.in_month(rng, y, m, 3, 25)
        ent = ents[e]
        if scen == "subscription":
            amt = amount(rng, lang, 6, 60)
            text = (
                rng.choice(["订阅{s}（{p}）{Y}年{M}月扣费{a}元。", "{p}订阅{s}本期扣款{a}元。"])
                if lang == "zh"
                else rng.choice(
                    [
                        "Subscription {s} ({p}) charged {a} for {Mo} {Y}.",
                        "{p} subscription {s}: {a} collected.",
                    ]
                )
            ).format(s=ent, p=plans[e], Y=y, M=m, Mo=words.EN_MONTHS[m - 1], a=amt)
            fact, src = "billing", "billing"
        elif scen == "meter":
            val = rng.randint(90, 900)
            text = (
                rng.choice(["电表{s}{M}月{D}日读数：{v}度。", "电表{s}本次抄表{v}度。"])
                if lang == "zh"
                else rng.choice(
                    [
                        "Meter {s} reading on {D} {Mo}: {v} kWh.",
                        "Meter {s} read at {v} kWh this cycle.",
                    ]
                )
            ).format(s=ent, M=m, D=at.day, Mo=words.EN_MON[m - 1], v=val)
            fact, src = "meter_reading", "erp"
        else:
            text = (
                rng.choice(["设备{s}保养：{v}。", "{s}维护记录：完成{v}。"])
                if lang == "zh"
                else rng.choice(["Service on unit {s}: {v}.", "Maintenance log {s}: {v} done."])
            ).format(s=ent, v=rng.choice(services))
            fact, src = "maintenance", "crm"
        return c.put(
            f"{etype}:{ent}:{y}-{m:02d}",
            text,
            at,
            f"{etype}:{ent}",
            fact,
            src,
            entities=[f"customer:{me}"],
        )

    focus = rng.randrange(n_ent)
    right = record(focus, ty, tm)
    others = [e for e in range(n_ent) if e != focus]
    record(rng.choice(others), ty, tm)  # another entity, the same month
    pool = [j for j in range(1, 20) if abs(j - k) >= 2 and not (relative and j == 0)]
    for e in range(n_ent):
        for j in rng.sample(pool, rng.randint(1, 3)):
            record(e, *words.months_back(now, j))
    c.noise(rng.randint(1, 2), me, rng.randint(0, 1))
    if lang == "zh":
        period = "上个月" if relative else words.zh_month(ty, tm, rng)
        qs = {
            "subscription": ["那它{P}扣了多少钱？", "这个{P}收了我多少？"],
            "meter": ["这块表{P}的读数是多少？", "那它{P}抄表是多少？"],
            "device": ["它{P}做了什么保养？", "这台{P}维护了什么？"],
        }[scen]
    else:
        period = "last month" if relative else words.en_month(ty, tm, rng)
        qs = {
            "subscription": [
                "and what was it charged in {P}?",
                "how much did this one bill me in {P}?",
            ],
            "meter": ["what did this meter read in {P}?", "and its reading for {P}?"],
            "device": ["what was done on it in {P}?", "and the service it got in {P}?"],
        }[scen]
    q = rng.choice(qs).format(P=period)
    if relative and lang == "en":
        q = q.replace("in last month", "last month").replace("for last month", "last month")
    request = {"user_id": me, "context": {"active_entities": [{"type": etype, "id": ents[focus]}]}}
    c.ask(q, [right], request)


def retract_supersede(c: Case) -> None:
    """Combination: a retracted source AND a superseded version. The official spec has an old
    (superseded) version and a current one; a forum post / article repeating a stale value was
    retracted. Only the current version may lead; neither the old version nor the retracted
    post may be served."""
    rng, lang = c.rng, c.lang
    aspect = rng.choice(pools.ASPECTS)
    old, new = rng.choice(aspect["values"])
    models = words.model_names(rng, 1 + rng.randint(1, 2), c.used)
    m, others = models[0], models[1:]
    code = words.sku(rng, c.used)
    source, fact = rng.choice(words.SPEC_SOURCES), rng.choice(words.SPEC_FACTS)
    key = spec_key(rng, code, aspect["key"])
    template = rng.choice(aspect[f"off_{lang}"])
    t1, t2 = c.days_ago(300, 900), c.days_ago(30, 200)
    forbidden = [c.put(key, template.format(m=m, v=old), t1, f"product:{code}", fact, source)]
    current = c.put(key, template.format(m=m, v=new), t2, f"product:{code}", fact, source)
    for _ in range(1 if rng.random() < 0.7 else 2):
        low = rng.choice([*words.LOW_SOURCES, "press_release"])
        pkey = f"{low}:{code}:{rng.randint(100, 9999)}"
        posted = c.days_ago(3, 120)
        claim = aspect[f"claim_{lang}"] if low != "press_release" else aspect[f"off_{lang}"]
        forbidden.append(
            c.put(pkey, rng.choice(claim).format(m=m, v=old), posted, f"product:{code}", fact, low)
        )
        retracted = posted + (c.now - posted) * rng.uniform(0.2, 0.9)
        c.put(
            pkey,
            "retracted: inaccurate",
            retracted,
            f"product:{code}",
            fact,
            low,
            op="RETRACT",
            late=True,
        )
    distractor_products(c, aspect, others, source, fact)
    c.noise(rng.randint(1, 2))
    q = old if rng.random() < 0.6 else new
    c.ask(spec_question(c, aspect, m, q), [current], {}, forbidden)


def first_twin(c: Case) -> None:
    """Combination: an ordinal (first / last / 第一次 / 上次) AND a look-alike customer whose
    near-identical records lie before the asker's first and after the asker's last."""
    rng, lang = c.rng, c.lang
    ids = words.customer_ids(rng, 1 + rng.randint(1, 2), c.used)
    me, twins = ids[0], ids[1:]
    kind = rng.choice(["order", "order", "service", "class"])
    first = rng.random() < 0.5
    n_own = rng.randint(3, 5)
    span_lo, span_hi = 40.0, rng.uniform(300, 900)
    own_ages = sorted(rng.sample(range(int(span_lo), int(span_hi), 15), n_own))
    items = rng.sample(words.ITEMS, n_own)
    classes = (
        ["流瑜伽", "动感单车", "普拉提", "拳击入门", "攀岩体验"]
        if lang == "zh"
        else ["vinyasa yoga", "spin class", "reformer pilates", "intro boxing", "bouldering taster"]
    )
    svc = SERVICES[lang]
    own: list[tuple[float, str, Any]] = []
    for n, age in enumerate(own_ages):
        at = c.now - timedelta(days=age, hours=rng.uniform(0, 20))
        if kind == "order":
            thing: Any = items[n]
        elif kind == "service":
            thing = (svc[n % len(svc)],)
        else:
            thing = (classes[n % len(classes)],)
        own.append(
            (
                age,
                dated_record(
                    c,
                    "order" if kind == "order" else ("service" if kind == "service" else "class"),
                    me,
                    at,
                    thing,
                    0 if kind == "order" else None,
                ),
                thing,
            )
        )
    right = own[-1][1] if first else own[0][1]  # oldest is last in ascending age
    things = [t for _, _, t in own]
    rk = "order" if kind == "order" else ("service" if kind == "service" else "class")
    for twin in twins:
        # the look-alike's records: same things, one older than my first, one newer than my last
        ages = [span_hi + rng.uniform(20, 200), rng.uniform(2, span_lo - 10)]
        ages += [rng.uniform(span_lo, span_hi) for _ in range(rng.randint(0, 2))]
        for twin_age in ages:
            thing = rng.choice(things)
            dated_record(
                c, rk, twin, c.now - timedelta(days=twin_age), thing, 0 if kind == "order" else None
            )
    c.noise(rng.randint(1, 2), me, rng.randint(0, 2))
    if kind == "order":
        qs = (
            (
                ["我第一次在你们这儿买的是什么？", "我最早的一笔订单买了啥？"]
                if first
                else ["我上次买了什么？", "我最近一次下单买的是啥？"]
            )
            if lang == "zh"
            else (
                [
                    "what was the first thing I ever ordered here?",
                    "my very first purchase — what was it?",
                ]
                if first
                else ["what did I order most recently?", "what was my last order?"]
            )
        )
    elif kind == "service":
        qs = (
            (
                ["你们第一次上门给我做的是什么服务？", "我最早的那次上门服务是什么？"]
                if first
                else ["上次师傅来做的是什么？", "最近一次上门服务做了什么？"]
            )
            if lang == "zh"
            else (
                [
                    "what was the first service visit I had?",
                    "what did your technician do on my first visit?",
                ]
                if first
                else ["what did the technician do last time?", "what was my latest service visit?"]
            )
        )
    else:
        qs = (
            (
                ["我第一次约的是什么课？", "我最早预约的课程是哪节？"]
                if first
                else ["我上次约的什么课？", "我最近一次预约的是什么课？"]
            )
            if lang == "zh"
            else (
                ["what was the first class I booked?", "which class did I book first?"]
                if first
                else ["what class did I book last?", "my latest class booking?"]
            )
        )
    c.ask(rng.choice(qs), [right], {"user_id": me})
