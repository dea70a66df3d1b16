"""Two forms of talk that ask about the world or the agent, not about memory (English, Chinese).

- **explanation**: how something works or why things happen in general, what a word means, how
  two things differ, whether something is safe: "how does active noise cancelling work?",
  "what's the difference between USB-C and Lightning?", "why do chargers get hot?", "is it safe
  to leave a phone charging overnight?", "主动降噪的原理是什么？", "USB-C和Lightning有什么区别",
  "为什么充电器会发热", "这个成语什么意思", "what is the origin of the word robot?". "why does
  *my* charger …" carries a possessive (a strong cue) and is looked up before its form is read;
  "why does Melanie …" is about someone, not an explanation.
- **opinion**: the agent's view asked after a remark: "my friend says autumn is rainy, what do
  you think?", "我觉得咖啡比茶好喝，你说呢", "你怎么看".

``talk_form(query)`` returns ``(kind, phrase)`` or None. The gate skips such talk when no strong
cue and no possessive of a record says otherwise (``gating``); a user's question naming one of
their kinds of record ("how long does my refund take?", "退款多久到账") is not skipped for its
form. Pure: stdlib only.
"""

from __future__ import annotations

import re

EXPLANATION = "general explanation"
OPINION = "request for an opinion"

_EXPLANATION_EN = re.compile(
    r"(?<![a-z])(?:"
    r"how\s+(?:does|do|is|are|did)\s+(?:an?\s+|the\s+)?(?!my\b|our\b|your\b)[a-z][\w\s-]*?\s+work"
    r"|(?:what(?:'s|\s+is|\s+are)\s+the\s+)?difference\s+between"
    r"|why\s+(?:do|does)(?=\s+(?!my\b|our\b|your\b|i\b|we\b))"
    r"|is\s+it\s+(?:safe|ok|okay|bad|normal|healthy|true)\s+to"
    r"|what\s+does\s+(?!my\b|our\b)[\w\s'\"-]+?\s+mean"
    r"|(?:origin|meaning|definition|etymology)\s+of\s+the\s+(?:word|term|phrase|name)"
    r")(?![a-z])",
    re.IGNORECASE,
)
_EXPLANATION_ZH = (
    "原理",
    "有什么区别",
    "区别是什么",
    "有啥区别",
    "什么意思",
    "是什么意思",
    "为什么会",
)
_OPINION_EN = re.compile(
    r"(?<![a-z])(?:what\s+do\s+you\s+think|do\s+you\s+agree|what(?:'s|\s+is)\s+your\s+"
    r"(?:opinion|view|take)|your\s+thoughts)(?![a-z])",
    re.IGNORECASE,
)
_OPINION_ZH = ("你觉得呢", "你说呢", "你怎么看", "你认为呢", "你觉得怎么样", "你同意吗")


def talk_form(query: str) -> tuple[str, str] | None:
    """``(EXPLANATION | OPINION, the phrase found)`` or None (see the module docstring)."""
    for phrase in _OPINION_ZH:
        if phrase in query:
            return OPINION, phrase
    opinion = _OPINION_EN.search(query)
    if opinion is not None:
        return OPINION, opinion.group(0)
    for phrase in _EXPLANATION_ZH:
        if phrase in query:
            return EXPLANATION, phrase
    for found in _EXPLANATION_EN.finditer(query):
        after = query[found.end() :].lstrip()
        if found.group(0).casefold().startswith("why") and after[:1].isupper():
            continue  # "why does Melanie …": about someone, not a general explanation
        return EXPLANATION, " ".join(found.group(0).split())
    return None
