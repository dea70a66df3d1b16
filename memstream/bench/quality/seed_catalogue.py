"""The seed trap kinds about products: documents, spec versions, attributes and sources.

- ``this_model_whitepaper``: "这个型号支持Type-C快充吗" with the model in
  ``context.active_entities``: the current white paper ("not supported") must be first; the
  retracted three-year-old forum post ("supported") is never returned, another model's fresh
  forum post is not first;
- ``version_now``: a spec memory with three versions (USB-C false → true → "Pro only"),
  asked now: the third version;
- ``version_named_date``: the same chain, the question names a past date, or a month wholly
  inside one version's validity (no ``as_of`` in the request): the version valid then;
- ``colour_port``: "the blue power bank with a USB-C port" among fresher variants that match
  one of the two attributes;
- ``four_attributes``: "黑色 X 15 Pro 256G USB-C" among fresher variants that differ in one of
  the four attributes;
- ``doc_priority``: "does P support satellite messaging?": the official document, not the
  fresher press release or user review (official_document > press_release > user_review).
Pure: ``now`` comes with the case.
"""

from __future__ import annotations

from datetime import datetime

from memstream.bench.quality.seed_words import DAY, PORTS, SeedCase, whole_months


def this_model_whitepaper(case: SeedCase) -> None:
    rng = case.rng
    m, other = case.model(), case.model()
    year = case.now.year - rng.choice([0, 1])
    watts = rng.choice([10, 12, 15, 18])
    paper = case.put(
        f"doc:fast-charging-whitepaper:{m}",
        case.say(
            f"{year} Fast Charging Protocol White Paper: the {m} does not support USB Type-C "
            f"fast charging; it charges at {watts} W standard speed only.",
            f"《{year}快充协议白皮书》：{m} 不支持Type-C快充，仅支持{watts}W普通充电。",
        ),
        rng.randint(20, 120) * DAY,
        f"product:{m}",
        "official_doc",
        "official",
    )
    post_age = rng.randint(1000, 1200) * DAY
    claim = case.say(
        [
            f"The {m} supports Type-C fast charging, tested it myself!",
            f"Yes, {m} does Type-C fast charging, works great.",
        ],
        [f"{m} 支持Type-C快充，亲测可用！", f"{m} 可以用Type-C快充，没问题。"],
    )
    post = case.put(f"forum:{m}:typec", claim, post_age, f"product:{m}", "forum_post", "forum")
    case.put(
        f"forum:{m}:typec",
        "",
        post_age - 30 * DAY,
        f"product:{m}",
        "forum_post",
        "forum",
        op="RETRACT",
        late=True,
    )
    near = case.put(
        f"forum:{other}:typec",
        case.say(
            f"The {other} supports Type-C fast charging at 30 W.",
            f"{other} 支持Type-C快充，30W。",
        ),
        rng.randint(2, 10) * DAY,
        f"product:{other}",
        "forum_post",
        "forum",
    )
    case.put(
        f"spec:{m}:colours",
        case.say(f"The {m} comes in black and white.", f"{m} 有黑色和白色两种颜色。"),
        rng.randint(30, 200) * DAY,
        f"product:{m}",
        "product_spec",
        "catalog",
    )
    query = case.say(
        [
            "Does this model support Type-C fast charging?",
            "Type-C fast charging on this one?",
            "can it fast charge over Type-C?",
        ],
        ["这个型号支持Type-C快充吗？", "它支持Type-C快充吗", "这款能Type-C快充吗？"],
    )
    focus = {"context": {"active_entities": [{"type": "product", "id": m}]}}
    case.ask_seed(query, paper, [near], focus, forbidden=[post])


