"""Word pools and the per-instance builder of the seed trap suite (``seedtraps``).

Names, products, brands, couriers and dates are drawn from a seeded ``random.Random``, so each
``--seed`` gives new wording; every instance is either English or Chinese (``SeedCase.lang``),
memories and question alike. ``SeedCase.ask`` records which memory must rank first (``right``)
and which must not (``stale``: distractors that must rank below it; ``forbidden``: never
returned, e.g. a retracted post). Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality.suite import Question
from memstream.bench.quality.trap_case import TrapCase

DAY = timedelta(days=1)
LANGS = ("en", "zh")
ZH_SURNAMES = "张李王赵陈刘杨黄周吴徐孙马朱胡郭何林罗高"
ZH_GIVEN = (
    "三",
    "四",
    "伟",
    "芳",
    "娜",
    "敏",
    "静",
    "磊",
    "洋",
    "婷",
    "强",
    "军",
    "杰",
    "丽",
    "涛",
)
EN_FIRST = ("Anna", "Ben", "Clara", "David", "Emma", "Felix", "Grace", "Hugo", "Iris", "Jonas")
EN_LAST = ("Meyer", "Novak", "Okafor", "Larsen", "Rossi", "Tanaka", "Silva", "Brandt", "Keller")
BRANDS = ("Auren", "Kovo", "Lyra", "Sonex", "Jabri", "Nexa", "Vanta", "Orbis", "Pellio", "Quanta")
EN_COLOURS = ("blue", "black", "white", "red", "green", "silver", "pink", "grey")
ZH_COLOURS = ("蓝色", "黑色", "白色", "红色", "绿色", "银色", "粉色", "灰色")
PORTS = ("USB-C", "Micro-USB", "Lightning")
COURIERS = (
    ("DHL", "DHL"),
    ("SF Express", "顺丰"),
    ("UPS", "韵达"),
    ("GLS", "中通"),
    ("DPD", "圆通"),
)
EN_CITIES = ("Hamburg", "Lyon", "Milan", "Madrid", "Vienna", "Prague", "Warsaw", "Porto")
ZH_CITIES = ("北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "南京")
# (English, Chinese) product kinds a shop sells; the first of each is the generic name.
GOODS = (
    ("power bank", "移动电源"),
    ("charger", "充电器"),
    ("bluetooth speaker", "蓝牙音箱"),
    ("smart watch", "智能手表"),
    ("keyboard", "键盘"),
    ("desk lamp", "台灯"),
    ("rice cooker", "电饭煲"),
    ("air purifier", "空气净化器"),
    ("electric kettle", "电水壶"),
    ("hair dryer", "吹风机"),
)
RETURN_REASONS = (
    ("it stopped charging after two days", "用了两天就充不进电"),
    ("the colour did not match the photos", "颜色和图片不一致"),
    ("it arrived with a cracked case", "收到时外壳有裂痕"),
    ("it was too loud", "噪音太大"),
    ("it was the wrong size", "尺寸不对"),
)
FILLERS_EN = (
    "Prefers to be contacted by email rather than by phone.",
    "Loyalty tier: gold, member since 2019.",
    "Preferred delivery slot: weekday evenings.",
    "Asked how to reset the account password; a reset link was sent.",
    "Newsletter subscription confirmed.",
)
FILLERS_ZH = (
    "偏好通过邮件联系，不要打电话。",
    "会员等级：金卡，2019年注册。",
    "希望工作日晚上送货。",
    "咨询过如何重置账户密码，已发送重置链接。",
    "已订阅会员通讯。",
)
ZH_MONTHS = ("一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二")
EN_MONTHS = (
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
)


class SeedCase(TrapCase):
    """One instance of a seed trap kind, in one language, with its own tenant."""

    def __init__(
        self, kind: str, index: int, tenant: str, now: datetime, rng: random.Random
    ) -> None:
        super().__init__(kind, index, tenant, now)
        self.rng = rng
        self.lang = LANGS[index % 2]

    @property
    def zh(self) -> bool:
        return self.lang == "zh"

    def say(self, en: str | Sequence[str], zh: str | Sequence[str]) -> str:
        """The phrasing in this instance's language (one of several, drawn by the rng)."""
        options = zh if self.zh else en
        return options if isinstance(options, str) else self.rng.choice(list(options))

    def anchor(self, entities: Sequence[str]) -> None:
        """Extra entities (``type:id``) of the event added last."""
        self.events[-1]["entities"] = [
            {"type": e.split(":", 1)[0], "id": e.split(":", 1)[1]} for e in entities
        ]

    def customer(self) -> str:
        return self._fresh(lambda: f"C-{self.rng.randint(10000, 99999)}")

    def order(self) -> str:
        return self._fresh(lambda: f"O-{self.rng.randint(100000, 999999)}")

    def ticket(self) -> str:
        return self._fresh(lambda: f"CRM-{self.rng.randint(1000, 9999)}")

    def serial(self) -> str:
        return self._fresh(lambda: f"SN{self.rng.randint(10**7, 10**8 - 1)}")

    def model(self) -> str:
        return self._fresh(
            lambda: (
                f"{self.rng.choice(BRANDS)} {self.rng.choice('ABCDEHKMPRSTVX')}"
                f"{self.rng.randint(2, 99)}"
            )
        )

    def person(self) -> str:
        if self.zh:
            return self._fresh(lambda: self.rng.choice(ZH_SURNAMES) + self.rng.choice(ZH_GIVEN))
        return self._fresh(lambda: f"{self.rng.choice(EN_FIRST)} {self.rng.choice(EN_LAST)}")

    def goods(self, count: int = 1) -> list[str]:
        return [g[1] if self.zh else g[0] for g in self.rng.sample(GOODS, count)]

    def colours(self, count: int) -> list[str]:
        picks = self.rng.sample(range(len(EN_COLOURS)), count)
        return [(ZH_COLOURS if self.zh else EN_COLOURS)[i] for i in picks]

    def month(self, moment: datetime, year: bool = True) -> str:
        """A month as the question names it ("March 2025", "2025年3月", "三月")."""
        if self.zh:
            if not year:
                return self.rng.choice([f"{ZH_MONTHS[moment.month - 1]}月", f"{moment.month}月"])
            return f"{moment.year}年{moment.month}月"
        name = EN_MONTHS[moment.month - 1]
        return f"{name} {moment.year}" if year else name

    def date(self, moment: datetime) -> str:
        if self.zh:
            return f"{moment.year}年{moment.month}月{moment.day}日"
        return f"{moment.day} {EN_MONTHS[moment.month - 1]} {moment.year}"

    def filler(self, customer: str, count: int = 2) -> None:
        """Unrelated memories of the customer (contact preference, loyalty tier, …)."""
        texts = FILLERS_ZH if self.zh else FILLERS_EN
        for n, text in enumerate(self.rng.sample(texts, count)):
            age = self.rng.randint(5, 400) * DAY
            self.put(f"profile:{customer}:{n}", text, age, f"customer:{customer}", "profile", "crm")

    def put(
        self,
        key: str,
        content: str,
        at: datetime | timedelta,
        entity: str,
        fact: str,
        source: str,
        **extra: Any,
    ) -> str:
        """``add`` with the valid time given as a moment or as an age."""
        ago = at if isinstance(at, timedelta) else self.now - at
        return self.add(key, content, ago, entity, fact, source, **extra)

    def ask_seed(
        self,
        query: str,
        right: str,
        stale: Sequence[str] = (),
        request: dict[str, Any] | None = None,
        forbidden: Sequence[str] = (),
    ) -> None:
        self.questions.append(
            Question(
                f"seed-{self.family}-{self.index}-{self.lang}",
                self.tenant,
                query,
                self.family,
                frozenset([right]),
                request or {},
                frozenset(forbidden),
                frozenset(stale),
            )
        )

    def _fresh(self, make: Any) -> str:
        while True:
            value = str(make())
            if value not in self.used:
                self.used.add(value)
                return value


def month_start(moment: datetime, back: int = 0) -> datetime:
    """The first instant of the month ``back`` months before ``moment``'s month."""
    index = moment.year * 12 + moment.month - 1 - back
    return moment.replace(
        year=index // 12, month=index % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0
    )


def whole_months(start: datetime, end: datetime) -> list[datetime]:
    """The starts of the calendar months that lie wholly inside [start, end)."""
    months, first = [], month_start(start, -1 if start != month_start(start) else 0)
    while month_start(first, -1) <= end:
        months.append(first)
        first = month_start(first, -1)
    return months


def question_language(question: Question) -> str:
    """``en`` or ``zh``: the language an instance was written in (the end of its qid)."""
    return question.qid.rsplit("-", 1)[-1]
