"""Word pools of the held-out seed suite (``seedheld``): ids, names, filler records, places,
items and dates, English and Chinese side by side.

Plain data and small drawing helpers: customer ids of one shape whose later ones are look-alikes
of the first, order / ticket / SKU ids, model names sharing a brand, and named months counted
back from ``now``. Pure.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from datetime import UTC, datetime

EN_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


EN_MON = [m[:3] for m in EN_MONTHS]


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + "".join(rng.choice(string.digits) for _ in range(n - 1))


CUSTOMER_SHAPES = [
    ("C-", 4, ""),
    ("cust_", 5, ""),
    ("U", 7, ""),
    ("VIP-", 4, ""),
    ("acct-", 6, ""),
    ("CN", 8, ""),
    ("M", 5, "K"),
    ("usr", 6, ""),
    ("HK-", 5, "A"),
]


def customer_ids(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    """``count`` customer ids of one shape, the later ones look-alikes of the first (a digit
    swapped or changed), as ids in one CRM tend to be."""
    prefix, n, suffix = rng.choice(CUSTOMER_SHAPES)
    while True:
        base = _digits(rng, n)
        first = f"{prefix}{base}{suffix}"
        if first not in avoid:
            break
    out = [first]
    avoid.add(first)
    tries = 0
    while len(out) < count:
        tries += 1
        d = list(base)
        if tries < 40 and rng.random() < 0.6:
            i = rng.randrange(1, n - 1)
            d[i], d[i + 1] = d[i + 1], d[i]
        else:
            i = rng.randrange(1, n)
            d[i] = rng.choice(string.digits)
        cand = f"{prefix}{''.join(d)}{suffix}"
        if cand not in avoid:
            avoid.add(cand)
            out.append(cand)
    return out


ORDER_SHAPES: list[Callable[[random.Random], str]] = [
    lambda r: f"O-{_digits(r, 5)}",
    lambda r: f"SO-{_digits(r, 3)}-{_digits(r, 4)}",
    lambda r: f"ord_{''.join(r.choice('0123456789abcdef') for _ in range(6))}",
    lambda r: f"PO{_digits(r, 6)}K",
    lambda r: f"WB{_digits(r, 8)}",
    lambda r: f"JD{_digits(r, 10)}",
    lambda r: f"T{_digits(r, 7)}",
]


def order_ids(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    shape = rng.choice(ORDER_SHAPES)
    out: list[str] = []
    while len(out) < count:
        cand = shape(rng)
        if cand not in avoid:
            avoid.add(cand)
            out.append(cand)
    return out


def ticket_id(rng: random.Random, avoid: set[str]) -> str:
    shapes = [
        lambda: f"TK-{_digits(rng, 5)}",
        lambda: f"CRM-{_digits(rng, 4)}",
        lambda: f"INC{_digits(rng, 7)}",
        lambda: f"case-{_digits(rng, 6)}",
        lambda: f"WO{_digits(rng, 5)}",
    ]
    while True:
        cand = rng.choice(shapes)()
        if cand not in avoid:
            avoid.add(cand)
            return cand


SKU_LETTERS = "ABCDEFGHJKLMNPRSTVWXZ"


def sku(rng: random.Random, avoid: set[str]) -> str:
    shapes = [
        lambda: f"SKU-{_digits(rng, 5)}",
        lambda: f"P{_digits(rng, 6)}",
        lambda: f"{rng.choice(SKU_LETTERS)}{rng.choice(SKU_LETTERS)}-{_digits(rng, 4)}",
        lambda: f"item{_digits(rng, 5)}",
    ]
    while True:
        cand = rng.choice(shapes)()
        if cand not in avoid:
            avoid.add(cand)
            return cand


BRANDS = [
    "Kestrel",
    "Vela",
    "Nimbus",
    "Orrin",
    "Talon",
    "Quillon",
    "Halden",
    "Sorrel",
    "Brisk",
    "Lumo",
    "Corvex",
    "Tamber",
    "Ysolde",
    "Merrow",
    "Pavik",
    "Zanthe",
    "Ondra",
    "Fenwick",
    "Arlo",
    "Druse",
    "Kairo",
    "Nettle",
    "Solvay",
    "Umber",
]


def model_names(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    """Distinct model names; several share a brand (look-alike models are the norm)."""
    brand = rng.choice(BRANDS)
    out: list[str] = []
    while len(out) < count:
        b = brand if rng.random() < 0.6 else rng.choice(BRANDS)
        shape = rng.randrange(5)
        if shape == 0:
            name = f"{b} {rng.randrange(10, 99)}"
        elif shape == 1:
            name = f"{b} {rng.choice('SXRTV')}{rng.randint(2, 9)}"
        elif shape == 2:
            name = f"{b} Pro {rng.randint(3, 12)}"
        elif shape == 3:
            name = f"{b}-{rng.randint(100, 990)}{rng.choice(['', 'e', 'i', 'Plus'])}"
        else:
            name = f"{b} Air {rng.randint(2, 5)}"
        if name not in avoid:
            avoid.add(name)
            out.append(name)
    return out


TENANT_NOISE = {
    "en": [
        (
            "policy",
            "wiki",
            "Returns are accepted within 30 days of delivery if the item is unused.",
        ),
        ("policy", "wiki", "Orders above 199 ship free within the mainland."),
        ("faq", "wiki", "Gift cards cannot be exchanged for cash or used on marketplace sellers."),
        ("notice", "wiki", "Customer service hours: 9:00-21:00, closed on public holidays."),
        ("policy", "wiki", "Loyalty points expire on 31 December each year."),
        ("faq", "wiki", "Invoices can be requested from the order details page."),
        ("notice", "wiki", "Warehouse B relocated; pickups now at Dock 4."),
        ("faq", "wiki", "Price protection: difference refunded if the price drops within 7 days."),
    ],
    "zh": [
        ("policy", "wiki", "商品签收后30天内未使用可申请退货。"),
        ("policy", "wiki", "大陆地区订单满199元包邮。"),
        ("faq", "wiki", "礼品卡不可兑换现金，也不能在第三方商家使用。"),
        ("notice", "wiki", "客服时间：每天9:00-21:00，法定节假日休息。"),
        ("policy", "wiki", "会员积分于每年12月31日清零。"),
        ("faq", "wiki", "发票可在订单详情页自助申请。"),
        ("notice", "wiki", "B号仓库已搬迁，自提改到4号码头。"),
        ("faq", "wiki", "价格保护：下单7天内降价可退差价。"),
    ],
}


PERSON_NOISE = {
    "en": [
        ("preference", "crm", "Prefers SMS over email for delivery updates."),
        ("preference", "crm", "Asks that parcels be left with the building concierge."),
        ("note", "crm", "Opted out of marketing calls."),
        ("preference", "crm", "Preferred language for invoices: English."),
        ("note", "support_chat", "Asked how to change the account password; reset link sent."),
        ("preference", "crm", "Likes weekend delivery slots."),
    ],
    "zh": [
        ("preference", "crm", "物流通知偏好短信，不要邮件。"),
        ("preference", "crm", "包裹请放小区门卫处。"),
        ("note", "crm", "已退订营销电话。"),
        ("preference", "crm", "发票抬头习惯开个人。"),
        ("note", "support_chat", "咨询过如何修改登录密码，已发送重置链接。"),
        ("preference", "crm", "喜欢周末送货。"),
    ],
}


HIGH_SOURCES = ["official_document", "erp", "wiki", "press_release"]


LOW_SOURCES = ["forum", "user_review", "third_party"]


SPEC_SOURCES = ["official_document", "erp", "wiki"]


SPEC_FACTS = ["product_spec", "spec"]


STREETS_EN = [
    "Alder Row",
    "Kingsmere Road",
    "Poplar Lane",
    "Harbour Street",
    "Wexley Close",
    "Mill Yard",
    "Canal Walk",
    "Fenn Avenue",
]


CITIES_EN = ["Leeds", "Bristol", "Utrecht", "Porto", "Gdansk", "Lyon", "Graz", "Aarhus"]


CITIES_ZH = ["杭州市", "成都市", "苏州市", "武汉市", "青岛市", "厦门市", "长沙市", "西安市"]


DISTRICTS_ZH = ["西湖区", "高新区", "姑苏区", "江汉区", "市南区", "思明区", "岳麓区", "雁塔区"]


ROADS_ZH = ["文三路", "天府大道", "人民路", "解放大道", "香港中路", "湖滨南路", "麓山路", "科技路"]


ITEMS: list[
    tuple[str, str, list[str], list[str]]
] = [  # (en, zh, detail en options, detail zh options)
    (
        "trail running shoes",
        "越野跑鞋",
        ["size 42, grey", "size 43, grey", "size 42, black"],
        ["42码 灰色", "43码 灰色", "42码 黑色"],
    ),
    ("wool scarf", "羊毛围巾", ["charcoal", "camel", "navy"], ["炭灰色", "驼色", "藏青色"]),
    ("air fryer", "空气炸锅", ["4.5 L", "5.5 L", "3.5 L"], ["4.5升", "5.5升", "3.5升"]),
    (
        "mechanical keyboard",
        "机械键盘",
        ["brown switches", "red switches", "blue switches"],
        ["茶轴", "红轴", "青轴"],
    ),
    (
        "down jacket",
        "羽绒服",
        ["size M, black", "size L, black", "size M, olive"],
        ["M码 黑色", "L码 黑色", "M码 橄榄绿"],
    ),
    (
        "desk lamp",
        "台灯",
        ["warm white", "daylight", "warm white, clamp base"],
        ["暖白光", "日光色", "暖白光 夹式底座"],
    ),
    (
        "yoga mat",
        "瑜伽垫",
        ["6 mm, purple", "8 mm, purple", "6 mm, teal"],
        ["6毫米 紫色", "8毫米 紫色", "6毫米 青色"],
    ),
    ("rice cooker", "电饭煲", ["3 L", "4 L", "5 L"], ["3升", "4升", "5升"]),
    ("bluetooth speaker", "蓝牙音箱", ["red", "black", "sand"], ["红色", "黑色", "沙色"]),
    (
        "office chair",
        "办公椅",
        ["mesh back", "leather", "mesh back, headrest"],
        ["网背", "皮质", "网背 带头枕"],
    ),
    (
        "water filter cartridge",
        "净水滤芯",
        ["pack of 2", "pack of 3", "single"],
        ["两支装", "三支装", "单支"],
    ),
    ("tea gift box", "茶叶礼盒", ["oolong", "pu-erh", "jasmine"], ["乌龙", "普洱", "茉莉花茶"]),
    (
        "baby stroller",
        "婴儿推车",
        ["compact", "jogger", "compact, grey"],
        ["轻便款", "慢跑款", "轻便款 灰色"],
    ),
    (
        "ceramic pour-over set",
        "陶瓷手冲套装",
        ["white", "speckled", "matte black"],
        ["白色", "斑点釉", "哑光黑"],
    ),
]


def months_back(now: datetime, k: int) -> tuple[int, int]:
    y, m = now.year, now.month - k
    while m <= 0:
        m += 12
        y -= 1
    return y, m


def in_month(rng: random.Random, y: int, m: int, lo: int = 6, hi: int = 23) -> datetime:
    return datetime(y, m, rng.randint(lo, hi), rng.randint(8, 18), rng.randint(0, 59), tzinfo=UTC)


def en_month(y: int, m: int, rng: random.Random) -> str:
    return rng.choice(
        [f"{EN_MONTHS[m - 1]} {y}", f"{EN_MON[m - 1]} {y}", f"{EN_MONTHS[m - 1]} of {y}"]
    )


def zh_month(y: int, m: int, rng: random.Random) -> str:
    return rng.choice([f"{y}年{m}月", f"{y}年{m}月份"])
