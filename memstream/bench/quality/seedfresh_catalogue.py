"""Fresh seed kinds about products: fact-type decay, attributes, authority, versions.

- ``spec_outlasts_complaint``: a product spec (internal wiki, months old, slow to age) against
  a user's chat complaint about the same figure (weeks old, fast to age, user input) and
  another model's fresher spec: the spec;
- ``attribute_sku``: SKU listings that each differ from the asked one in one attribute
  ("the blue power bank with a USB-C port", "black X 15 Pro 256G USB-C"), plus a fresher
  accessory listing sharing some of them: the listing that matches them all;
- ``authority_conflict``: conflicting records of one fact from sources of different authority
  (CRM > wiki > user input > third party; official document > press release > user review),
  the more authoritative one always the oldest: the most authoritative;
- ``spec_version_history``: a USB-C spec with three versions (false, true, "Pro only", spaced
  as in the seed), asked with ``as_of`` inside an old version's validity, about the standard
  model now, or about the first data sheet: the version that answers.
Pure: ``now`` comes with the case.
"""

from __future__ import annotations

from datetime import timedelta

from memstream.bench.quality.seed_words import DAY
from memstream.bench.quality.seedfresh_words import FreshCase


def _focus(product: str) -> dict[str, object]:
    return {"context": {"active_entities": [{"type": "product", "id": product}]}}


def spec_outlasts_complaint(case: FreshCase) -> None:
    rng = case.rng
    m, sibling = case.model(), case.model()
    u = case.customer()
    watts, low, other_watts = (
        rng.choice([30, 45, 65]),
        rng.choice([10, 12, 15]),
        rng.choice([20, 100]),
    )
    spec = case.put(
        f"spec:{m}:output",
        case.say(
            f"{m} power bank — product spec: rated output {watts} W over USB-C PD.",
            f"{m}充电宝产品参数：USB-C PD额定输出{watts}W。",
        ),
        rng.randint(90, 170) * DAY,
        f"product:{m}",
        "product_spec",
        "wiki",
    )
    complaint = case.put(
        f"chat:{u}:output",
        case.say(
            f"Chat complaint: my {m} only charges at about {low} W, not the advertised output.",
            f"聊天投诉：我的{m}实际只有{low}W左右，达不到宣传的输出功率。",
        ),
        rng.randint(10, 40) * DAY,
        f"customer:{u}",
        "complaint",
        "chat_log",
        anchors=[f"product:{m}"],
    )
    other = case.put(
        f"spec:{sibling}:output",
        case.say(
            f"{sibling} power bank — product spec: rated output {other_watts} W over USB-C PD.",
            f"{sibling}充电宝产品参数：USB-C PD额定输出{other_watts}W。",
        ),
        rng.randint(2, 20) * DAY,
        f"product:{sibling}",
        "product_spec",
        "wiki",
    )
    query = case.say(
        [f"What's the rated output of the {m}?", f"{m} max output?", "rated wattage on this one?"],
        [f"{m}的额定输出功率是多少？", f"{m}最大多少瓦", "这款额定功率多少？"],
    )
    case.ask_fresh(query, spec, [complaint, other], _focus(m))


