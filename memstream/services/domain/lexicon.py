"""Lexicon: the words and exact terms a query carries, which gating and fusion both read.

Cue lexicons (English and Chinese): time words ("yesterday", "上次"), possessives ("my",
"我的"), state verbs ("returned", "退货"), anaphora ("that one", "它"), first person; and
``exact_terms``: quoted strings, ids and model numbers, upper-case codes, connector names,
colours and numbers. ``find_cues`` lists every cue of a query with its strength.
Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memstream.services.domain.colours import EN_NAMES, ZH_NAMES
from memstream.services.domain.talk_forms import talk_form

# Cue kinds, as they appear in reasons.
TIME_WORD = "time word"
POSSESSIVE = "possessive"
STATE_VERB = "state verb"
ANAPHORA = "anaphora"
FIRST_PERSON = "first person"
ENTITY_ID = "entity id"
EXACT_ATTRIBUTE = "exact attribute"
EXPLICIT_TIME = "explicit time"
CONTEXT = "context"

# (phrase, strong). A strong cue alone makes memory worth fetching even under load; a weak one
# ("when", "it") is often generic ("when was the Eiffel tower built?").
_TIME_WORDS_EN = (
    *(
        (w, True)
        for w in (
            "yesterday",
            "last week",
            "last month",
            "last year",
            "last time",
            "ago",
            "earlier",
            "previously",
            "recently",
            "lately",
            "this morning",
        )
    ),
    *((w, False) for w in ("when", "before", "since")),
)
_TIME_WORDS_ZH = (
    *(
        (w, True)
        for w in ("上次", "昨天", "前天", "之前", "最近", "上周", "上个月", "去年", "刚才", "以前")
    ),
    *((w, False) for w in ("什么时候", "何时")),
)
_POSSESSIVES_EN = tuple((w, True) for w in ("my", "mine", "our", "ours"))
_POSSESSIVES_ZH = tuple((w, True) for w in ("我的", "我们的", "咱们的", "俺的", "俺们的", "咱的"))
_STATE_VERBS_EN = tuple(
    (w, True)
    for w in (
        "returned",
        "ordered",
        "complained",
        "bought",
        "purchased",
        "status",
        "still",
        "resolved",
        "refunded",
        "shipped",
        "delivered",
        "cancelled",
        "canceled",
        "paid",
        "reported",
        "escalated",
        "pending",
        "tracking",
    )
)
_STATE_VERBS_ZH = tuple(
    (w, True)
    for w in (
        "退货",
        "买了",
        "购买",
        "投诉",
        "状态",
        "退款",
        "发货",
        "到货",
        "下单",
        "订单",
        "取消",
        "解决",
        "还没",
    )
)
# "do I like jazz?" asks about the user, but "can I pay by card?" does not: weak cues.
_FIRST_PERSON_EN = tuple((w, False) for w in ("i", "me", "we", "us", "i'm", "i've", "i'd"))
_FIRST_PERSON_ZH = tuple((w, False) for w in ("我", "我们", "俺", "咱"))
_ANAPHORA_EN = tuple(
    (w, False) for w in ("that one", "this one", "the same one", "the other one", "it", "them")
)
_ANAPHORA_ZH = tuple((w, False) for w in ("那个", "这个", "那款", "这款", "那件", "它们", "它"))

_LEXICON: tuple[tuple[str, tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]], ...] = (
    (POSSESSIVE, _POSSESSIVES_EN, _POSSESSIVES_ZH),
    (STATE_VERB, _STATE_VERBS_EN, _STATE_VERBS_ZH),
    (TIME_WORD, _TIME_WORDS_EN, _TIME_WORDS_ZH),
    (ANAPHORA, _ANAPHORA_EN, _ANAPHORA_ZH),
    (FIRST_PERSON, _FIRST_PERSON_EN, _FIRST_PERSON_ZH),
)


def _english(phrase: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(word) for word in phrase.split())
    return re.compile(rf"(?<![a-z0-9]){words}(?![a-z0-9])", re.IGNORECASE)


_PATTERNS: tuple[tuple[str, re.Pattern[str], str, bool], ...] = tuple(
    (kind, _english(phrase), phrase, strong)
    for kind, english, _ in _LEXICON
    for phrase, strong in english
)
_CHINESE: tuple[tuple[str, str, bool], ...] = tuple(
    (kind, phrase, strong) for kind, _, chinese in _LEXICON for phrase, strong in chinese
)

# --- exact terms -----------------------------------------------------------------------------

_QUOTED = re.compile(
    r"\"([^\"]{1,80})\"|“([^”]{1,80})”|「([^」]{1,80})」"
    r"|(?<![A-Za-z0-9])'([^']{2,80})'(?![A-Za-z0-9])"  # not the apostrophe of "what's"
)
# Letters and digits mixed, hyphens allowed: model numbers, ids, sizes ("XR-500", "C-17", "65W").
_ALNUM_ID = re.compile(
    r"(?<![A-Za-z0-9])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])"
    r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?(?![A-Za-z0-9])"
)
# Upper-case codes with a hyphenated part: connectors and standards ("USB-C", "WI-FI").
_CODE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2,}(?:-[A-Z0-9]+)+(?![A-Za-z0-9])")
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?(?![A-Za-z0-9])")
_PORTS = ("hdmi", "displayport", "thunderbolt", "lightning", "ethernet", "micro-usb", "usb")
# Colours (``colours``): named exactly, as a variant's colour is.
_COLOURS_EN = EN_NAMES
_COLOURS_ZH = ZH_NAMES
_WORD_TERMS = tuple((word, _english(word)) for word in (*_PORTS, *_COLOURS_EN))


def exact_terms(query: str) -> tuple[str, ...]:
    """The exact attributes a query names, in order of appearance, without repeats.

    Quoted strings, ids and model numbers (letters mixed with digits), upper-case codes
    ("USB-C"), connector names, colours (English and Chinese) and standalone numbers.
    """
    found: list[tuple[int, str]] = []
    spans: list[tuple[int, int]] = []

    def add(start: int, end: int, text: str) -> None:
        if any(start < e and s < end for s, e in spans):
            return  # inside a term already found (a number within "XR-500")
        spans.append((start, end))
        found.append((start, text))

    for match in _QUOTED.finditer(query):
        text = next(group for group in match.groups() if group is not None)
        add(match.start(), match.end(), text.strip())
    for pattern in (_CODE, _ALNUM_ID):
        for match in pattern.finditer(query):
            add(match.start(), match.end(), match.group(0))
    for _, pattern in _WORD_TERMS:
        for match in pattern.finditer(query):
            add(match.start(), match.end(), match.group(0))
    for colour in _COLOURS_ZH:
        start = query.find(colour)
        if start >= 0:
            add(start, start + len(colour), colour)
    for match in _NUMBER.finditer(query):
        add(match.start(), match.end(), match.group(0))
    unique: dict[str, None] = {}
    for _, text in sorted(found):
        if text:
            unique.setdefault(text, None)
    return tuple(unique)


def _is_id_like(term: str) -> bool:
    """Letters and digits, and long or hyphenated: "XR-500", "C-17", "ORD12345" (not "5G")."""
    mixed = re.search(r"\d", term) and re.search(r"[A-Za-z]", term)
    return bool(mixed and ("-" in term or "_" in term or len(term) >= 5))


# --- cues ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cue:
    """One reason a query depends on memory: its kind, the words found, and its strength."""

    kind: str
    text: str
    strong: bool

    def describe(self) -> str:
        return f"{self.kind} '{self.text}'"


def find_cues(query: str) -> tuple[Cue, ...]:
    """Every memory cue in the query text, in lexicon order (possessives first)."""
    cues: list[Cue] = []
    lowered = query.casefold()
    for kind, pattern, phrase, strong in _PATTERNS:
        if pattern.search(query):
            cues.append(Cue(kind, phrase, strong))
    for kind, phrase, strong in _CHINESE:
        if phrase in lowered:
            cues.append(Cue(kind, phrase, strong))
    for term in exact_terms(query):
        if _is_id_like(term):
            cues.append(Cue(ENTITY_ID, term, True))
        else:
            cues.append(Cue(EXACT_ATTRIBUTE, term, False))
    order = {kind: i for i, kind in enumerate((POSSESSIVE, STATE_VERB, TIME_WORD, ENTITY_ID))}
    return tuple(sorted(cues, key=lambda cue: order.get(cue.kind, len(order))))


# --- who the question is about ---------------------------------------------------------------

# A question that opens by asking what the speaker may or how to do something asks for general
# information — a rule, a how-to, a fact — even when it names their things: "can I return my
# headphones after a month?" is answered by the return policy. Lower case, whole words.
_GENERAL_OPENINGS_EN = (
    "can i",
    "could i",
    "may i",
    "should i",
    "shall i",
    "must i",
    "do i need",
    "do i have to",
    "how do i",
    "how can i",
    "how should i",
    "where can i",
    "where do i",
    "am i allowed",
    "am i able",
    "is it possible",
    "what happens if i",
)
_GENERAL_OPENINGS_ZH = ("我可以", "我能", "我该", "我应该", "我需要", "可以", "能不能", "是否可以")
# Requests to the agent, not about the speaker: "tell me about the warranty".
_HELP_FRAMES_EN = ("tell me", "show me", "give me", "help me", "let me know", "let me", "send me")
_HELP_FRAMES_ZH = ("告诉我", "给我", "帮我", "请问")
_OPENING_NOISE = re.compile(
    r"^(?:\W+|(?:hi|hello|hey|please|so|and|ok|okay|um)(?![a-z0-9]))+", re.IGNORECASE
)


# An agent asking about the person it serves, in the third person: "what does the user want?".
_THE_USER = re.compile(
    r"(?<![a-z])(?:the|this|our|my)\s+(?:user|customer|client|member)(?:'s)?(?![a-z])|用户|客户",
    re.IGNORECASE,
)


def about_the_user(query: str) -> bool:
    """Whether the query names the person the agent serves in the third person ("what does
    the user want now?", "the customer's address", "客户要什么")."""
    return _THE_USER.search(query) is not None


def about_the_speaker(query: str) -> bool:
    """Whether the query asks about the speaker's own history or things ("what did I buy?",
    "the headphones I looked at", "my complaint", "我上次买的") rather than for general
    information ("can I pay by card?", "tell me about the XR-500", "我可以退货吗").

    True when a first-person or possessive word remains once the help frames ("tell me", "show
    me", "告诉我") are set aside, unless the question opens with an ability or rule frame ("can
    I", "how do I", "is it possible", "我可以", "能不能").
    """
    text = _OPENING_NOISE.sub("", query.strip()).casefold()
    if any(re.match(rf"{re.escape(o)}(?![a-z0-9])", text) for o in _GENERAL_OPENINGS_EN):
        return False
    if any(text.startswith(opening) for opening in _GENERAL_OPENINGS_ZH):
        return False
    for frame in _HELP_FRAMES_EN:
        text = _english(frame).sub(" ", text)
    for frame in _HELP_FRAMES_ZH:
        text = text.replace(frame, " ")
    return any(cue.kind in (POSSESSIVE, FIRST_PERSON) for cue in find_cues(text))


# --- talk that needs no memory ---------------------------------------------------------------

SMALL_TALK = "small talk"
ARITHMETIC = "arithmetic"
INSTRUCTION = "instruction to the agent"

_SMALL_TALK_EN = (
    "hi",
    "hello",
    "hey",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "thanks",
    "thank you",
    "thx",
    "cheers",
    "bye",
    "goodbye",
    "see you",
    "see ya",
    "take care",
    "how are you",
    "how are you doing",
    "how's it going",
    "how is it going",
    "what's up",
    "nice to meet you",
    "you're welcome",
    "no problem",
    "ok",
    "okay",
    "cool",
    "great",
    "awesome",
    "perfect",
    "got it",
    "sounds good",
    "lol",
    "haha",
    "sorry",
    "never mind",
    "yes",
    "no",
    "sure",
    "who are you",
    "are you a bot",
    "are you human",
    "what's your name",
    "what is your name",
    "have a nice day",
    "have a good day",
    "you're great",
    "i'm fine",
    "i am fine",
    "i'm good",
    "fine",
)
# Words that only pad small talk ("thanks a lot", "hi there, how are you today?").
_FILLER_WORDS = (
    "there so much a lot very you again too everyone all guys mate buddy friend today doing and "
    "really for the help your it is that's nice well oh ah just have day evening morning night"
)
_SMALL_TALK_FILLER = frozenset(_FILLER_WORDS.split())
_SMALL_TALK_ZH = (
    "你好",
    "您好",
    "谢谢",
    "多谢",
    "再见",
    "拜拜",
    "早上好",
    "晚上好",
    "晚安",
    "哈哈",
    "好的",
    "嗯",
    "没事",
    "不客气",
    "你是谁",
    "你是机器人吗",
    "你好吗",
    "辛苦了",
    "辛苦啦",
    "辛苦",
    "谢啦",
    "早安",
    "早",
    "嗨",
    "在吗",
)
_SMALL_TALK_WORDS = tuple(_english(phrase) for phrase in _SMALL_TALK_EN)
_OPERATOR = (
    r"(?:[+*/×÷^x]|\s-\s|plus|minus|times|divided\s+by|multiplied\s+by|over|to\s+the\s+power"
    r"\s+of|percent\s+of|%\s+of|mod|加|减|乘以|除以)"
)
_ARITHMETIC = re.compile(
    rf"(?<![A-Za-z-])\d+(?:[.,]\d+)?\s*{_OPERATOR}\s*\d+(?:[.,]\d+)?"
    r"|square\s+root\s+of\s+\d|\d+\s*(?:squared|cubed)\b|平方根|\d+\s*的平方",
    re.IGNORECASE,
)
_INSTRUCTION_OPENINGS_EN = (
    "write",
    "translate",
    "summarize",
    "summarise",
    "rewrite",
    "rephrase",
    "paraphrase",
    "draft",
    "compose",
    "generate",
    "create a",
    "make a",
    "make it",
    "convert",
    "format",
    "correct",
    "proofread",
    "brainstorm",
    "tell me a joke",
    "tell me a story",
    "act as",
    "pretend",
    "ignore",
    "respond",
    "answer in",
    "reply in",
    "reply with",
    "use a",
    "be more",
    "be less",
    "be brief",
    "be concise",
    "keep it",
    "keep your",
    "shorten",
    "expand",
    "continue",
    "stop",
    "list three",
    "list five",
    "give me a list",
    "give me an example",
    "give me some ideas",
    "sort",
    "calculate",
    "compute",
    "solve",
    "spell",
    "count",
    "say",
    "from now on",
)
_INSTRUCTION_OPENINGS_ZH = (
    "翻译",
    "总结",
    "写一",
    "帮我写",
    "请写",
    "请用",
    "用中文",
    "用英文",
    "请翻译",
    "请总结",
    "给我讲个",
    "讲个笑话",
    "计算",
    "算一下",
    "回答要",
    "请简短",
    "以后请",
    "不要",
)
# Instructions that may come after a frame ("用三点总结一下", "帮忙翻译一下这段").
_INSTRUCTION_PHRASES_ZH = ("总结一下", "概括一下", "翻译一下", "改写一下", "润色一下", "缩写一下")


def _small_talk(query: str) -> str | None:
    text = query.casefold()
    for phrase in _SMALL_TALK_ZH:
        if phrase in text:
            text = text.replace(phrase, " ")
            found = phrase
            if not re.sub(r"[\s\W吗呢啊呀吧哦]+", "", text):
                return found
    matched: str | None = None
    for phrase, pattern in zip(_SMALL_TALK_EN, _SMALL_TALK_WORDS, strict=True):
        if pattern.search(text):
            matched = matched or phrase
            text = pattern.sub(" ", text)
    if matched is None:
        return None
    rest = [w for w in re.findall(r"[\w']+", text) if w not in _SMALL_TALK_FILLER]
    return matched if not rest else None


def chatter(query: str) -> tuple[str, str] | None:
    """(kind, text) when the query needs no memory by its form: small talk ("thanks a lot!",
    "你好"), arithmetic ("what is 17 * 23?"), an instruction to the agent ("translate this
    into French", "be more concise", "翻译成英文"), a general explanation or a request for an
    opinion (``talk_forms``); else None."""
    talk = _small_talk(query)
    if talk is not None:
        return SMALL_TALK, talk
    sum_ = _ARITHMETIC.search(query)
    if sum_ is not None:
        return ARITHMETIC, sum_.group(0)
    text = _OPENING_NOISE.sub("", query.strip()).casefold()
    for opening in _INSTRUCTION_OPENINGS_EN:
        if re.match(rf"{re.escape(opening)}(?![a-z0-9])", text):
            return INSTRUCTION, opening
    for opening in _INSTRUCTION_OPENINGS_ZH:
        if text.startswith(opening):
            return INSTRUCTION, opening
    for phrase in _INSTRUCTION_PHRASES_ZH:
        if phrase in text:
            return INSTRUCTION, phrase
    return talk_form(query)


# --- words that name something ---------------------------------------------------------------

# Words every question uses: finding them in memory says nothing about what memory holds.
_COMMON = (
    "a an the of to in on at for with about from by into over under after before and or but not "
    "no yes is are was were be been being am do does did done have has had having can could "
    "would should will shall may might must what which who whom whose when where why how that "
    "this these those there here it its it's i me my mine we us our you your he him his she her "
    "they them their any some all each every much many more most less few very just also only "
    "still ever even than then so too again get got gets make made use used using tell know "
    "think like want need please thanks thank say said go goes went come came give gave take "
    "took see saw look looked find found one two three first last next new old good best well "
    "time times day days week weeks month months year years today now way thing things kind "
    "sort type lot lots something anything everything someone anyone people person way ways "
    "really does doing don't didn't isn't aren't wasn't can't won't i'm i've i'd you're what's"
)
_COMMON_WORDS = frozenset(_COMMON.split())
_LATIN_WORD = re.compile(r"[0-9a-z]+(?:[-_'][0-9a-z]+)*", re.IGNORECASE)
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_CJK_COMMON_WORDS = (
    "什么 怎么 哪个 哪里 为什么 是不是 有没有 可以 一个 这个 那个 我们 你们 他们 现在 时候 吗 呢 "
    "如何 怎样 今天 觉得 知道 一下 多少"
)
_CJK_COMMON = frozenset(_CJK_COMMON_WORDS.split())


# Memo for the texts one request ranks (a candidate's text is read by several rules); kept
# small: its keys are memory contents (up to 32 KiB each), held until evicted.
@lru_cache(maxsize=512)
def content_terms(text: str) -> frozenset[str]:
    """The words that can name something: Latin words of three letters or more (or with a
    digit) that are not common question words, and the two-character runs of Chinese text."""
    terms = {
        word.casefold()
        for word in _LATIN_WORD.findall(text)
        if (len(word) >= 3 or any(ch.isdigit() for ch in word))
        and word.casefold() not in _COMMON_WORDS
    }
    for run in _CJK_RUN.findall(text):
        terms.update(
            run[i : i + 2] for i in range(len(run) - 1) if run[i : i + 2] not in _CJK_COMMON
        )
    return frozenset(terms)