def _usb_c_chain(case: SeedCase) -> tuple[str, list[str], list[datetime], str]:
    """A spec memory with three versions (USB-C false → true → Pro only) and another model's
    fresher spec; returns (model, version ids oldest first, their valid_from, other's id)."""
    rng = case.rng
    m, other = case.model(), case.model()
    first = case.now - rng.randint(600, 900) * DAY
    starts = [first, first + rng.randint(60, 150) * DAY]
    starts.append(starts[1] + rng.randint(40, 90) * DAY)
    en = (
        f"{m} spec sheet (old edition): support_usb_c: false; charges over Micro-USB.",
        f"{m} spec sheet (new edition): support_usb_c: true; charges over USB-C.",
        f"{m} engineering notice: support_usb_c: true, note: USB-C on the {m} Pro model only.",
    )
    zh = (
        f"{m} 规格书（旧版）：support_usb_c: false，使用Micro-USB充电。",
        f"{m} 规格书（新版）：support_usb_c: true，支持USB-C充电。",
        f"{m} 工程部公告：support_usb_c: true，备注：仅限{m} Pro型号支持USB-C。",
    )
    texts = zh if case.zh else en
    sources = ("catalog", "catalog", "engineering")
    ids = [
        case.put(f"spec:{m}:usb_c", text, at, f"product:{m}", "product_spec", source)
        for text, at, source in zip(texts, starts, sources, strict=True)
    ]
    near = case.put(
        f"spec:{other}:usb_c",
        case.say(
            f"{other} spec sheet: support_usb_c: false; Micro-USB only.",
            f"{other} 规格书：support_usb_c: false，仅支持Micro-USB。",
        ),
        rng.randint(5, 30) * DAY,
        f"product:{other}",
        "product_spec",
        "catalog",
    )
    return m, ids, starts, near


def version_now(case: SeedCase) -> None:
    m, ids, _, near = _usb_c_chain(case)
    query = case.say(
        [
            f"Does the {m} support USB-C?",
            f"{m} USB-C?",
            f"does the {m} still lack USB-C?",
            f"can I charge the {m} with a USB-C cable now?",
        ],
        [
            f"{m} 支持USB-C吗？",
            f"{m} 现在支持USB-C吗",
            f"{m} 还是不支持USB-C吗？",
            f"{m} 有USB-C吗",
        ],
    )
    case.ask_seed(query, ids[-1], [*ids[:-1], near])


def version_named_date(case: SeedCase) -> None:
    m, ids, starts, near = _usb_c_chain(case)
    target = case.rng.randrange(2)
    moment = starts[target] + (starts[target + 1] - starts[target]) / 2
    months = whole_months(starts[target], starts[target + 1])  # a month named must not straddle
    if not months or case.rng.random() < 0.5:
        when = case.date(moment)
        query = case.say(
            [f"as of {when}, did the {m} support USB-C?", f"{m} USB-C support on {when}?"],
            [f"截至{when}，{m} 支持USB-C吗？", f"{when}的时候{m}支持USB-C吗"],
        )
    else:
        when = case.month(case.rng.choice(months))
        query = case.say(
            [f"Did the {m} support USB-C in {when}?", f"back in {when}: {m} USB-C?"],
            [f"{when}的时候{m}支持USB-C吗？", f"{when}{m}有USB-C吗"],
        )
    others = [i for n, i in enumerate(ids) if n != target]
    case.ask_seed(query, ids[target], [*others, near])


def colour_port(case: SeedCase) -> None:
    rng = case.rng
    brand = case.model().split()[0]
    capacity = rng.choice([5000, 10000, 20000])
    colours = case.colours(3)
    ports = rng.sample(PORTS, 2)
    want = (colours[0], ports[0])
    variants = [want, (colours[0], ports[1]), (colours[1], ports[0]), (colours[2], ports[1])]
    ids: dict[tuple[str, str], str] = {}
    for n, (colour, port) in enumerate(variants):
        age = rng.randint(20, 40) * DAY if n == 0 else rng.randint(1, 6) * DAY
        text = case.say(
            f"{brand} power bank {capacity} mAh, colour: {colour}, port: {port}.",
            f"{brand}移动电源 {capacity}mAh，颜色：{colour}，接口：{port}。",
        )
        ids[(colour, port)] = case.put(
            f"sku:{brand}-{n}",
            text,
            age,
            f"product:{brand}-PB{n}",
            "product_spec",
            "catalog",
            attributes={"colour": colour, "port": port},
        )
    colour, port = want
    query = case.say(
        [
            f"the {colour} power bank with a {port} port",
            f"{colour} {port} power bank?",
            f"do you still have that {colour} power bank with {port}?",
        ],
        [
            f"那个{colour}的、带{port}口的移动电源",
            f"{colour}{port}充电宝有货吗",
            f"{colour}带{port}的充电宝",
        ],
    )
    case.ask_seed(query, ids[want], [v for k, v in ids.items() if k != want])