def attribute_sku(case: FreshCase) -> None:
    rng = case.rng
    maker = case.model().split()[0]
    colours = case.colours(2)
    if rng.random() < 0.5:  # colour + port
        ports = rng.sample(["USB-C", "Micro-USB", "Lightning"], 2)
        mah = rng.choice([5000, 10000, 20000])
        want = (colours[0], ports[0])
        variants = [want, (colours[0], ports[1]), (colours[1], ports[0])]
        texts = [
            case.say(
                f"{maker} power bank {mah} mAh | colour: {c} | port: {p} | in stock",
                f"{maker}移动电源 {mah}mAh｜颜色：{c}｜接口：{p}｜有货",
            )
            for c, p in variants
        ]
        attrs = [{"colour": c, "port": p} for c, p in variants]
        accessory = case.say(
            f"{maker} {colours[0]} silicone sleeve for {mah} mAh power banks",
            f"{maker}{colours[0]}硅胶保护套，适用于{mah}mAh移动电源",
        )
        query = case.say(
            [
                f"the {colours[0]} power bank with a {ports[0]} port",
                f"{colours[0]} {ports[0]} power bank — still available?",
            ],
            [
                f"那个{colours[0]}的、带{ports[0]}口的移动电源",
                f"{colours[0]}{ports[0]}充电宝还有吗",
            ],
        )
    else:  # colour, tier, storage, port
        number = rng.randint(11, 19)
        sizes = rng.sample(["128G", "256G", "512G"], 2)
        ports = rng.sample(["USB-C", "Lightning"], 2)
        want4 = (colours[0], "Pro", sizes[0], ports[0])
        variants4 = [
            want4,
            (colours[1], "Pro", sizes[0], ports[0]),
            (colours[0], "", sizes[0], ports[0]),
            (colours[0], "Pro", sizes[1], ports[0]),
            (colours[0], "Pro", sizes[0], ports[1]),
        ]
        texts, attrs = [], []
        for c, tier, size, p in variants4:
            name = f"{maker} {number}{' ' + tier if tier else ''}"
            texts.append(
                case.say(
                    f"{name} | colour: {c} | storage: {size.replace('G', ' GB')} | port: {p}",
                    f"{name}｜颜色：{c}｜存储：{size}｜接口：{p}",
                )
            )
            attrs.append({"colour": c, "model": name, "storage": size, "port": p})
        accessory = case.say(
            f"{colours[0]} case for the {maker} {number} Pro",
            f"{colours[0]}手机壳，适用{maker} {number} Pro",
        )
        c, _, size, p = want4
        query = case.say(
            [
                f"{c} {maker} {number} Pro {size} {p}",
                f"do you have the {maker} {number} Pro in {c}, {size}, {p}?",
            ],
            [f"{c} {maker} {number} Pro {size} {p}", f"{maker} {number} Pro {c} {size} {p}有货吗"],
        )
    ids = []
    for n, (text, attributes) in enumerate(zip(texts, attrs, strict=True)):
        sku = case.sku()
        age = rng.randint(20, 40) * DAY if n == 0 else rng.randint(1, 6) * DAY
        ids.append(
            case.put(
                f"sku:{sku}",
                f"{sku} | {text}",
                age,
                f"product:{sku}",
                "product_listing",
                "catalog",
                attributes=attributes,
            )
        )
    sku = case.sku()
    extra = case.put(
        f"sku:{sku}",
        f"{sku} | {accessory}",
        rng.randint(1, 5) * DAY,
        f"product:{sku}",
        "product_listing",
        "catalog",
    )
    case.ask_fresh(query, ids[0], [*ids[1:], extra])


def authority_conflict(case: FreshCase) -> None:
    rng = case.rng
    m, mode = case.model(), rng.choice(["crm", "wiki", "docs"])
    months, years = rng.choice([6, 12]), rng.randint(2, 3)
    request: dict[str, object] = _focus(m)
    if mode == "crm":
        u = case.customer()
        until = case.date(case.now + rng.randint(200, 600) * DAY)
        top = case.put(
            f"contract:{u}",
            case.say(
                f"Service contract (CRM): customer {u}'s {m} is covered until {until} "
                "(extended warranty).",
                f"服务合同（CRM）：客户{u}的{m}保修至{until}（延保）。",
            ),
            rng.randint(100, 300) * DAY,
            f"customer:{u}",
            "warranty",
            "crm",
            anchors=[f"product:{m}"],
        )
        lower = [
            case.put(
                f"wiki:{m}:warranty",
                case.say(
                    f"Service wiki: the {m} has a standard {months}-month warranty.",
                    f"售后知识库：{m}标准保修{months}个月。",
                ),
                rng.randint(5, 60) * DAY,
                f"product:{m}",
                "warranty",
                "wiki",
            ),
            case.put(
                f"chat:{u}:warranty",
                case.say(
                    f"Chat log: customer {u} says the {m} is covered for {years} years.",
                    f"聊天记录：客户{u}说{m}保修{years}年。",
                ),
                rng.randint(1, 5) * DAY,
                f"customer:{u}",
                "warranty",
                "chat_log",
                anchors=[f"product:{m}"],
            ),
        ]
        request = {"user_id": u, **_focus(m)}
        query = case.say(
            [f"How long is my {m} covered?", "my warranty — until when?"],
            [f"我的{m}保修到什么时候？", "我的保修还有多久"],
        )
    elif mode == "wiki":
        v = case.customer()
        top = case.put(
            f"wiki:{m}:warranty",
            case.say(
                f"Service wiki: the {m} has a standard {months}-month warranty.",
                f"售后知识库：{m}标准保修{months}个月。",
            ),
            rng.randint(60, 200) * DAY,
            f"product:{m}",
            "warranty",
            "wiki",
        )
        lower = [
            case.put(
                f"chat:{v}:warranty",
                case.say(
                    f"Chat log: a customer insists the {m} comes with a {years}-year warranty.",
                    f"聊天记录：有客户坚持说{m}保修{years}年。",
                ),
                rng.randint(3, 30) * DAY,
                f"customer:{v}",
                "warranty",
                "chat_log",
                anchors=[f"product:{m}"],
            ),
            case.put(
                f"web:{m}:warranty",
                case.say(
                    f"Third-party deal site: {m} — {years + 2}-year warranty included!",
                    f"第三方导购网站：{m}——享{years + 2}年质保！",
                ),
                rng.randint(1, 10) * DAY,
                f"product:{m}",
                "warranty",
                "third_party",
            ),
        ]
        query = case.say(
            [f"What's the warranty on the {m}?", f"{m} warranty period?"],
            [f"{m}保修多久？", f"{m}的质保期是多少"],
        )
    else:
        official = rng.random() < 0.6
        review_en, review_zh = (
            (f"wireless charging works great on my {m}", f"我的{m}无线充电很好用")
            if official
            else (f"no wireless charging on the {m}, it does not work", f"{m}根本不能无线充电")
        )
        tiers = [
            (
                "official_document",
                "official",
                f"{m} official documentation: wireless charging is not supported; charge over "
                "the cable only.",
                f"{m}官方文档：不支持无线充电，仅支持有线充电。",
            ),
            (
                "press_release",
                "press",
                f"{m} launch press release: wireless charging, just drop it on a pad!",
                f"{m}发布会新闻稿：支持无线充电，放上去就能充！",
            ),
            (
                "user_review",
                "user_review",
                f"User review: {review_en}.",
                f"用户评价：{review_zh}。",
            ),
        ]
        tiers = tiers if official else tiers[1:]
        ages = sorted(rng.sample(range(2, 200), len(tiers)), reverse=True)
        ids = [
            case.put(
                f"{fact}:{m}:wireless", case.say(en, zh), age * DAY, f"product:{m}", fact, source
            )
            for (fact, source, en, zh), age in zip(tiers, ages, strict=True)
        ]
        top, lower = ids[0], ids[1:]
        query = case.say(
            [f"Does the {m} support wireless charging?", f"{m} wireless charging?"],
            [f"{m}支持无线充电吗？", f"{m}能无线充吗"],
        )
    case.ask_fresh(query, top, lower, request)


