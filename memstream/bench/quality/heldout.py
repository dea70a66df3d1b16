"""The held-out trap suite: a second generator, written apart from ``traps`` and never tuned on.

Other vocabulary (home appliances, travel, subscriptions), other entity types (``user``,
``plan``, ``appliance``, ``trip``), other templates and distractors: catalogue, FAQ and policy
pages that share words with personal questions, several users with near-identical histories,
questions and memories in Chinese. A fixed seed (``HELDOUT_SEED``), not the bench's ``--seed``:
the suite must not move with the tuning knobs. Kinds:

- ``looked_at``: the user's own view of one appliance vs fresh catalogue/FAQ pages of its kind;
- ``lookalike_users``: three users on similar plans, asked as one of them;
- ``moved``: a delivery address updated twice: the newest;
- ``plan_then``: a plan changed over time, asked "as of" inside an older period;
- ``withdrawn``: a retracted community tip vs the manual: the tip is never returned;
- ``old_chat``: a support chat two years old vs one from last week, same user and kind;
- ``open_case``: a closed case vs a newer open one;
- ``manual_vs_review``: a recent review's claim vs the manual;
- ``trip_window``: two trips, the time window holds one;
- ``zh_looked_at``: ``looked_at`` in Chinese, with Chinese catalogue pages;
- ``twin``: the same records in a twin tenant: nothing from the twin may be returned.
Pure: ``now`` is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime

from memstream.bench.quality.suite import Suite
from memstream.bench.quality.trap_case import DAY, TrapCase

HELDOUT_SEED = 20261203

APPLIANCES = ("air fryer", "dehumidifier", "robot vacuum", "espresso machine", "kettle", "toaster")
BRANDS = ("Norvik", "Halden", "Quorra", "Belmont", "Tavi", "Ostra", "Lumo", "Kestrel")
PLANS = ("Basic", "Plus", "Family", "Pro", "Student", "Premium")
CITIES = ("Lisbon", "Oslo", "Kyoto", "Denver", "Cape Town", "Hanoi", "Porto", "Quebec")
STREETS = ("Elm Road", "Harbour Lane", "Mill Street", "Birch Avenue", "Canal Walk", "Hill Close")
ZH_KINDS = ("空气净化器", "电饭煲", "扫地机器人", "加湿器")
ZH_BRANDS = ("海风", "青禾", "云杉", "北辰", "星野")


def _user(rng: random.Random, case: TrapCase) -> str:
    while True:
        name = f"u{rng.randint(10000, 99999)}"
        if name not in case.used:
            case.used.add(name)
            return name


def _model(rng: random.Random, case: TrapCase) -> str:
    while True:
        name = f"{rng.choice(BRANDS)} {rng.choice('ABCDEFGHJK')}{rng.randint(2, 9)}"
        if name not in case.used:
            case.used.add(name)
            return name


def looked_at(rng: random.Random, case: TrapCase) -> None:
    u, kind = _user(rng, case), rng.choice(APPLIANCES)
    mine = _model(rng, case)
    right = case.add(
        f"view:{u}",
        f"Opened the listing for the {mine} {kind} and read the reviews.",
        rng.randint(10, 40) * DAY,
        f"user:{u}",
        "page_view",
        "clickstream",
    )
    for n in range(3):
        other = _model(rng, case)
        case.add(
            f"catalogue:{other}",
            f"Catalogue listing: the {other} {kind}, our best-selling {kind} this season.",
            rng.randint(1, 5) * DAY,
            f"product:{other}",
            "product_spec",
            "catalog",
        )
        if n == 0:
            case.add(
                f"faq:{kind}",
                f"FAQ: which {kind} should I look at? Compare listings by size and noise level.",
                2 * DAY,
                f"page:faq-{kind.replace(' ', '-')}",
                "official_doc",
                "official",
            )
    query = rng.choice(
        [
            f"which {kind} did I have a look at?",
            f"the {kind} I was reading about, which one was it?",
        ]
    )
    case.ask(query, [right], {"user_id": u})


def lookalike_users(rng: random.Random, case: TrapCase) -> None:
    users = [_user(rng, case) for _ in range(3)]
    plans = rng.sample(PLANS, 3)
    ids = [
        case.add(
            f"plan:{u}",
            f"Subscription: {plan} plan at {rng.randint(5, 30)} EUR a month, renews monthly.",
            rng.randint(20, 60) * DAY,
            f"user:{u}",
            "subscription",
            "billing",
        )
        for u, plan in zip(users, plans, strict=True)
    ]
    case.add(
        "policy:plans",
        "Plans policy: Basic, Plus and Premium plans renew monthly unless cancelled.",
        3 * DAY,
        "page:plans-policy",
        "official_doc",
        "official",
    )
    pick = rng.randrange(3)
    query = rng.choice(["which plan am I subscribed to?", "what subscription do I have?"])
    case.ask(query, [ids[pick]], {"user_id": users[pick]})


def moved(rng: random.Random, case: TrapCase) -> None:
    u = _user(rng, case)
    streets = rng.sample(STREETS, 3)
    ages = sorted((rng.randint(100, 400) * DAY for _ in range(3)), reverse=True)
    ids = [
        case.add(
            f"address:{u}",
            f"Delivery address on file: {rng.randint(1, 99)} {street}.",
            age,
            f"user:{u}",
            "address",
            "crm",
        )
        for street, age in zip(streets, ages, strict=True)
    ]
    query = rng.choice(["where do my parcels get delivered?", "what address do you have for me?"])
    case.ask(query, [ids[-1]], {"user_id": u})


def plan_then(rng: random.Random, case: TrapCase) -> None:
    u = _user(rng, case)
    plans = rng.sample(PLANS, 3)
    ages = [rng.randint(500, 700) * DAY, rng.randint(250, 400) * DAY, rng.randint(20, 120) * DAY]
    ids = [
        case.add(
            f"plan:{u}", f"Moved to the {p} plan.", age, f"user:{u}", "subscription", "billing"
        )
        for p, age in zip(plans, ages, strict=True)
    ]
    target = rng.randrange(2)
    moment = case.now - (ages[target] + ages[target + 1]) / 2
    query = f"which plan was I on in {moment:%B %Y}?"
    case.ask(query, [ids[target]], {"user_id": u, "as_of": moment.isoformat()})


def withdrawn(rng: random.Random, case: TrapCase) -> None:
    m = _model(rng, case)
    kind, use = rng.choice(
        [("kettle", "heat milk"), ("air fryer", "bake bread"), ("toaster", "toast bagels")]
    )
    age = rng.randint(5, 20) * DAY
    tip = case.add(
        f"tip:{m}",
        f"Community tip: the {m} {kind} can {use}, works fine.",
        age,
        f"product:{m}",
        "forum_post",
        "forum",
    )
    case.add(
        f"tip:{m}",
        "",
        age - 2 * DAY,
        f"product:{m}",
        "forum_post",
        "forum",
        op="RETRACT",
        late=True,
    )
    manual = case.add(
        f"manual:{m}",
        f"{m} {kind} manual: do not use it to {use}.",
        rng.randint(60, 300) * DAY,
        f"product:{m}",
        "official_doc",
        "official",
    )
    case.ask(f"can the {m} {use}?", [manual], forbidden=[tip])


def old_chat(rng: random.Random, case: TrapCase) -> None:
    u = _user(rng, case)
    a, b = rng.sample(APPLIANCES, 2)
    case.add(
        f"chat:{u}:1",
        f"Support chat: asked how to descale the {a}.",
        rng.randint(650, 800) * DAY,
        f"user:{u}",
        "support_chat",
        "support_chat",
    )
    right = case.add(
        f"chat:{u}:2",
        f"Support chat: asked why the {b} makes a clicking noise.",
        rng.randint(2, 9) * DAY,
        f"user:{u}",
        "support_chat",
        "support_chat",
    )
    case.add(
        "faq:support",
        "Support FAQ: chat with us about any appliance, any time.",
        DAY,
        "page:support-faq",
        "official_doc",
        "official",
    )
    query = rng.choice(["what did I ask support about?", "what was my question to support?"])
    case.ask(query, [right], {"user_id": u})


def open_case(rng: random.Random, case: TrapCase) -> None:
    u = _user(rng, case)
    a, b = rng.sample(APPLIANCES, 2)
    case.add(
        f"case:{u}:1",
        f"Case: the {a} stopped working. Replaced, case closed.",
        rng.randint(40, 120) * DAY,
        f"user:{u}",
        "support_case",
        "ticketing",
        status="closed",
    )
    right = case.add(
        f"case:{u}:2",
        f"Case: the {b} display shows an error, awaiting parts.",
        rng.randint(3, 10) * DAY,
        f"user:{u}",
        "support_case",
        "ticketing",
        status="open",
    )
    query = rng.choice(["what's happening with my case?", "is my repair case still open?"])
    case.ask(query, [right], {"user_id": u})


def manual_vs_review(rng: random.Random, case: TrapCase) -> None:
    m = _model(rng, case)
    hours, claimed = rng.randint(40, 90), rng.randint(120, 200)
    right = case.add(
        f"manual:{m}",
        f"{m} robot vacuum manual: battery runs up to {hours} minutes.",
        rng.randint(100, 400) * DAY,
        f"product:{m}",
        "official_doc",
        "official",
    )
    case.add(
        f"review:{m}",
        f"Review: my {m} robot vacuum battery runs {claimed} minutes!",
        rng.randint(1, 6) * DAY,
        f"product:{m}",
        "review",
        "user_review",
    )
    case.ask(f"how long does the {m} battery run?", [right])


def trip_window(rng: random.Random, case: TrapCase) -> None:
    u = _user(rng, case)
    first, second = rng.sample(CITIES, 2)
    ages = [rng.randint(250, 330) * DAY, rng.randint(60, 150) * DAY]
    ids = [
        case.add(
            f"trip:{u}:{n}",
            f"Booked a trip to {city}, two nights, hotel included.",
            age,
            f"user:{u}",
            "booking",
            "erp",
        )
        for n, (city, age) in enumerate(zip((first, second), ages, strict=True))
    ]
    target = rng.randrange(2)
    at = case.now - ages[target]
    window = {"from": (at - 7 * DAY).isoformat(), "to": (at + 7 * DAY).isoformat()}
    case.ask(
        "where did I book a trip to?",
        [ids[target]],
        {"user_id": u, "context": {"time_window": window}},
    )


def zh_looked_at(rng: random.Random, case: TrapCase) -> None:
    u, kind = _user(rng, case), rng.choice(ZH_KINDS)
    models = [f"{rng.choice(ZH_BRANDS)}{rng.randint(100, 999)}" for _ in range(4)]
    right = case.add(
        f"view:{u}",
        f"浏览了{models[0]}{kind}的商品页面。",
        rng.randint(7, 30) * DAY,
        f"user:{u}",
        "page_view",
        "clickstream",
    )
    for other in models[1:]:
        case.add(
            f"catalogue:{other}",
            f"商品目录：{other}{kind}，本季热销{kind}。",
            rng.randint(1, 4) * DAY,
            f"product:{other}",
            "product_spec",
            "catalog",
        )
    query = rng.choice([f"我之前看的那款{kind}是哪个？", f"我上次浏览的{kind}是什么型号？"])
    case.ask(query, [right], {"user_id": u})


def twin(rng: random.Random, case: TrapCase) -> None:
    other = f"{case.tenant}-twin"
    u, kind = _user(rng, case), rng.choice(APPLIANCES)
    m = _model(rng, case)
    text = f"Delivered the {m} {kind} to the customer's door."
    right = case.add(f"delivery:{u}", text, 4 * DAY, f"user:{u}", "delivery", "erp")
    banned = case.add(f"delivery:{u}", text, 4 * DAY, f"user:{u}", "delivery", "erp", tenant=other)
    case.ask(f"was my {kind} delivered?", [right], {"user_id": u}, forbidden=[banned])


KINDS: dict[str, Callable[[random.Random, TrapCase], None]] = {
    "looked_at": looked_at,
    "lookalike_users": lookalike_users,
    "moved": moved,
    "plan_then": plan_then,
    "withdrawn": withdrawn,
    "old_chat": old_chat,
    "open_case": open_case,
    "manual_vs_review": manual_vs_review,
    "trip_window": trip_window,
    "zh_looked_at": zh_looked_at,
    "twin": twin,
}


def heldout_suite(per_kind: int, now: datetime) -> Suite:
    """``per_kind`` instances of every kind, each in its own tenant ``held-kind-i``."""
    suite = Suite("heldout", limit=5)
    for kind, build in KINDS.items():
        rng = random.Random(f"{HELDOUT_SEED}:{kind}")  # noqa: S311 - benchmark data
        for index in range(per_kind):
            case = TrapCase(kind, index, f"held-{kind.replace('_', '-')}-{index}", now)
            build(rng, case)
            suite.events.extend(case.events)
            suite.late.extend(case.late)
            suite.questions.extend(case.questions)
    suite.notes.append(
        f"{per_kind} instances per kind, fixed seed {HELDOUT_SEED}; wrong = top answer not "
        "right, or a forbidden memory (retracted, other tenant) anywhere in the top 5"
    )
    return suite
