"""Reading a question once: what it asks about, made at the entry of the read path.

``read_question(request)`` returns a ``QuestionReading``: the question's cues (``lexicon``), its
exact terms, whether it asks about the speaker (``personal``) or names "the user", what form of
talk it is (small talk, arithmetic, an instruction), the attributes it names (colour, capacity
or storage, port, model, size; ``attributes_in``), an ordinal ("the last …", "first", "上次",
"第一次": ``ordinal``), whether it asks how a matter stands now or what went wrong, the focus the
conversation gives (``context.active_entities`` and ``active_task``) and the ids it names. The
gate, fusion and ranking read this value; none of them scans the question's text again.

``period`` is the window [start, end) of time the question names (explicit dates, months,
quarters, years, relative periods: ``periods.read_period``) when it has begun by ``now``;
``read_question`` fills it when it is given ``now`` (a question is read at the moment it is
asked). It describes what the question is about — "my March order", "which charger did I buy
in May" — whatever the valid time the search answers at (``periods.valid_time``).

Ordinals (English and Chinese), whole words, case-insensitive:

- **latest**: "latest", "most recent(ly)", "recently", "newest", "last time", "the / my / our
  last …" and "when did I last …" ("last" followed by a period — "last week", "last March" —
  names a period, not an ordinal; "does the battery last" is a verb),
  "上次", "上一次", "上回", "最近一次", "最后一次", "最新", "最近";
- **earliest**: "first" (not "first of all", "first aid", "first class", "first place", nor
  "first half / quarter / week …", which name a period), "earliest", "oldest", "originally",
  "initially", "original", "第一次", "第一个", "第一笔", "第一回", "首次", "最早", "最初",
  "头一次", "头一回", "原始", "初版", "原价", "最开始".

Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.attributes import attributes_in
from memstream.services.domain.lexicon import (
    ANAPHORA,
    ENTITY_ID,
    TIME_WORD,
    Cue,
    about_the_speaker,
    about_the_user,
    chatter,
    content_terms,
    exact_terms,
    find_cues,
)
from memstream.services.domain.model import Anchor
from memstream.services.domain.periods import read_period
from memstream.services.domain.query import RetrievalRequest

LATEST = "latest"
EARLIEST = "earliest"

# Words after "last" / "first" that make a period of it ("last week", "first quarter").
_PERIOD_WORDS = (
    "week weeks weekend month months year years night morning evening day days quarter half "
    "spring summer autumn fall winter season decade century hour hours minute minutes few "
    "couple monday tuesday wednesday thursday friday saturday sunday january february march "
    "april may june july august september october november december jan feb mar apr jun jul "
    "aug sep sept oct nov dec"
)
_PERIOD = "|".join(_PERIOD_WORDS.split())
_LATEST_EN = re.compile(
    r"(?<![a-z0-9])(?:latest|most\s+recent(?:ly)?|newest|last\s+time|recently"
    r"|(?:i|we|you|he|she|they)(?:'ve|\s+have|'m|\s+am|'re|\s+are)\s+been\s+(?:looking\s+at|viewing"
    r"|eyeing|considering|browsing)"
    rf"|(?:the|my|our|your|his|her|their)\s+(?:very\s+)?last(?!\s+(?:{_PERIOD})(?![a-z]))"
    rf"|(?:i|we|you|he|she|they)\s+last(?=\s+[a-z])(?!\s+(?:{_PERIOD})(?![a-z]))"
    r")(?![a-z0-9])",
    re.IGNORECASE,
)
_EARLIEST_EN = re.compile(
    r"(?<![a-z0-9])(?:earliest|oldest|original|originally|initially|very\s+first"
    rf"|first(?!\s+(?:of\s+all|aid|class(?!\s+(?:i|we|you|he|she|they|that)\b)|name|person|hand"
    rf"|place|prize|round|floor|{_PERIOD})"
    r"(?![a-z]))(?!-))"
    r"(?![a-z0-9])",
    re.IGNORECASE,
)
_LATEST_ZH = (
    "上次",
    "上一次",
    "上回",
    "上一回",
    "最近一次",
    "最后一次",
    "最后一回",
    "最新",
    "最近",
    "这几天",
    "这两天",
    "前几天",
    "前两天",
)
_EARLIEST_ZH = (
    "第一次", "第一个", "第一款", "第一单", "第一笔", "第一回", "首次", "最早", "最初", "头一次",
    "头一回", "原始", "初版", "原价", "最开始",
)  # fmt: skip


def ordinal_in(text: str) -> str | None:
    """``LATEST``, ``EARLIEST`` or None: the ordinal a question asks by (module docstring).

    When a question holds both ("the first thing I bought last time"), the first one named wins.
    """
    found: list[tuple[int, str]] = []
    for pattern, kind in ((_LATEST_EN, LATEST), (_EARLIEST_EN, EARLIEST)):
        match = pattern.search(text)
        if match is not None:
            found.append((match.start(), kind))
    for phrases, kind in ((_LATEST_ZH, LATEST), (_EARLIEST_ZH, EARLIEST)):
        positions = [text.find(p) for p in phrases if p in text]
        if positions:
            found.append((min(positions), kind))
    return min(found)[1] if found else None


# --- questions about matters -----------------------------------------------------------------


def _whole_phrases(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """Any of ``phrases`` as whole words, any spacing, case-insensitive."""
    body = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in phrases)
    return re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])", re.IGNORECASE)


# Phrases that ask how something stands now ("is my case still open?", "进展如何").
_CURRENT_STATE_EN = _whole_phrases(
    (
        "still",
        "status",
        "any news",
        "any update",
        "any updates",
        "an update",
        "update on",
        "progress",
        "happening with",
        "going on with",
        "open",
        "pending",
        "ongoing",
        "outstanding",
        "yet",
        "currently",
        "right now",
        "so far",
    )
)
_CURRENT_STATE_ZH = (
    "还",
    "状态",
    "进展",
    "进度",
    "怎么样了",
    "现在",
    "目前",
    "处理好",
    "解决了吗",
    "好了吗",
)
# Phrases that ask what went wrong ("what was wrong with my grinder?", "出了什么问题").
_PROBLEM_EN = _whole_phrases(
    (
        "wrong",
        "problem",
        "problems",
        "issue",
        "issues",
        "broken",
        "broke",
        "faulty",
        "fault",
        "defect",
        "defective",
        "damaged",
        "not working",
        "stopped working",
        "complaint",
        "complaints",
        "complain",
        "complained",
        "error",
    )
)
_PROBLEM_ZH = ("问题", "坏了", "故障", "投诉", "毛病", "不能用", "出错")


def asks_current_state(query: str) -> bool:
    """Whether the query asks how a matter stands now (see ``matters``)."""
    return bool(_CURRENT_STATE_EN.search(query)) or any(p in query for p in _CURRENT_STATE_ZH)


def asks_about_a_problem(query: str) -> bool:
    """Whether the query asks what went wrong (see ``matters``)."""
    return bool(_PROBLEM_EN.search(query)) or any(p in query for p in _PROBLEM_ZH)


# --- the reading -----------------------------------------------------------------------------


def _without_ordinals(text: str) -> str:
    """The text without its ordinal and time words: what is left names the subject."""
    text = _LATEST_EN.sub(" ", _EARLIEST_EN.sub(" ", text))
    for phrase in (*_LATEST_ZH, *_EARLIEST_ZH):
        text = text.replace(phrase, " ")
    return text


@dataclass(frozen=True, slots=True)
class QuestionReading:
    """What one question asks about (see the module docstring). Made by ``read_question``."""

    text: str
    cues: tuple[Cue, ...] = ()
    exact_terms: tuple[str, ...] = ()
    talk: tuple[str, str] | None = None
    about_speaker: bool = False
    about_user: bool = False
    personal: bool = False
    attributes: frozenset[str] = frozenset()
    ordinal: str | None = None
    current_state: bool = False
    problem: bool = False
    focus: tuple[Anchor, ...] = ()
    active_task: str | None = None
    named_ids: tuple[str, ...] = ()
    terms: frozenset[str] = frozenset()
    subject_terms: frozenset[str] = frozenset()
    period: tuple[datetime, datetime] | None = None
    period_text: str = ""

    @property
    def anaphora(self) -> tuple[str, ...]:
        return tuple(cue.text for cue in self.cues if cue.kind == ANAPHORA)

    @property
    def time_words(self) -> tuple[str, ...]:
        return tuple(cue.text for cue in self.cues if cue.kind == TIME_WORD)

    @property
    def chinese_only(self) -> bool:
        """Every content word of the question is Chinese: the bundled encoder (English-only)
        finds unrelated Chinese texts as similar as related ones (``fusion``)."""
        return bool(self.terms) and not any(t.isascii() for t in self.terms)

    @property
    def vague(self) -> bool:
        """Anaphora with nothing exact to hold on to ("is that one waterproof?")."""
        return bool(self.anaphora) and not self.exact_terms


def read_question(request: RetrievalRequest, now: datetime | None = None) -> QuestionReading:
    """Read ``request``'s question and context once (see the module docstring); ``now``, the
    moment it is asked, reads the period it names."""
    text = request.query
    cues = find_cues(text)
    speaker = about_the_speaker(text)
    named = read_period(text, now) if now is not None else None
    period = None
    if named is not None and now is not None and named.start <= now:
        period = (named.start, named.end)
    return QuestionReading(
        text=text,
        cues=cues,
        exact_terms=exact_terms(text),
        talk=chatter(text),
        about_speaker=speaker,
        about_user=about_the_user(text),
        personal=speaker and request.user_id is not None,
        attributes=attributes_in(text),
        ordinal=ordinal_in(text),
        current_state=asks_current_state(text),
        problem=asks_about_a_problem(text),
        focus=request.active_entities,
        active_task=request.active_task,
        named_ids=tuple(cue.text for cue in cues if cue.kind == ENTITY_ID),
        terms=content_terms(text),
        subject_terms=content_terms(_without_ordinals(text)),
        period=period,
        period_text=named.label if named is not None else "",
    )