def spec_version_history(case: FreshCase) -> None:
    rng = case.rng
    m, other = case.model(), case.model()
    v1 = case.now - rng.randint(300, 900) * DAY
    starts = [v1, v1 + 105 * DAY, v1 + 171 * DAY]  # 2024-01-01, 04-15, 06-20 in the seed
    en = (
        f"{m} data sheet rev. A: USB-C: not supported; charges over Micro-USB.",
        f"{m} data sheet rev. B (replaces rev. A): USB-C: supported.",
        f"{m} engineering bulletin: USB-C: supported, note: on the {m} Pro only; the "
        f"standard {m} keeps Micro-USB.",
    )
    zh = (
        f"{m}规格书A版：不支持USB-C，使用Micro-USB充电。",
        f"{m}规格书B版（替代A版）：支持USB-C。",
        f"{m}工程部公告：支持USB-C，备注：仅限{m} Pro型号，标准版仍为Micro-USB。",
    )
    texts = zh if case.zh else en
    sources = ("catalog", "catalog", "engineering")
    ids = [
        case.put(f"spec:{m}:usb_c", text, at, f"product:{m}", "product_spec", source)
        for text, at, source in zip(texts, starts, sources, strict=True)
    ]
    near = case.put(
        f"spec:{other}:usb_c",
        case.say(f"{other} data sheet: USB-C: supported.", f"{other}规格书：支持USB-C。"),
        rng.randint(3, 30) * DAY,
        f"product:{other}",
        "product_spec",
        "catalog",
    )
    mode = rng.choice(["as_of", "now", "first"])
    request: dict[str, object] = _focus(m)
    if mode == "as_of":
        target = rng.randrange(2)
        span = (starts[target + 1] - starts[target]).days
        request["as_of"] = (starts[target] + timedelta(days=rng.randint(5, span - 5))).isoformat()
        query = case.say(
            [f"did the {m} support USB-C at that time?", f"back then — USB-C on the {m}?"],
            [f"当时{m}支持USB-C吗？", f"那时候{m}有USB-C口吗"],
        )
    elif mode == "now":
        target = 2
        query = case.say(
            [f"does the standard {m} support USB-C?", f"{m} base model — USB-C?"],
            [f"{m}标准版支持USB-C吗？", f"{m}非Pro版有USB-C吗"],
        )
    else:
        target = 0
        query = case.say(
            [f"what did the first {m} data sheet say about USB-C?", f"{m} original spec: USB-C?"],
            [f"{m}最早的规格书说支持USB-C吗？", f"{m}最初的规格里有USB-C吗"],
        )
    others = [doc for n, doc in enumerate(ids) if n != target]
    case.ask_fresh(query, ids[target], [*others, near], request)
