"""Word pools and the per-case builder of the fresh seed suite (``seedfresh``).

A second suite written from the seed article, kept apart from ``seedtraps``: its own shops,
people, products and record formats (CRM cards, RMA and ticket numbers, waybills, SKU
listings), drawn from ``random.Random(f"seedfresh:{seed}:{kind}")``. Each case is English or
Chinese (alternately), in its own tenant ``fresh-<kind>-<i>`` (and, where a case needs one, a
twin tenant ``fresh-<kind>-<i>-twin``). Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality.seed_words import SeedCase
from memstream.bench.quality.suite import Question

HOUR = timedelta(hours=1)
ZH_NAMES_FAMILY = "钱孙周吴郑冯褚卫蒋沈韩杨朱秦许何吕施曹严"
ZH_NAMES_GIVEN = ("晓明", "丽华", "建国", "雪梅", "志强", "海燕", "俊杰", "佳怡", "子涵", "浩然")
EN_NAMES_FIRST = ("Lena", "Marco", "Priya", "Tomas", "Sofia", "Omar", "Elena", "Lukas", "Mia")
EN_NAMES_LAST = (
    "Fischer",
    "Moreau",
    "Kowalski",
    "Haddad",
    "Lindqvist",
    "Costa",
    "Weber",
    "Ivanova",
)
MAKERS = ("Voltra", "Aster", "Kepla", "Murano", "Tessel", "Corvo", "Halden", "Rivo", "Zenit")
# (English, Chinese) goods a consumer-electronics shop sells
WARES = (
    ("power bank", "充电宝"),
    ("wall charger", "充电头"),
    ("smart band", "智能手环"),
    ("webcam", "摄像头"),
    ("mechanical keyboard", "机械键盘"),
    ("wireless mouse", "无线鼠标"),
    ("portable SSD", "移动硬盘"),
    ("robot vacuum", "扫地机器人"),
    ("soundbar", "回音壁音箱"),
    ("e-book reader", "电子书阅读器"),
)
ISSUES = (
    ("stopped working after three days", "用了三天就坏了"),
    ("a part was missing from the box", "包装里少了配件"),
    ("the wrong colour was delivered", "发错了颜色"),
    ("it will not charge", "充不进电"),
    ("the invoice was never sent", "一直没收到发票"),
    ("the refund has not arrived", "退款还没到账"),
)
REASONS = (
    ("arrived scratched", "收到有划痕"),
    ("stopped working after a week", "用了一周就坏了"),
    ("not as described", "与描述不符"),
    ("ordered by mistake", "拍错了"),
    ("too heavy", "太重了"),
)
PROFILE_EN = (
    "Customer card: prefers WhatsApp over phone calls.",
    "Customer card: invoice to be issued to the company, VAT number on file.",
    "Customer card: delivery to the office reception on weekdays.",
    "Customer card: opted out of marketing e-mails.",
)
PROFILE_ZH = (
    "客户档案：偏好微信联系，不接电话。",
    "客户档案：发票开公司抬头，税号已登记。",
    "客户档案：工作日送到公司前台。",
    "客户档案：已退订营销短信。",
)
EN_COLOURS = ("blue", "black", "white", "pink", "green", "silver", "orange")
ZH_COLOURS = ("蓝色", "黑色", "白色", "粉色", "绿色", "银色", "橙色")


class FreshCase(SeedCase):
    """One case of a fresh seed kind: its tenant's events and its single question."""

    @property
    def twin(self) -> str:
        """Another tenant (another shop) that holds look-alike records."""
        return f"{self.tenant}-twin"

    def customer(self) -> str:
        return self._fresh(lambda: f"CU{self.rng.randint(100000, 999999)}")

    def order(self) -> str:
        return self._fresh(lambda: f"SO{self.rng.randint(10**7, 10**8 - 1)}")

    def rma(self) -> str:
        return self._fresh(lambda: f"RMA-{self.rng.randint(10000, 99999)}")

    def ticket(self) -> str:
        return self._fresh(lambda: f"TK-{self.rng.randint(100000, 999999)}")

    def waybill(self) -> str:
        prefix = self.rng.choice(("SF", "YT", "JD", "ZTO"))
        return self._fresh(lambda: f"{prefix}{self.rng.randint(10**11, 10**12 - 1)}")

    def sku(self) -> str:
        return self._fresh(lambda: f"SKU-{self.rng.randint(10000, 99999)}")

    def model(self) -> str:
        letters = "BFGJLNQWYZ"
        return self._fresh(
            lambda: f"{self.rng.choice(MAKERS)} {self.rng.choice(letters)}{self.rng.randint(3, 90)}"
        )

    def person(self) -> str:
        if self.zh:
            return self._fresh(
                lambda: self.rng.choice(ZH_NAMES_FAMILY) + self.rng.choice(ZH_NAMES_GIVEN)
            )
        return self._fresh(
            lambda: f"{self.rng.choice(EN_NAMES_FIRST)} {self.rng.choice(EN_NAMES_LAST)}"
        )

    def goods(self, count: int = 1) -> list[str]:
        return [w[1] if self.zh else w[0] for w in self.rng.sample(WARES, count)]

    def pair(self, pool: Sequence[tuple[str, str]], count: int = 1) -> list[str]:
        return [p[1] if self.zh else p[0] for p in self.rng.sample(list(pool), count)]

    def colours(self, count: int) -> list[str]:
        picks = self.rng.sample(range(len(EN_COLOURS)), count)
        return [(ZH_COLOURS if self.zh else EN_COLOURS)[i] for i in picks]

    def stamp(self, moment: datetime) -> str:
        """A date with the hour, as a ticketing system prints it."""
        return f"{moment:%Y-%m-%d %H:%M}"

    def filler(self, customer: str, count: int = 2) -> None:
        texts = PROFILE_ZH if self.zh else PROFILE_EN
        for n, text in enumerate(self.rng.sample(texts, count)):
            age = self.rng.randint(10, 500) * 24 * HOUR
            self.put(f"card:{customer}:{n}", text, age, f"customer:{customer}", "profile", "crm")

    def put(
        self,
        key: str,
        content: str,
        at: datetime | timedelta,
        entity: str,
        fact: str,
        source: str,
        *,
        anchors: Sequence[str] = (),
        **extra: Any,
    ) -> str:
        """``SeedCase.put`` plus the event's extra entity anchors (``type:id``)."""
        doc = super().put(key, content, at, entity, fact, source, **extra)
        if anchors:
            added = self.late[-1] if extra.get("late") else self.events[-1]
            added["entities"] = [
                {"type": a.split(":", 1)[0], "id": a.split(":", 1)[1]} for a in anchors
            ]
        return doc

    def ask_fresh(
        self,
        query: str,
        right: str,
        stale: Sequence[str] = (),
        request: dict[str, Any] | None = None,
        forbidden: Sequence[str] = (),
    ) -> None:
        """The case's question: ``right`` must rank first, ``stale`` below it, ``forbidden``
        never be returned."""
        self.questions.append(
            Question(
                f"fresh-{self.family}-{self.index}-{self.lang}",
                self.tenant,
                query,
                self.family,
                frozenset([right]),
                request or {},
                frozenset(forbidden),
                frozenset(stale),
            )
        )


def new_case(kind: str, index: int, now: datetime, rng: random.Random) -> FreshCase:
    return FreshCase(kind, index, f"fresh-{kind}-{index}", now, rng)