def four_attributes(case: SeedCase) -> None:
    rng = case.rng
    brand, number = case.model().split()[0], rng.randint(11, 17)
    colours = case.colours(2)
    sizes = rng.sample(["128G", "256G", "512G"], 2)
    ports = rng.sample(["USB-C", "Lightning"], 2)
    want = (colours[0], "Pro", sizes[0], ports[0])
    variants = [
        want,
        (colours[1], "Pro", sizes[0], ports[0]),
        (colours[0], "", sizes[0], ports[0]),
        (colours[0], "Pro", sizes[1], ports[0]),
        (colours[0], "Pro", sizes[0], ports[1]),
        (colours[1], "", sizes[1], ports[0]),
    ]
    ids = {}
    for n, (colour, tier, size, port) in enumerate(variants):
        name = f"{brand} {number}{' ' + tier if tier else ''}"
        text = case.say(
            f"{name}, {colour}, {size.replace('G', ' GB')}, {port} port.",
            f"{name}，{colour}，{size}，{port}接口。",
        )
        age = rng.randint(20, 30) * DAY if n == 0 else rng.randint(1, 5) * DAY
        ids[(colour, tier, size, port)] = case.put(
            f"sku:{brand}-{number}-{n}",
            text,
            age,
            f"product:{brand}-{number}-{n}",
            "product_spec",
            "catalog",
            attributes={"colour": colour, "model": name, "storage": size, "port": port},
        )
    colour, _, size, port = want
    query = case.say(
        [
            f"{colour} {brand} {number} Pro {size} {port}",
            f"{brand} {number} Pro in {colour}, {size.replace('G', ' GB')}, with {port}?",
            f"do you have the {colour} {brand} {number} Pro, {size}, {port}?",
        ],
        [
            f"{colour} {brand} {number} Pro {size} {port}",
            f"有没有{colour}的{brand} {number} Pro，{size}，{port}口的",
            f"{brand} {number} Pro {colour} {size} {port} 有货吗",
        ],
    )
    case.ask_seed(query, ids[want], [v for k, v in ids.items() if k != want])


def doc_priority(case: SeedCase) -> None:
    rng = case.rng
    p = case.model()
    official = case.put(
        f"doc:{p}:satellite",
        case.say(
            f"{p} official specification: satellite connectivity is limited to Emergency SOS; "
            "no satellite calls or messages.",
            f"{p} 官方规格：卫星通信仅限紧急SOS，不支持卫星通话和短信。",
        ),
        rng.randint(60, 200) * DAY,
        f"product:{p}",
        "official_document",
        "official",
    )
    press = case.put(
        f"press:{p}:launch",
        case.say(
            f"{p} launch press release: all-new satellite communication keeps you connected "
            "anywhere!",
            f"{p} 发布会新闻稿：全新卫星通信功能，随时随地保持连接！",
        ),
        rng.randint(5, 40) * DAY,
        f"product:{p}",
        "press_release",
        "press",
    )
    review = case.put(
        f"review:{p}:1",
        case.say(
            f"User review: satellite messaging on the {p} is amazing, I text from the mountains.",
            f"用户评价：{p}的卫星短信太好用了，在山里也能发消息。",
        ),
        rng.randint(1, 5) * DAY,
        f"product:{p}",
        "user_review",
        "user_review",
    )
    query = case.say(
        [
            f"Does the {p} support satellite communication?",
            f"{p} satellite messaging?",
            f"can I send texts over satellite with the {p}?",
        ],
        [f"{p} 支持卫星通信吗？", f"{p} 能发卫星短信吗", f"{p} 卫星通信？"],
    )
    case.ask_seed(query, official, [press, review])
