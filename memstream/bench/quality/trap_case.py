"""Building blocks of the trap suite: word pools, fact tables and the per-instance builder.

``TrapCase`` collects one instance's events (in its tenant, or a twin tenant) and its question;
``traps`` holds the families that use it. Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality.suite import Question, doc_id

DAY = timedelta(days=1)
ITEMS = [
    "headphones",
    "phone",
    "trail shoes",
    "coffee grinder",
    "standing desk",
    "rain jacket",
    "smart watch",
    "espresso machine",
    "backpack",
    "monitor",
    "blender",
    "e-reader",
]
COLOURS = ["red", "black", "blue", "white", "green", "silver", "grey", "yellow"]
PREFIXES = ["XR", "ZX", "NV", "AX", "PL", "VT", "EC", "TR", "QS", "MK"]
FILLERS = [
    ("preference", "crm", "Prefers to be contacted by email rather than by phone."),
    ("profile", "crm", "Loyalty tier: gold, member since 2019."),
    ("note", "crm", "Newsletter subscription confirmed for the German edition."),
    ("preference", "crm", "Preferred delivery slot: weekday evenings."),
    ("note", "support_chat", "Asked how to reset the account password; a reset link was sent."),
    ("note", "crm", "Gift wrapping requested for birthday orders."),
]


def model_name(rng: random.Random, avoid: set[str]) -> str:
    while True:
        name = f"{rng.choice(PREFIXES)}-{rng.randrange(100, 990, 10)}"
        if name not in avoid:
            avoid.add(name)
            return name


def customer_id(rng: random.Random, avoid: set[str]) -> str:
    while True:
        name = f"C-{rng.randint(1000, 9999)}"
        if name not in avoid:
            avoid.add(name)
            return name


class TrapCase:
    """One instance: its tenant's events and its question, built with the helpers below."""

    def __init__(self, family: str, index: int, tenant: str, now: datetime) -> None:
        self.family, self.index, self.tenant, self.now = family, index, tenant, now
        self.events: list[dict[str, Any]] = []
        self.late: list[dict[str, Any]] = []
        self.questions: list[Question] = []
        self.used: set[str] = set()

    def add(
        self,
        key: str,
        content: str,
        ago: timedelta,
        entity: str,
        fact: str,
        source: str,
        *,
        status: str = "active",
        op: str = "UPSERT",
        attributes: dict[str, str] | None = None,
        late: bool = False,
        tenant: str | None = None,
    ) -> str:
        """Add one event; returns its document id."""
        tenant = tenant or self.tenant
        entity_type, entity_id = entity.split(":", 1)
        event_id = f"{key}#{len(self.events) + len(self.late)}"
        event: dict[str, Any] = {
            "event_id": event_id,
            "tenant_id": tenant,
            "memory_key": key,
            "entity_type": entity_type,
            "entity_id": entity_id,
            "fact_type": fact,
            "content": content,
            "source_system": source,
            "status": status,
            "op": op,
            "occurred_at": (self.now - ago).isoformat(),
            "attributes": attributes or {},
        }
        (self.late if late else self.events).append(event)
        return doc_id(tenant, event_id)

    def fillers(self, rng: random.Random, customer: str, count: int = 2) -> None:
        for n, (fact, source, text) in enumerate(rng.sample(FILLERS, count)):
            self.add(
                f"filler:{customer}:{n}",
                text,
                rng.randint(5, 300) * DAY,
                f"customer:{customer}",
                fact,
                source,
            )

    def ask(
        self,
        query: str,
        right: list[str],
        request: dict[str, Any] | None = None,
        forbidden: Sequence[str] = (),
    ) -> None:
        self.questions.append(
            Question(
                f"{self.family}-{self.index}",
                self.tenant,
                query,
                self.family,
                frozenset(right),
                request or {},
                frozenset(forbidden),
            )
        )


# (aspect, values, content, queries; {q} is one of the values, possibly a superseded one)
SPECS = [
    (
        "charging port",
        ["micro-USB", "USB-C", "Lightning"],
        "The {m} {item} charges over {v}.",
        ["does the {m} charge over {q}?", "what charging port does the {m} have?"],
    ),
    (
        "battery life",
        ["8", "10", "12", "15", "20"],
        "{m} {item} battery life: up to {v} hours.",
        ["how long does the {m} battery last?", "does the {m} battery last {q} hours?"],
    ),
    (
        "warranty",
        ["1", "2", "3", "5"],
        "The {m} {item} comes with a {v}-year warranty.",
        ["how long is the warranty on the {m}?", "is the {m} covered by a {q}-year warranty?"],
    ),
    (
        "weight",
        ["180", "210", "245", "300"],
        "The {m} {item} weighs {v} grams.",
        ["how heavy is the {m}?", "does the {m} weigh {q} grams?"],
    ),
    (
        "water resistance",
        ["IP54", "IP67", "IP68"],
        "The {m} {item} is rated {v} for water resistance.",
        ["what is the water resistance rating of the {m}?", "is the {m} rated {q}?"],
    ),
]


FEATURES = [
    ("wireless charging", "charge it with the USB-C cable"),
    ("a headphone jack", "use the USB-C audio adapter"),
    ("5G", "it supports 4G LTE only"),
    ("dual SIM", "it takes one nano-SIM"),
    ("expandable storage", "storage is fixed at 128 GB"),
    ("fast charging at 65 W", "it charges at up to 25 W"),
]


COMPLAINTS = [
    "my order arrived late",
    "the parcel arrived damaged",
    "I was charged twice",
    "the wrong size was delivered",
    "the invoice is missing",
    "the courier left the parcel outside",
]


CLAIMS = [  # (official, claim, query), {v} official value, {w} claimed value
    (
        "{m} battery life: up to {v} hours.",
        "the {m} battery lasts {w} hours easily",
        "how long does the {m} battery last?",
        (8, 14),
        (18, 30),
    ),
    (
        "{m} storage: {v} GB, not expandable.",
        "the {m} has {w} GB of storage",
        "how much storage does the {m} have?",
        (64, 128),
        (256, 512),
    ),
    (
        "{m} charging: up to {v} W.",
        "the {m} charges at {w} W",
        "how fast does the {m} charge?",
        (18, 30),
        (45, 100),
    ),
    (
        "{m} is splash resistant only ({v} m), not for swimming.",
        "the {m} is fine for swimming down to {w} m",
        "can I swim with the {m}?",
        (0, 1),
        (10, 50),
    ),
]


ORDERS = [
    ("coffee", "coffee grinder", "coffee kettle"),
    ("running", "trail shoes", "running socks"),
    ("office", "desk lamp", "standing desk"),
    ("hiking", "rain jacket", "hiking boots"),
    ("phone", "phone case", "phone charger"),
    ("kitchen", "blender", "toaster"),
]
