"""A question that names a past period is answered with what was valid then, on the real read
path (Postgres, Qdrant Edge, Redis, the bundled model): a price memory with four versions asked
about each past month in English and Chinese gets the version valid in that month; a question
naming no period gets today's; a memory with one version (a purchase) is never hidden by a period.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstream.ops.local import LocalMemstream
from memstream.services.domain.timespans import MONTHS
from memstream.services.settings import Settings

PRICES = ("$89", "$99", "$109", "$119")


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def month_start(now: datetime, back: int) -> datetime:
    months = now.year * 12 + now.month - 1 - back
    return datetime(months // 12, months % 12 + 1, 1, tzinfo=UTC)


def english(moment: datetime) -> str:
    return f"{MONTHS[moment.month - 1].title()} {moment.year}"


@pytest.fixture
def world(
    pg_dsn: str, tmp_path: Path
) -> Iterator[tuple[LocalMemstream, Clock, str, list[datetime]]]:
    """Four prices of the X1, set on the 10th of months 8, 6, 4 and 2 back; one purchase of
    the user in each of those months; the clock at the real now (events are checked against
    it)."""
    now = datetime.now(UTC).replace(microsecond=0)
    clock = Clock(now)
    tenant = f"period-{uuid.uuid4().hex[:10]}"
    set_on = [month_start(now, back) + timedelta(days=9) for back in (8, 6, 4, 2)]
    events: list[dict[str, Any]] = []
    for n, (when, price) in enumerate(zip(set_on, PRICES, strict=True)):
        events.append(
            {
                "event_id": f"price-{n}",
                "tenant_id": tenant,
                "memory_key": "price:X1",
                "entity_type": "product",
                "entity_id": "X1",
                "fact_type": "price",
                "content": f"The X1 blender costs {price}.",
                "source_system": "erp",
                "occurred_at": when.isoformat(),
            }
        )
    for n, (when, item) in enumerate(
        zip(set_on, ("a kettle", "a toaster", "a rice cooker", "a juicer"), strict=True)
    ):
        events.append(
            {
                "event_id": f"order-{n}",
                "tenant_id": tenant,
                "entity_type": "order",
                "entity_id": f"O-{n}",
                "entities": [{"type": "customer", "id": "u1"}],
                "fact_type": "purchase",
                "content": f"Customer u1 bought {item}.",
                "source_system": "shop",
                "occurred_at": (when + timedelta(days=3)).isoformat(),
            }
        )
    later = {  # a memory that began after the first months asked about, then changed
        "tenant_id": tenant,
        "memory_key": "price:X2",
        "entity_type": "product",
        "entity_id": "X2",
        "fact_type": "price",
        "source_system": "erp",
    }
    events += [
        {**later, "event_id": "x2-0", "content": "The X2 grinder costs $40.",
         "occurred_at": set_on[2].isoformat()},
        {**later, "event_id": "x2-1", "content": "The X2 grinder costs $45.",
         "occurred_at": set_on[3].isoformat()},
    ]  # fmt: skip
    promo = {**later, "memory_key": "promo:X1", "entity_id": "X1", "fact_type": "promotion"}
    events += [
        {**promo, "event_id": "promo-0", "content": "The X1 blender is on a 2-for-1 promotion.",
         "occurred_at": set_on[0].isoformat()},
        {**promo, "event_id": "promo-1", "op": "RETRACT", "content": "",
         "occurred_at": set_on[1].isoformat()},
    ]  # fmt: skip
    settings = Settings(
        data_dir=tmp_path, postgres_dsn=pg_dsn, redis_url="redis://127.0.0.1:6379/0"
    )

    async def start() -> LocalMemstream:
        local = await LocalMemstream.start(settings, clock=clock)
        report = await local.ingest(events)
        assert not report.dead, report.dead
        return local

    loop = asyncio.new_event_loop()
    local = loop.run_until_complete(start())
    local.loop = loop  # type: ignore[attr-defined]  # every request runs on the loop it started on
    try:
        yield local, clock, tenant, set_on
    finally:
        loop.run_until_complete(local.stop())
        loop.close()


def ask(local: LocalMemstream, tenant: str, query: str, **extra: Any) -> dict[str, Any]:
    request = {"request_id": uuid.uuid4().hex, "tenant_id": tenant, "query": query}
    loop: asyncio.AbstractEventLoop = local.loop  # type: ignore[attr-defined]
    reply = loop.run_until_complete(local.retrieve({**request, "force": True, "limit": 5, **extra}))
    assert reply["status"] == "ok", reply
    return reply


def price(reply: dict[str, Any]) -> str:
    top = [r for r in reply["results"] if r["memory_key"] == "price:X1"]
    assert top, reply["results"]
    return next(p for p in PRICES if p in top[0]["content"])


def test_each_past_month_gets_the_price_valid_then_in_english_and_chinese(
    world: tuple[LocalMemstream, Clock, str, list[datetime]],
) -> None:
    local, _, tenant, set_on = world
    for when, expected in zip(set_on, PRICES, strict=True):
        for query in (
            f"What was the price of the X1 blender in {english(when)}?",
            f"what did the X1 blender cost in {MONTHS[when.month - 1]} {when.year}",
            f"X1 blender 在{when.year}年{when.month}月的价格是多少？",
            f"X1 blender {when.month}月的价格是多少？",  # no year: the most recent such month
        ):
            reply = ask(local, tenant, query)
            assert price(reply) == expected, (query, reply["gate"])
            assert f"period: {english(when)}" in reply["gate"]["reason"], reply["gate"]
        # The month after a change and before the next keeps the price set before it.
        between = month_start(when, -1)
        reply = ask(local, tenant, f"What was the X1 blender's price in {english(between)}?")
        assert price(reply) == expected


def test_no_period_gets_the_current_price_and_an_explicit_as_of_wins(
    world: tuple[LocalMemstream, Clock, str, list[datetime]],
) -> None:
    local, _, tenant, set_on = world
    for query in ("What is the price of the X1 blender?", "X1 blender 多少钱？"):
        reply = ask(local, tenant, query)
        assert price(reply) == PRICES[-1]
        assert "period:" not in reply["gate"]["reason"]
    # What the agent set is not overridden by what the question says.
    reply = ask(
        local,
        tenant,
        f"What was the price of the X1 blender in {english(set_on[0])}?",
        as_of=(set_on[2] + timedelta(days=1)).isoformat(),
    )
    assert price(reply) == PRICES[2]
    assert "period:" not in reply["gate"]["reason"]


def test_a_relative_period_moves_with_the_clock_and_the_cache_follows(
    world: tuple[LocalMemstream, Clock, str, list[datetime]],
) -> None:
    local, clock, tenant, _ = world
    query = "What was the price of the X1 blender two months ago?"
    assert price(ask(local, tenant, query)) == PRICES[3]
    assert price(ask(local, tenant, "X1 blender 两个月前的价格")) == PRICES[3]
    # Asked two months earlier, "two months ago" is another month: the reply cached for the
    # same words is not reused.
    clock.now = month_start(clock.now, 2) + timedelta(days=14)
    reply = ask(local, tenant, query)
    assert price(reply) == PRICES[2]
    assert f"period: {english(month_start(clock.now, 2))}" in reply["gate"]["reason"]


def test_a_month_finds_its_purchases_and_what_was_said_about_it_later(
    world: tuple[LocalMemstream, Clock, str, list[datetime]],
) -> None:
    """A memory with one version is not hidden by a period: the month's purchase is found,
    and so are those made after it (an account given after a period can be about it)."""
    local, _, tenant, set_on = world
    items = ("a kettle", "a toaster", "a rice cooker", "a juicer")
    for when, item in zip(set_on, items, strict=True):
        for query in (
            f"What did I buy in {english(when)}?",
            f"我{when.year}年{when.month}月买了什么？",
        ):
            reply = ask(local, tenant, query, user_id="u1", limit=10)
            bought = [r["content"] for r in reply["results"] if r["fact_type"] == "purchase"]
            assert any(item in b for b in bought), (query, bought)
            assert len(bought) == len(items), (query, bought)


def test_a_memory_that_began_later_stays_and_one_retracted_by_then_does_not(
    world: tuple[LocalMemstream, Clock, str, list[datetime]],
) -> None:
    local, _, tenant, set_on = world
    early = english(set_on[0])
    reply = ask(local, tenant, f"What was the price of the X2 grinder in {early}?")
    x2 = [r for r in reply["results"] if r["memory_key"] == "price:X2"]
    assert x2 and "$45" in x2[0]["content"]  # no version then: the memory as it is now
    promo = f"Was there a promotion on the X1 blender in {english(set_on[0])}?"
    assert "promo:X1" in [r["memory_key"] for r in ask(local, tenant, promo)["results"]]
    retracted = f"Was there a promotion on the X1 blender in {english(set_on[2])}?"
    assert "promo:X1" not in [r["memory_key"] for r in ask(local, tenant, retracted)["results"]]
