"""Word pools and the per-case builder of the blind seed suite (``seedblind``).

Written from the seed article's text alone, without reading the ranking code, and apart from
the other seed suites: its own shops, people, products, id formats and phrasings, drawn from
``random.Random(f"seedblind:{seed}:{kind}")``. A case is English or Chinese, in its own tenant
``blind-<kind>-<i>``; its question's id ends with its language (``-en`` / ``-zh``). Pure: ``now``
is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality.seed_words import EN_MONTHS
from memstream.bench.quality.suite import Question, doc_id

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
QUARTERS_ZH = ("第一季度", "第二季度", "第三季度", "第四季度")
ZH_FAMILY = "张李王刘陈黄赵孙马朱胡郭林罗梁宋唐许邓"
ZH_GIVEN = ("伟", "芳", "娜", "敏", "静", "磊", "洋", "艳", "勇", "军", "杰", "婷", "涛", "超")
EN_FIRST = ("Nora", "Ivan", "Grace", "Felix", "Hana", "Diego", "Alma", "Rupert", "Yusuf", "Clara")
EN_LAST = ("Blake", "Petrov", "Okafor", "Lindgren", "Sato", "Navarro", "Brandt", "Quinn", "Duval")
MAKERS = ("Norvik", "Sable", "Orin", "Quill", "Tamsin", "Brisa", "Kestrel", "Lumo", "Pavo")
CITIES = (
    ("Hangzhou", "杭州"),
    ("Chengdu", "成都"),
    ("Wuhan", "武汉"),
    ("Suzhou", "苏州"),
    ("Xiamen", "厦门"),
    ("Tianjin", "天津"),
    ("Nanjing", "南京"),
)
COLOURS = (
    ("midnight blue", "午夜蓝"),
    ("graphite", "石墨黑"),
    ("ivory", "象牙白"),
    ("sage green", "鼠尾草绿"),
    ("coral", "珊瑚粉"),
    ("sand", "沙色"),
)
# (English, Chinese) category, and a feature a shopper asks about
CATEGORIES = (
    ("wireless earbuds", "无线耳机", "active noise cancelling", "主动降噪"),
    ("over-ear headphones", "头戴式耳机", "noise cancelling", "降噪"),
    ("smartwatch", "智能手表", "blood-oxygen monitoring", "血氧监测"),
    ("bluetooth speaker", "蓝牙音箱", "waterproofing", "防水"),
    ("air purifier", "空气净化器", "a HEPA filter", "HEPA滤网"),
    ("electric toothbrush", "电动牙刷", "a pressure sensor", "压力感应"),
    ("action camera", "运动相机", "image stabilisation", "防抖"),
    ("tablet", "平板电脑", "stylus support", "手写笔支持"),
    ("mesh router", "路由器", "Wi-Fi 7", "Wi-Fi 7"),
    ("hair dryer", "吹风机", "an ionic mode", "负离子护发"),
)
PROFILE_EN = (
    "Account note: prefers delivery to a parcel locker.",
    "Account note: member of the Plus programme since 2021.",
    "Account note: asked not to be called before 10:00.",
    "Account note: default payment is the company card.",
    "Account note: speaks English and Portuguese.",
)
PROFILE_ZH = (
    "账户备注：偏好送到快递柜。",
    "账户备注：2021年起为Plus会员。",
    "账户备注：上午10点前请勿来电。",
    "账户备注：默认用公司卡付款。",
    "账户备注：收货时需要电话确认。",
)


class BlindCase:
    """One case: its tenant's events (``late`` ones are ingested after all others) and its
    single question."""

    def __init__(self, kind: str, index: int, now: datetime, rng: random.Random, zh: bool) -> None:
        self.kind, self.index, self.now, self.rng, self.zh = kind, index, now, rng, zh
        self.lang = "zh" if zh else "en"
        self.tenant = f"blind-{kind}-{index}"
        self.events: list[dict[str, Any]] = []
        self.late: list[dict[str, Any]] = []
        self.questions: list[Question] = []
        self._used: set[str] = set()

    # -- words ---------------------------------------------------------------------------------
    def say(self, en: str | Sequence[str], zh: str | Sequence[str]) -> str:
        """The case's language's text; from a sequence, one at random."""
        pick = zh if self.zh else en
        return pick if isinstance(pick, str) else self.rng.choice(list(pick))

    def of(self, pair: Sequence[str]) -> str:
        """(English, Chinese) → the case's language's."""
        return pair[1] if self.zh else pair[0]

    def _fresh(self, make: Callable[[], str]) -> str:
        while True:
            value = make()
            if value not in self._used:
                self._used.add(value)
                return value

    def customer(self) -> str:
        return self._fresh(lambda: f"U{self.rng.randint(10**6, 10**7 - 1)}")

    def person(self) -> str:
        if self.zh:
            return self._fresh(lambda: self.rng.choice(ZH_FAMILY) + self.rng.choice(ZH_GIVEN))
        return self._fresh(lambda: f"{self.rng.choice(EN_FIRST)} {self.rng.choice(EN_LAST)}")

    def order(self) -> str:
        if self.zh:
            return self._fresh(lambda: f"{self.rng.randint(10**14, 10**15 - 1)}")
        return self._fresh(
            lambda: f"WO-{self.rng.randint(100, 999)}-{self.rng.randint(1000, 9999)}"
        )

    def lookalike(self, ident: str) -> str:
        """The same id with its last digit changed: a different record that reads alike."""

        def make() -> str:
            last = int(ident[-1]) if ident[-1].isdigit() else 0
            return ident[:-1] + str((last + self.rng.randint(1, 9)) % 10)

        return self._fresh(make)

    def waybill(self) -> str:
        prefix = self.rng.choice(("EMS", "DBL", "YD", "HTKY"))
        return self._fresh(lambda: f"{prefix}{self.rng.randint(10**9, 10**10 - 1)}")

    def ticket(self) -> str:
        return self._fresh(lambda: f"CS-{self.rng.randint(2000, 8999)}-{self.rng.randint(10, 99)}")

    def sku(self) -> str:
        return self._fresh(lambda: f"{self.rng.randint(100, 999)}-{self.rng.randint(1000, 9999)}")

    def model(self, maker: str | None = None) -> str:
        brand = maker or self.rng.choice(MAKERS)
        letters = "ACDHKMRTVX"
        return self._fresh(
            lambda: (
                f"{brand} {self.rng.choice(letters)}{self.rng.choice(letters)}"
                f"{self.rng.randint(2, 99)}"
            )
        )

    def month_name(self, moment: datetime) -> str:
        if self.zh:
            return f"{moment.year}年{moment.month}月"
        return f"{EN_MONTHS[moment.month - 1]} {moment.year}"

    def quarter_name(self, moment: datetime) -> str:
        q = (moment.month - 1) // 3
        return f"{moment.year}年{QUARTERS_ZH[q]}" if self.zh else f"Q{q + 1} {moment.year}"

    def day(self, moment: datetime) -> str:
        return f"{moment.year}年{moment.month}月{moment.day}日" if self.zh else f"{moment:%d %b %Y}"

    # -- events --------------------------------------------------------------------------------
    def at(self, when: datetime | timedelta) -> datetime:
        return self.now - when if isinstance(when, timedelta) else when

    def put(
        self,
        key: str,
        content: str,
        when: datetime | timedelta,
        entity: str,
        fact: str,
        source: str,
        *,
        status: str = "active",
        attributes: dict[str, str] | None = None,
        anchors: Sequence[str] = (),
        late: bool = False,
        op: str = "UPSERT",
    ) -> str:
        """One event (``when``: a moment, or how long ago); returns its document id."""
        entity_type, entity_id = entity.split(":", 1)
        event_id = f"{key}@{len(self.events) + len(self.late)}"
        event: dict[str, Any] = {
            "event_id": event_id,
            "tenant_id": self.tenant,
            "memory_key": key,
            "entity_type": entity_type,
            "entity_id": entity_id,
            "fact_type": fact,
            "content": content,
            "source_system": source,
            "status": status,
            "op": op,
            "occurred_at": self.at(when).isoformat(),
            "attributes": attributes or {},
        }
        if anchors:
            event["entities"] = [
                {"type": a.split(":", 1)[0], "id": a.split(":", 1)[1]} for a in anchors
            ]
        (self.late if late else self.events).append(event)
        return doc_id(self.tenant, event_id)

    def retract(
        self, key: str, when: datetime | timedelta, entity: str, fact: str, source: str
    ) -> str:
        """Closes the memory ``key`` (ingested after every other event)."""
        reason = self.say("withdrawn by the moderators", "已被版主撤稿")
        return self.put(key, reason, when, entity, fact, source, late=True, op="RETRACT")

    def profile(self, customer: str, count: int = 2) -> None:
        """The customer's account notes: realistic company for their own records."""
        for n, text in enumerate(self.rng.sample(PROFILE_ZH if self.zh else PROFILE_EN, count)):
            ago = self.rng.randint(30, 700) * DAY
            self.put(f"account:{customer}:{n}", text, ago, f"customer:{customer}", "profile", "crm")

    def ask(
        self,
        query: str,
        right: str,
        below: Sequence[str] = (),
        request: dict[str, Any] | None = None,
        forbidden: Sequence[str] = (),
    ) -> None:
        """``right`` must rank first, ``below`` under it, ``forbidden`` never be returned."""
        self.questions.append(
            Question(
                f"blind-{self.kind}-{self.index}-{self.lang}",
                self.tenant,
                query,
                self.kind,
                frozenset([right]),
                request or {},
                frozenset(forbidden),
                frozenset(below),
            )
        )


def month_start(moment: datetime, back: int = 0) -> datetime:
    """The first instant of ``moment``'s month, ``back`` months earlier."""
    index = moment.year * 12 + moment.month - 1 - back
    return moment.replace(
        year=index // 12, month=index % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0
    )


def quarter_start(moment: datetime, back: int = 0) -> datetime:
    """The first instant of ``moment``'s quarter, ``back`` quarters earlier."""
    first = month_start(moment, (moment.month - 1) % 3)
    return month_start(first, 3 * back)
