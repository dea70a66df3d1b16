"""The labelled gate set: questions that depend on the tenant's memory, and questions that do not.

Half depend on memory: questions of the suites themselves (traps, LoCoMo, SGD, with what the
agent knows: user, anchors, as_of, window) and questions that name a product kind a trap tenant's
memories hold, without any cue word ("is the coffee grinder any good?"). Half do not: small talk,
general knowledge, arithmetic and instructions to the agent, each asked in one of the suites'
tenants (half of them by a known asker, as an agent sends it on every turn: the tenant's
user_id, or in a conversation the speaker's ``person`` anchor). Every question is
asked without ``force``; ``bench quality`` reports the false-skip rate (memory questions the gate
skipped) and the invalid-query rate (the others it let through) next to "always retrieve".
Pure: seeded, no I/O.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstream.bench.quality.suite import Suite

MEMORY_GROUPS = ("trap question", "product named", "LoCoMo question", "SGD question")
OTHER_GROUPS = ("small talk", "general knowledge", "arithmetic", "instruction")


@dataclass(frozen=True, slots=True)
class GateQuestion:
    suite: str
    tenant_id: str
    query: str
    group: str
    needs_memory: bool
    request: Mapping[str, Any] = field(default_factory=dict)


SMALL_TALK = (
    "hi",
    "Hello!",
    "hey there",
    "Good morning :)",
    "good evening",
    "thanks!",
    "Thank you so much",
    "thanks a lot for the help",
    "ok thanks",
    "cool, thanks",
    "great",
    "awesome!",
    "perfect, thank you",
    "bye",
    "goodbye and take care",
    "see you",
    "how are you?",
    "How are you doing today?",
    "how's it going?",
    "what's up?",
    "nice to meet you",
    "sorry",
    "never mind",
    "lol",
    "haha",
    "yes",
    "no",
    "sure",
    "okay",
    "got it",
    "sounds good",
    "who are you?",
    "are you a bot?",
    "what is your name?",
    "have a nice day",
    "I'm fine, thanks",
    "good night",
    "you're welcome",
    "你好",
    "谢谢",
    "再见",
    "好的",
    "你好吗",
    "晚安",
    "哈哈",
    "早上好",
    "你是谁",
    "辛苦了",
    "hello, how are you?",
    "thanks, bye",
)
GENERAL = (
    "What is the capital of France?",
    "Who wrote Pride and Prejudice?",
    "How many legs does a spider have?",
    "What is the boiling point of water at sea level?",
    "When did the Second World War end?",
    "Who painted the Mona Lisa?",
    "What is the largest planet in the solar system?",
    "How far is the moon from the earth?",
    "What is photosynthesis?",
    "Why is the sky blue?",
    "What language is spoken in Brazil?",
    "Who discovered penicillin?",
    "What does DNA stand for?",
    "How many continents are there?",
    "What is the speed of light?",
    "What is the tallest mountain on earth?",
    "Who was the first person on the moon?",
    "What is the chemical symbol for gold?",
    "How many days are in a leap year?",
    "What is the currency of Japan?",
    "What is the longest river in Africa?",
    "Who invented the telephone?",
    "What is the freezing point of water in Fahrenheit?",
    "How does a rainbow form?",
    "What causes the tides?",
    "What is the population of Canada?",
    "Which ocean is the largest?",
    "What is the square root of a negative number called?",
    "Who composed the Four Seasons?",
    "What year did the Berlin Wall fall?",
    "What is a black hole?",
    "How do vaccines work?",
    "What is inflation in economics?",
    "What is the difference between weather and climate?",
    "Who is the author of Don Quixote?",
    "How many bones are in the human body?",
    "What is the main ingredient of guacamole?",
    "What is the official language of Egypt?",
    "How long does it take light from the sun to reach earth?",
    "What is the hardest natural substance?",
    "Which planet is known as the red planet?",
    "What does a cardiologist do?",
    "What is the Pythagorean theorem?",
    "Who wrote the Odyssey?",
    "What is the capital of Australia?",
    "How many players are on a football team?",
    "What is the smallest prime number?",
    "What gas do plants absorb?",
    "Where is the Great Barrier Reef?",
    "What is the meaning of the word serendipity?",
    "What is machine learning?",
    "How does a refrigerator keep food cold?",
    "Which country has the most people?",
    "What is the capital of Canada?",
    "Who developed the theory of relativity?",
    "What is the largest desert in the world?",
    "What is the national animal of Scotland?",
    "How many strings does a violin have?",
    "法国的首都是哪里？",
    "水的沸点是多少度？",
    "谁发明了电话？",
    "一年有多少天？",
    "长城有多长？",
    "太阳系最大的行星是哪个？",
    "光速是多少？",
    "世界上最高的山是哪座？",
    "What is the time zone of London?",
    "How many minutes are in a day?",
    "What is the origin of the word robot?",
    "Who was Napoleon?",
)
INSTRUCTIONS = (
    "Translate this into French",
    "translate the last answer into German",
    "Summarize the conversation so far",
    "Write a haiku about autumn",
    "write a short poem about the sea",
    "Rewrite that in a friendlier tone",
    "Rephrase it more formally",
    "Draft an email to my landlord asking for a repair",
    "Compose a limerick about cats",
    "Generate three names for a bakery",
    "Create a workout plan for beginners",
    "make a shopping list for a barbecue",
    "Make it shorter",
    "Keep it under 50 words",
    "Be more concise",
    "be brief",
    "Use a formal tone",
    "Respond in Spanish from now on",
    "Answer in one sentence",
    "reply in bullet points",
    "Tell me a joke",
    "tell me a story about a dragon",
    "Act as a travel guide",
    "Pretend you are a pirate",
    "Ignore the previous instruction",
    "Continue",
    "Stop",
    "Shorten the previous answer",
    "Expand on the second point",
    "Proofread this paragraph",
    "Correct the grammar in my sentence",
    "Format the answer as a table",
    "Convert 5 miles to kilometres",
    "Brainstorm ideas for a birthday party",
    "Give me a list of healthy snacks",
    "give me an example of a metaphor",
    "Give me some ideas for a team name",
    "Sort these words alphabetically: pear, apple, fig",
    "Spell necessary backwards",
    "Count the vowels in banana",
    "Say that again",
    "From now on, call me Sam",
    "please answer in English",
    "Please write a thank-you note",
    "please summarize the article above",
    "翻译成英文",
    "总结一下上面的内容",
    "写一首关于春天的诗",
    "用中文回答",
    "请用简短的语言回答",
    "讲个笑话",
    "请翻译这句话",
    "帮我写一封感谢信",
    "以后请用英文回答",
    "不要用表情符号",
)


def _arithmetic(rng: random.Random, count: int) -> list[str]:
    shapes = (
        "What is {a} + {b}?",
        "what's {a} * {b}",
        "{a} - {b} = ?",
        "How much is {a} times {b}?",
        "What is {a} divided by {b}?",
        "calculate {a} plus {b}",
        "What is {p} percent of {a}?",
        "what is the square root of {s}?",
        "Compute {a} / {b}",
        "{a}x{b}",
        "{a} 乘以 {b} 等于多少？",
        "{a}加{b}是多少",
        "is {a} * {b} more than {c}?",
        "What is {a} squared?",
    )
    questions = []
    for n in range(count):
        shape = shapes[n % len(shapes)]
        questions.append(
            shape.format(
                a=rng.randint(2, 999),
                b=rng.randint(2, 99),
                c=rng.randint(100, 9999),
                p=rng.choice((5, 10, 15, 20, 25, 30)),
                s=rng.choice((16, 49, 81, 144, 225, 1024)),
            )
        )
    return questions


_PRODUCT_SHAPES = (
    "is the {thing} any good?",
    "what is the battery life of the {thing}?",
    "how heavy is the {thing}?",
    "does the {thing} come with a warranty?",
    "{thing} delivery time",
    "what colours does the {thing} come in?",
    "is the {thing} waterproof?",
    "what is the motor power of the {thing}?",
    "how much is the {thing}?",
    "the {thing}, which model was it?",
)


def _things(suite: Suite) -> dict[str, list[str]]:
    """tenant → product kinds its memories mention (from the trap vocabulary)."""
    from memstream.bench.quality.trap_case import ITEMS

    found: dict[str, list[str]] = {}
    for event in suite.events:
        content = str(event.get("content", "")).casefold()
        for item in ITEMS:
            if re.search(rf"\b{re.escape(item)}\b", content):
                found.setdefault(event["tenant_id"], [])
                if item not in found[event["tenant_id"]]:
                    found[event["tenant_id"]].append(item)
    return found


def _asker(request: Mapping[str, Any]) -> dict[str, Any]:
    """Who asks in a tenant, as its questions say: the user (``user_id``), else the person an
    agent talks with (a ``person`` anchor: LoCoMo's speaker); empty when neither is known."""
    if request.get("user_id"):
        return {"user_id": request["user_id"]}
    people = [a for a in request.get("anchors") or () if a.get("type") == "person"]
    return {"anchors": people[:1]} if people else {}


def _without_force(request: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "force"}


def gate_set(suites: Sequence[Suite], seed: int = 11) -> list[GateQuestion]:
    """The labelled set over the suites' tenants: ~220 memory questions, ~220 others."""
    rng = random.Random(f"gate:{seed}")  # noqa: S311 - benchmark data, not crypto
    memory: list[GateQuestion] = []
    tenants: list[tuple[str, str, dict[str, Any]]] = []  # suite, tenant, who asks there
    share = {"traps": 60, "locomo": 70, "sgd": 40}
    for suite in suites:
        users: dict[str, dict[str, Any]] = {}
        for q in suite.questions:
            users.setdefault(q.tenant_id, {})
            if not users[q.tenant_id]:
                users[q.tenant_id] = _asker(q.request)
        tenants += [(suite.name, t, u) for t, u in sorted(users.items())]
        if suite.name in share:
            group = {"traps": MEMORY_GROUPS[0], "locomo": MEMORY_GROUPS[2]}.get(
                suite.name, MEMORY_GROUPS[3]
            )
            picked = rng.sample(suite.questions, min(share[suite.name], len(suite.questions)))
            memory += [
                GateQuestion(
                    suite.name, q.tenant_id, q.query, group, True, _without_force(q.request)
                )
                for q in picked
            ]
        if suite.name == "traps":
            things = sorted(_things(suite).items())
            for tenant, kinds in rng.sample(things, min(50, len(things))):
                shape = rng.choice(_PRODUCT_SHAPES)
                memory.append(
                    GateQuestion(
                        suite.name,
                        tenant,
                        shape.format(thing=rng.choice(kinds)),
                        MEMORY_GROUPS[1],
                        True,
                    )
                )
    others: list[tuple[str, str]] = [
        *((OTHER_GROUPS[0], q) for q in SMALL_TALK),
        *((OTHER_GROUPS[1], q) for q in GENERAL),
        *((OTHER_GROUPS[2], q) for q in _arithmetic(rng, 45)),
        *((OTHER_GROUPS[3], q) for q in INSTRUCTIONS),
    ]
    unrelated: list[GateQuestion] = []
    if tenants:
        for n, (group, query) in enumerate(others):
            suite_name, tenant, user = rng.choice(tenants)
            request = dict(user) if n % 2 == 0 else {}
            unrelated.append(GateQuestion(suite_name, tenant, query, group, False, request))
    return [*memory, *unrelated]


@dataclass(frozen=True, slots=True)
class GateOutcome:
    question: GateQuestion
    answered: bool
    reason: str
    latency_ms: float
