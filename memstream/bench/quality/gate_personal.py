"""A held-out part of the gate set: terse questions about the asker's own records.

An agent sends its user's id with every turn, and users ask about their own records tersely
and in their own words ("parcel ETA?", "is the booking still on"), rarely with a cue word.
This set is written apart from the suites, after the gate's ``OWN_NEAR`` was set; its first
run showed that the bundled English encoder finds unrelated Chinese texts as similar as related
ones (``gating.similarity_speaks`` followed), so its Chinese questions are no longer held out. One
tenant of service records (shipments, exchanges, renewals, appointments, tickets, bills,
bookings, warranty claims, Chinese ones too), each user holding a few of them, and per record
two questions asked with that user's id — one that shares a word (its stem) with the record,
one that only means the same thing. Next to them, in the same tenant and with the same user
ids, questions that need no memory (general knowledge, small talk, instructions), also
written apart from ``gate_set``'s lists. Pure: seeded, no I/O.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from memstream.bench.quality.gate_set import GateQuestion

TENANT = "gate-personal-records"
SUITE = "personal records"
OWN_WORD = "own record, shared word"
OWN_MEANING = "own record, meaning only"
NOT_MEMORY = "personal tenant, not about memory"

# (fact_type, content, question sharing a word, question by meaning only)
RECORDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "shipment",
        "Shipment {ref} handed to the courier; expected drop-off Thursday afternoon.",
        "courier drop-off time?",
        "when will the package get here",
    ),
    (
        "exchange",
        "Exchange {ref}: the jacket in size M was swapped for size L after a fit complaint.",
        "why the swap?",
        "which size did they send instead",
    ),
    (
        "subscription",
        "Premium plan renews automatically on the 3rd of next month at 12.99 EUR.",
        "plan renewal date",
        "how much will I be charged next",
    ),
    (
        "appointment",
        "Technician visit booked for Monday 9:00-11:00 to install the dishwasher.",
        "technician visit window?",
        "what time is the installer coming",
    ),
    (
        "ticket",
        "Support ticket {ref}: router drops the connection every evening; waiting for a new unit.",
        "router ticket update",
        "any news on the internet problem",
    ),
    (
        "invoice",
        "Invoice {ref} for 84.50 EUR is due on the 15th; payment by bank transfer.",
        "invoice amount?",
        "how much do I owe and by when",
    ),
    (
        "booking",
        "Table for four reserved at the harbour restaurant, Saturday 19:30.",
        "restaurant reservation details",
        "where are we eating this weekend",
    ),
    (
        "warranty",
        "Warranty claim {ref} for the vacuum cleaner accepted; replacement motor on order.",
        "vacuum claim outcome?",
        "will they fix the hoover",
    ),
    (
        "address",
        "Billing address changed to 14 Linden Street, Leeds.",
        "billing address on file?",
        "where do the bills go",
    ),
    (
        "loyalty",
        "Loyalty balance: 2,340 points, enough for a free hotel night.",
        "loyalty points balance",
        "can I get a free night yet",
    ),
    (
        "refill",
        "Prescription refill for the allergy tablets ready for pickup at the pharmacy.",
        "allergy tablets ready?",
        "can I collect the medicine",
    ),
    (
        "shipment",
        "订单{ref}的包裹已交给快递，预计周五送达。",
        "包裹什么时候送达",
        "东西哪天能到",
    ),
    (
        "exchange",
        "换货申请{ref}：蓝牙音箱有杂音，已寄出新的音箱。",
        "音箱换货进度",
        "新的那台寄了没",
    ),
)

GENERAL = (
    "How many moons does Mars have?",
    "What is the boiling point of olive oil?",
    "Who wrote War and Peace?",
    "Why do leaves change colour in autumn?",
    "What is the capital of Portugal?",
    "How tall is the Eiffel Tower?",
    "What does GDP measure?",
    "How do bees make honey?",
    "什么是光合作用？",
    "地球到太阳有多远？",
)
SMALL_TALK = ("hello again", "thanks, that helps", "morning!", "ok cool", "谢谢你")
INSTRUCTIONS = (
    "Write a two-line rhyme about rain",
    "Translate 'good luck' into Italian",
    "Summarise that in three bullet points",
    "Answer more briefly please",
    "用英文再说一遍",
)

USERS = 14
RECORDS_PER_USER = 3


def personal_set(now: datetime, seed: int = 23) -> tuple[list[dict[str, Any]], list[GateQuestion]]:
    """The tenant's events (each user a few records) and the labelled questions."""
    rng = random.Random(f"gate-personal:{seed}")  # noqa: S311 - benchmark data, not crypto
    events: list[dict[str, Any]] = []
    questions: list[GateQuestion] = []
    for u in range(USERS):
        user = f"U-{rng.randint(10000, 99999)}-{u}"
        for n, (fact_type, content, by_word, by_meaning) in enumerate(
            rng.sample(RECORDS, RECORDS_PER_USER)
        ):
            ref = f"R{rng.randint(100000, 999999)}"
            events.append(
                {
                    "event_id": f"{user}:{n}",
                    "tenant_id": TENANT,
                    "memory_key": f"{user}|{fact_type}|{n}",
                    "entity_type": "customer",
                    "entity_id": user,
                    "fact_type": fact_type,
                    "content": content.format(ref=ref),
                    "source_system": "crm",
                    "occurred_at": (now - timedelta(days=rng.randint(1, 20))).isoformat(),
                }
            )
            for group, query in ((OWN_WORD, by_word), (OWN_MEANING, by_meaning)):
                questions.append(GateQuestion(SUITE, TENANT, query, group, True, {"user_id": user}))
    users = sorted({str(e["entity_id"]) for e in events})
    for query in (*GENERAL, *SMALL_TALK, *INSTRUCTIONS):
        questions.append(
            GateQuestion(SUITE, TENANT, query, NOT_MEMORY, False, {"user_id": rng.choice(users)})
        )
    return events, questions
