"""The trap suite: seeded, parametrised families of the questions that fool plain vector stores.

Every family builds several instances, each in its own tenant, with different entities and
wording drawn from a seeded ``random.Random`` (same seed, same suite). Each instance holds the
trap itself, unrelated filler memories, and one question whose right answer is known:

- ``wrong_entity``: two customers with near-identical records; asked as one of them;
- ``superseded``: a spec with 2-3 versions (the query may quote an old value): newest wins;
- ``as_of``: the same chains, asked "as of" a past moment: the version valid then;
- ``retraction``: a retracted forum post vs the official document: the post is never returned;
- ``decay``: an old vs a recent memory of a short-half-life fact type: the recent one;
- ``resolved_open``: an older resolved complaint vs a newer open one: the open one;
- ``authority``: a recent review or forum claim vs the official spec: the spec;
- ``exact_attributes``: SKUs differing in model or colour: the one with both;
- ``time_window``: two similar orders; the window holds one: that one;
- ``isolation``: identical data in a twin tenant: nothing from the twin may be returned.

The memstream request carries what the agent knows (the customer it serves, as_of, the time
window); the baselines get the query text, in the question's tenant. Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality.suite import Suite
from memstream.bench.quality.trap_case import (
    CLAIMS,
    COLOURS,
    COMPLAINTS,
    DAY,
    FEATURES,
    ITEMS,
    ORDERS,
    SPECS,
    TrapCase,
    customer_id,
    model_name,
)


def wrong_entity(rng: random.Random, case: TrapCase) -> None:
    a, b = customer_id(rng, case.used), customer_id(rng, case.used)
    m, item, colour = model_name(rng, case.used), rng.choice(ITEMS), rng.choice(COLOURS)
    shapes = [
        (
            "return",
            "erp",
            f"Customer returned the {colour} {m} {item}; refund of "
            f"{rng.randint(20, 400)} EUR issued.",
            f"Customer returned {colour} {m} {item}, refund issued.",
            [f"what {item} did I return?", f"did I get a refund for the {item}?"],
        ),
        (
            "order",
            "erp",
            f"Ordered the {colour} {m} {item}; delivery expected in {rng.randint(2, 9)} days.",
            f"Order placed: {colour} {m} {item}, delivery in {rng.randint(2, 9)} days.",
            [f"when will my {item} arrive?", f"which {item} did I order?"],
        ),
        (
            "subscription",
            "billing",
            f"Subscribed to the {rng.choice(['Plus', 'Pro'])} plan at "
            f"{rng.randint(5, 15)} EUR per month.",
            f"Subscribed to the {rng.choice(['Basic', 'Max'])} "
            f"plan at {rng.randint(16, 30)} EUR per month.",
            ["which plan am I subscribed to?", "how much is my monthly plan?"],
        ),
        (
            "address",
            "crm",
            f"Delivery address changed to Lindenstrasse {rng.randint(1, 90)}, Berlin.",
            f"Delivery address changed to Lindenstraße {rng.randint(1, 90)}, Bremen.",
            ["what is my delivery address?", "where do my parcels go?"],
        ),
    ]
    fact, source, first, second, queries = rng.choice(shapes)
    mine, theirs = (first, second) if rng.random() < 0.5 else (second, first)
    right = case.add(f"{fact}:{a}", mine, rng.randint(2, 40) * DAY, f"customer:{a}", fact, source)
    case.add(f"{fact}:{b}", theirs, rng.randint(1, 40) * DAY, f"customer:{b}", fact, source)
    case.fillers(rng, a)
    case.fillers(rng, b)
    case.ask(rng.choice(queries), [right], {"user_id": a})


def _spec_chain(
    rng: random.Random, case: TrapCase
) -> tuple[str, str, str, list[str], list[datetime]]:
    """A product spec with 2-3 versions (+ another product's spec); returns (model, aspect, a
    query about the current value, version doc ids oldest first, their valid_from)."""
    aspect, values, content, queries = rng.choice(SPECS)
    m, other, item = model_name(rng, case.used), model_name(rng, case.used), rng.choice(ITEMS)
    chosen = rng.sample(values, rng.choice([2, 3]))
    ages = sorted(
        (rng.randint(lo, hi) * DAY for lo, hi in ((500, 700), (200, 400), (10, 60))), reverse=True
    )[-len(chosen) :]
    ids = [
        case.add(
            f"spec:{m}",
            content.format(m=m, item=item, v=v),
            age,
            f"product:{m}",
            "product_spec",
            "catalog",
        )
        for v, age in zip(chosen, ages, strict=True)
    ]
    case.add(
        f"spec:{other}",
        content.format(m=other, item=item, v=rng.choice(values)),
        rng.randint(20, 300) * DAY,
        f"product:{other}",
        "product_spec",
        "catalog",
    )
    case.add(
        "faq:shipping",
        "Standard shipping takes 2-4 working days.",
        90 * DAY,
        "policy:shipping",
        "policy",
        "official",
    )
    query = rng.choice(queries).format(m=m, q=rng.choice(chosen))
    return m, aspect, query, ids, [case.now - age for age in ages]


def superseded(rng: random.Random, case: TrapCase) -> None:
    _, _, query, ids, _ = _spec_chain(rng, case)
    case.ask(query, [ids[-1]])


def as_of(rng: random.Random, case: TrapCase) -> None:
    m, aspect, _, ids, starts = _spec_chain(rng, case)
    target = rng.randrange(len(ids) - 1)
    moment = starts[target] + (starts[target + 1] - starts[target]) / 2
    query = f"what was the {aspect} of the {m} in {moment:%B %Y}?"
    case.ask(query, [ids[target]], {"as_of": moment.isoformat()})


def retraction(rng: random.Random, case: TrapCase) -> None:
    m, item = model_name(rng, case.used), rng.choice(ITEMS)
    feature, alternative = rng.choice(FEATURES)
    claim = rng.choice(
        ["The {m} has {f} built in, I tried it!", "Confirmed: my {m} supports {f}, works great."]
    ).format(m=m, f=feature)
    post_age = rng.randint(6, 30) * DAY
    post = case.add(f"forum:{m}", claim, post_age, f"product:{m}", "forum_post", "forum")
    case.add(
        f"forum:{m}",
        "",
        post_age - 3 * DAY,
        f"product:{m}",
        "forum_post",
        "forum",
        op="RETRACT",
        late=True,
    )
    doc = case.add(
        f"doc:{m}-manual",
        f"{m} manual: the {m} {item} does not support {feature}; {alternative}.",
        rng.randint(40, 200) * DAY,
        f"product:{m}",
        "official_doc",
        "official",
    )
    case.add(
        f"forum:{m}:colours",
        f"Anyone know if the {m} comes in green?",
        12 * DAY,
        f"product:{m}",
        "forum_post",
        "forum",
    )
    query = rng.choice(["does the {m} have {f}?", "does the {m} support {f}?"])
    case.ask(query.format(m=m, f=feature), [doc], forbidden=[post])


def decay(rng: random.Random, case: TrapCase) -> None:
    c = customer_id(rng, case.used)
    m1, m2, item = model_name(rng, case.used), model_name(rng, case.used), rng.choice(ITEMS)
    c1, c2 = rng.sample(COLOURS, 2)
    shape = rng.choice(["page_view", "browsing", "inventory", "price"])
    request: dict[str, Any] = {}
    if shape in ("page_view", "browsing"):
        verb = "Viewed the" if shape == "page_view" else "Browsed the"
        old = (f"{verb} {c1} {m1} {item} product page.", rng.randint(900, 1200) * DAY)
        new = (f"{verb} {c2} {m2} {item} product page.", rng.randint(1, 10) * DAY)
        entity, source, request = f"customer:{c}", "clickstream", {"user_id": c}
        query = rng.choice([f"which {item} was I looking at?", f"what {item} did I check out?"])
        case.fillers(rng, c)
    elif shape == "inventory":
        old = (
            f"Central warehouse stock of the {m1}: {rng.randint(50, 300)} units.",
            rng.randint(3, 10) * DAY,
        )
        new = (
            f"Central warehouse stock of the {m1}: {rng.randint(0, 40)} units.",
            timedelta(hours=rng.randint(1, 3)),
        )
        entity, source = f"product:{m1}", "erp"
        query = rng.choice([f"how many {m1} units are in stock?", f"is the {m1} in stock?"])
    else:
        old = (
            f"Price quote for the {m1} {item}: {rng.randint(300, 600)} EUR.",
            rng.randint(300, 500) * DAY,
        )
        new = (
            f"Price quote for the {m1} {item}: {rng.randint(100, 299)} EUR.",
            rng.randint(1, 5) * DAY,
        )
        entity, source = f"product:{m1}", "erp"
        query = rng.choice([f"how much does the {m1} cost?", f"what is the price of the {m1}?"])
    case.add(f"{shape}:old", old[0], old[1], entity, shape, source)
    right = case.add(f"{shape}:new", new[0], new[1], entity, shape, source)
    case.ask(query, [right], request)


def resolved_open(rng: random.Random, case: TrapCase) -> None:
    c = customer_id(rng, case.used)
    done, live = rng.sample(COMPLAINTS, 2)
    remedy = rng.choice(["voucher", "refund", "replacement", "apology"])
    case.add(
        "complaint:1",
        f"Complaint: {done}. Status: resolved with a {remedy}.",
        rng.randint(30, 90) * DAY,
        f"customer:{c}",
        "complaint",
        "ticketing",
        status="resolved",
    )
    right = case.add(
        "complaint:2",
        f"Complaint: {live}, waiting for an answer from the team.",
        rng.randint(2, 6) * DAY,
        f"customer:{c}",
        "complaint",
        "ticketing",
        status="pending",
    )
    case.fillers(rng, c)
    query = rng.choice(
        [
            "what is the status of my complaint?",
            "is my complaint still open?",
            "any news on my complaint?",
        ]
    )
    case.ask(query, [right], {"user_id": c})


def authority(rng: random.Random, case: TrapCase) -> None:
    m = model_name(rng, case.used)
    official, claim, query, (lo, hi), (wlo, whi) = rng.choice(CLAIMS)
    right = case.add(
        f"spec:{m}",
        official.format(m=m, v=rng.randint(lo, hi)),
        rng.randint(60, 200) * DAY,
        f"product:{m}",
        "product_spec",
        "catalog",
    )
    said = claim.format(m=m, w=rng.randint(wlo, whi))
    if rng.random() < 0.5:
        case.add(
            "review:1",
            f"Great product, {said}!",
            rng.randint(2, 10) * DAY,
            f"product:{m}",
            "review",
            "user_review",
        )
    else:
        case.add(
            "forum:1",
            f"Pretty sure {said}, mine does.",
            rng.randint(2, 10) * DAY,
            f"product:{m}",
            "forum_post",
            "forum",
        )
    case.ask(query.format(m=m), [right])


def exact_attributes(rng: random.Random, case: TrapCase) -> None:
    m1, m2, item = model_name(rng, case.used), model_name(rng, case.used), rng.choice(ITEMS)
    c1, c2 = rng.sample(COLOURS, 2)
    port = rng.choice(["USB-C", "Lightning"])
    skus = [(m1, c1), (m2, c2), (m2, c1), *([(m1, c2)] if rng.random() < 0.5 else [])]
    rng.shuffle(skus)
    ids = {}
    for m, colour in skus:
        text = rng.choice(
            ["{m} wireless {item}, colour {c}, {p} port.", "{m} {item} in {c}, {p}."]
        ).format(m=m, item=item, c=colour, p=port)
        ids[(m, colour)] = case.add(
            f"sku:{m}-{colour}",
            text,
            30 * DAY,
            f"product:{m}",
            "product_spec",
            "catalog",
            attributes={"model": m, "colour": colour},
        )
    query = rng.choice(["{m} in {c} with {p}", "do you have the {m} in {c}?", "{c} {m} {item}"])
    case.ask(query.format(m=m2, c=c1, p=port, item=item), [ids[(m2, c1)]])


def time_window(rng: random.Random, case: TrapCase) -> None:
    c = customer_id(rng, case.used)
    topic, first, second = rng.choice(ORDERS)
    ages = [rng.randint(200, 300) * DAY, rng.randint(110, 180) * DAY]
    ids = [
        case.add(f"order:{n}", f"Ordered a {name}.", age, f"customer:{c}", "order", "erp")
        for n, (name, age) in enumerate(zip((first, second), ages, strict=True))
    ]
    case.fillers(rng, c)
    target = rng.randrange(2)
    at = case.now - ages[target]
    window = {"from": (at - 10 * DAY).isoformat(), "to": (at + 10 * DAY).isoformat()}
    query = rng.choice([f"what {topic} things did I order?", f"which {topic} item did I buy?"])
    case.ask(query, [ids[target]], {"user_id": c, "context": {"time_window": window}})


def isolation(rng: random.Random, case: TrapCase) -> None:
    twin = f"{case.tenant}-twin"
    c, item, m = customer_id(rng, case.used), rng.choice(ITEMS), model_name(rng, case.used)
    records = [
        ("return", "erp", f"Customer returned the {m} {item}; refund issued."),
        ("order", "erp", f"Ordered a second {m} {item} as a gift."),
        ("complaint", "ticketing", f"Complaint: the {m} {item} arrived scratched."),
    ]
    pick = rng.randrange(len(records))
    right, banned = "", []
    for n, (fact, source, text) in enumerate(records):
        age = (n + 3) * DAY
        mine = case.add(f"{fact}:{c}", text, age, f"customer:{c}", fact, source)
        banned.append(
            case.add(f"{fact}:{c}", text, age, f"customer:{c}", fact, source, tenant=twin)
        )
        right = mine if n == pick else right
    query = [
        f"did I get my refund for the {item}?",
        "what did I order as a gift?",
        f"what was wrong with my {item}?",
    ][pick]
    case.ask(query, [right], {"user_id": c}, forbidden=banned)


FAMILIES: dict[str, Callable[[random.Random, TrapCase], None]] = {
    "wrong_entity": wrong_entity,
    "superseded": superseded,
    "as_of": as_of,
    "retraction": retraction,
    "decay": decay,
    "resolved_open": resolved_open,
    "authority": authority,
    "exact_attributes": exact_attributes,
    "time_window": time_window,
    "isolation": isolation,
}


def trap_suite(per_family: int, now: datetime, seed: int = 7, prefix: str = "trap") -> Suite:
    """``per_family`` instances of every family, each in its own tenant ``prefix-family-i``."""
    suite = Suite("traps", limit=5)
    for family, build in FAMILIES.items():
        rng = random.Random(f"{seed}:{family}")  # noqa: S311 - benchmark data, not crypto
        for index in range(per_family):
            case = TrapCase(family, index, f"{prefix}-{family}-{index}", now)
            build(rng, case)
            suite.events.extend(case.events)
            suite.late.extend(case.late)
            suite.questions.extend(case.questions)
    suite.notes.append(
        f"{per_family} instances per family, seed {seed}; wrong = top answer not right, or a "
        "forbidden memory (retracted, other tenant) anywhere in the top 5"
    )
    return suite
