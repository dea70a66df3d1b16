"""Periods: the time a question names, read as a window of valid time (English and Chinese).

``read_period(text, now)`` finds the period a question names and returns it as a ``Period``
(``start`` inclusive, ``end`` exclusive, UTC, a ``label`` such as "March 2024"), or ``None``.
Read:

- dates: "2024-03-03", "3 March 2024", "March 3rd, 2024", "on March 3", "2024年3月3日", "3月3号";
- months: "in March 2024", "Nov 1991", "last March", "this March", "in March", "三月", "2024年3月",
  "去年三月", "last month", "上个月";
- quarters: "Q1 2024", "the first quarter of 2024", "2024年第一季度", "last quarter", "上季度";
- years: "in 2023", "last year", "this year", "去年", "前年", "今年", "2023年";
- parts of a year: "early 2024" (January–April), "mid-2024" (May–August), "late 2024"
  (September–December), "the end of 2024" (October–December), "the first / second half of
  2024", "H1 2024", "late last year", "2024年初", "年中", "去年年底", "上半年", "下半年";
- seasons (northern, meteorological; a winter is the one that begins in December of its year):
  "last summer", "summer 2021", "去年夏天";
- relative: "yesterday", "last week", "two months ago", "3 weeks ago", "昨天", "上周",
  "三个月前", "两年前", "half a year ago", "半年前";
- a month as the adjective of a record: "my May order", "my August charger order";
- spans of two of the above: "from 1998 to 2001", "between March and May 2024", "2019年至2021年".

A month, day or season without a year is the most recent one that has begun; "last March" /
"last summer" the most recent one that has ended; "this March" the one of the current year.
Several separate periods make the span that covers them.

What is not a period: a number that only looks like a year ("the 2023 model", "XR-2000",
"2024 dollars", "2023年款"), a bare year without a preposition, "May I …", "march" as a verb,
"Q1" inside an id, "the last month" (the stretch up to now). A bare year is read after "in",
"during", "throughout", "for", "from", "between", "year", or in a span. "n years ago" is the
month n years back; "last year" the calendar year.

``Period.moment`` is the instant a question about the period is answered at (valid time): the
last instant of the period — the last state the period saw, which includes a change made during
it — or, for a span "from A to B", the last instant of A: a state that held from A to B began by
the end of A and ended within B, so the end of B may already lie after it.

``valid_time(text, now)`` turns the period into the valid time a question is answered at, with
the note its reply's reason carries. Calendar arithmetic lives in ``timespans``. Pure: ``now`` is
a parameter. Must not import any I/O library.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from memstream.services.domain.timespans import (
    MONTHS,
    Period,
    ago,
    day,
    latest,
    month,
    part,
    quarter,
    season,
    this,
    which,
    year,
)

_MONTH_NUMBER = {name: i + 1 for i, name in enumerate(MONTHS)}
_MONTH_NUMBER.update({name[:3]: i + 1 for i, name in enumerate(MONTHS)})
_MONTH_NUMBER["sept"] = 9
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2,
}  # fmt: skip
_CN_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_CN_DIGITS.update({"七": 7, "八": 8, "九": 9})
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_CN_UNITS: dict[str, str] = {"天": "day", "日": "day", "星期": "week", "礼拜": "week", "周": "week"}
_CN_UNITS.update({"个月": "month", "月": "month", "季度": "quarter", "年": "year"})
_CN_SEASONS = {"春": "spring", "夏": "summer", "秋": "autumn", "冬": "winter"}
# Words after a number that make it a quantity, a model or a price, not a year.
_NOT_A_YEAR = [
    "dollars?", "euros?", "yuan", "rmb", "usd", "eur", "gbp", "cny", "pounds?", "yen", "units?",
    "pieces?", "items?", "models?", "editions?", "versions?", "series", "release", "stores?",
    "people", "miles?", "km", "kg", "ms", "mah", "mb", "gb", "tb", "rpm", "calories?",
    "points?", "words?", "pages?", "copies",
]  # fmt: skip

_MON = r"(?P<mon>" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>1[89]\d\d|2[01]\d\d)"
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_NUM = (
    r"(?P<n>\d{1,3}|a couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven"
    r"|twelve)"
)
_CN_NUM = r"[〇零一二两三四五六七八九十]{1,3}"
_UNIT = r"(?P<unit>day|week|month|quarter|year)s?"
_OPEN = r"(?<![\w\-/.])"  # a number glued to letters, a dash or a slash is an id, not a date
_CLOSE = r"(?![\w\-/'’])"  # "in Jan's car": a name
_NO_YEAR = r"(?!,?\s*(?:of\s+)?(?:1[89]|2[01])\d\d)"  # the dated form reads it instead
_NOT_YEAR_WORD = r"(?!\s+(?:" + "|".join(_NOT_A_YEAR) + r")\b)"


def _cn_number(text: str) -> int:
    """1..99 in Chinese numerals or digits ("十二", "二十", "3")."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        return (_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(units, 0))
    value = 0
    for char in text:
        value = value * 10 + _CN_DIGITS.get(char, 0)
    return value


def _back(n: int, unit: str, now: datetime) -> Period | None:
    """ "n units ago": that day, week, month or quarter; for years, the month n years back
    ("a year ago" asked in January is last January, not the whole of last year)."""
    return ago(12 * n, "month", now) if unit == "year" else ago(n, unit, now)


def _number(text: str) -> int:
    text = text.casefold()
    return int(text) if text.isdigit() else _NUMBER_WORDS[text]


Reader = Callable[[re.Match[str], datetime], Period | None]

# "may" and "march" are verbs too: after these words they are ("May I …", "this may be", "they
# march to the square"), not months.
_VERB_AFTER = {
    "may": re.compile(
        r"\s+(?:i|we|you|he|she|it|they|be|have|not|also|well|need|want|help|get|find|ask"
        r"|[a-z]+ly)\b",
        re.I,
    ),
    "march": re.compile(r"\s+(?:on|to|toward|towards|into|down|up|off|out|back|against)\b", re.I),
}


def _bare_month(match: re.Match[str], now: datetime, qualifier: str | None) -> Period | None:
    """A month named without a year (see ``timespans.which``), unless it is a verb."""
    word = _g(match, "mon").casefold()
    verb = _VERB_AFTER.get(word)
    if verb is not None and verb.match(match.string, match.end()):
        return None
    return which(qualifier, lambda y: month(y, _MONTH_NUMBER[word]), now)


def _bare_reader(match: re.Match[str], now: datetime) -> Period | None:
    return _bare_month(match, now, None)


def _g(match: re.Match[str], name: str) -> str:
    return match.group(name) or ""


def _en_month(match: re.Match[str]) -> int:
    return _MONTH_NUMBER[_g(match, "mon").casefold()]


# Forms that carry their own year: a period wherever they occur.
_DATED: list[tuple[re.Pattern[str], Reader]] = [
    (re.compile(_OPEN + r"(?P<year>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)(?![\d\-/])"),
     lambda m, now: day(int(m["year"]), int(m["m"]), int(m["d"]))),
    (re.compile(_OPEN + r"(?P<year>\d{4})/(?P<m>\d\d?)/(?P<d>\d\d?)" + _CLOSE),
     lambda m, now: day(int(m["year"]), int(m["m"]), int(m["d"]))),
    (re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MON + r",?\s+" + _YEAR + _CLOSE, re.I),
     lambda m, now: day(int(m["year"]), _en_month(m), int(m["day"]))),
    (re.compile(r"\b" + _MON + r"\s+" + _DAY + r",?\s+" + _YEAR + _CLOSE, re.I),
     lambda m, now: day(int(m["year"]), _en_month(m), int(m["day"]))),
    (re.compile(r"\b" + _MON + r",?\s+(?:of\s+)?" + _YEAR + _CLOSE, re.I),
     lambda m, now: month(int(m["year"]), _en_month(m))),
    (re.compile(r"\b(?:the\s+)?(?P<ord>first|second|third|fourth)\s+quarter\s+(?:of\s+)?"
                + _YEAR + _CLOSE, re.I),
     lambda m, now: quarter(int(m["year"]), _ORDINALS[m["ord"].casefold()])),
    (re.compile(_OPEN + r"Q(?P<q>[1-4])\s*(?:of\s+)?" + _YEAR + _CLOSE),
     lambda m, now: quarter(int(m["year"]), int(m["q"]))),
    (re.compile(_OPEN + _YEAR + r"\s*Q(?P<q>[1-4])" + _CLOSE),
     lambda m, now: quarter(int(m["year"]), int(m["q"]))),
    (re.compile(r"\b(?:the\s+)?(?P<s>spring|summer|autumn|fall|winter)\s+(?:of\s+)?" + _YEAR
                + _CLOSE, re.I),
     lambda m, now: season(int(m["year"]), m["s"].casefold().replace("fall", "autumn"))),
    (re.compile(r"(?P<year>\d{4})年(?P<m>\d{1,2}|" + _CN_NUM + r")月(?P<d>\d{1,2}|" + _CN_NUM
                + r")[日号]"),
     lambda m, now: day(int(m["year"]), _cn_number(m["m"]), _cn_number(m["d"]))),
    (re.compile(r"(?P<year>\d{4})年(?P<m>\d{1,2}|" + _CN_NUM + r")月"),
     lambda m, now: month(int(m["year"]), _cn_number(m["m"]))),
    (re.compile(r"(?P<year>\d{4})年?第?(?P<q>[1-4一二三四])季度"),
     lambda m, now: quarter(int(m["year"]), _cn_number(m["q"]))),
    (re.compile(r"(?P<year>\d{4})年的?(?P<s>[春夏秋冬])[天季]"),
     lambda m, now: season(int(m["year"]), _CN_SEASONS[m["s"]])),
    (re.compile(r"\b(?:in\s+)?(?:the\s+)?(?P<p>early|mid|late|beginning|start|middle|end|"
                r"first\s+half|second\s+half)(?:\s+of|-|\s+)\s*" + _YEAR + _CLOSE, re.I),
     lambda m, now: part(int(m["year"]), " ".join(m["p"].split()))),
    (re.compile(_OPEN + r"(?P<p>H[12])\s*" + _YEAR + _CLOSE + r"|" + _OPEN + _YEAR.replace(
        "year", "year2") + r"\s*(?P<p2>H[12])" + _CLOSE),
     lambda m, now: part(int(m["year"] or m["year2"]), m["p"] or m["p2"])),
    (re.compile(r"(?P<year>\d{4})年的?(?P<p>年初|年中|年底|年末|上半年|下半年)|(?P<year2>\d{4})"
                r"(?P<p2>年初|年中|年底|年末|上半年|下半年)"),
     lambda m, now: part(int(m["year"] or m["year2"]), m["p"] or m["p2"])),
    (re.compile(r"(?<![0-9A-Za-z\-])(?P<year>\d{4})年(?![款版型份初中底末])"),
     lambda m, now: year(int(m["year"]))),
]  # fmt: skip

# "Loose" forms: read only where the context already says a period is meant (after "from",
# "between", or a connector in a span): a bare year, a bare month name.
_LOOSE: list[tuple[re.Pattern[str], Reader]] = [
    *_DATED,
    (re.compile(_OPEN + _YEAR + _CLOSE + _NOT_YEAR_WORD),
     lambda m, now: year(int(m["year"]))),
    (re.compile(r"\b" + _MON + _CLOSE, re.I), _bare_reader),
]  # fmt: skip

_CN_Q = r"(?P<qual>今年|去年|前年)?"
_RECORD = (
    r"(?:order|purchase|invoice|bill|delivery|shipment|return|refund|booking|payment"
    r"|statement|subscription)s?"
)
# "Strict" forms: a period wherever they occur.
_STRICT: list[tuple[re.Pattern[str], Reader]] = [
    *_DATED,
    (re.compile(r"\b(?:in|during|throughout|for|year)\s+(?:the\s+year\s+)?" + _OPEN + _YEAR
                + _CLOSE + _NOT_YEAR_WORD, re.I),
     lambda m, now: year(int(m["year"]))),
    (re.compile(r"\bon\s+(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MON + r"\b" + _NO_YEAR, re.I),
     lambda m, now: latest(lambda y: day(y, _en_month(m), int(m["day"])), now, ended=False)),
    (re.compile(r"\bon\s+" + _MON + r"\s+" + _DAY + _CLOSE + _NO_YEAR, re.I),
     lambda m, now: latest(lambda y: day(y, _en_month(m), int(m["day"])), now, ended=False)),
    (re.compile(r"\b(?P<qual>in|during|last|previous|this|early|mid|late)(?:\s+|-)(?:in\s+)?" + _MON
                + _CLOSE, re.I),
     lambda m, now: _bare_month(m, now, m["qual"])),
    (re.compile(r"\b(?P<qual>in|during|last|previous|this)\s+(?:the\s+)?(?P<s>spring|summer|autumn|fall"
                r"|winter)\b", re.I),
     lambda m, now: which(m["qual"], lambda y: season(y, m["s"].casefold().replace(
         "fall", "autumn")), now)),
    (re.compile(r"\b(?P<qual>in|during|last|this)\s+(?:the\s+)?(?P<ord>first|second|third|"
                r"fourth)\s+quarter\b", re.I),
     lambda m, now: which(m["qual"], lambda y: quarter(y, _ORDINALS[m["ord"].casefold()]),
                           now)),
    (re.compile(r"\b(?P<qual>in|during|last|this)\s+" + _OPEN + r"Q(?P<q>[1-4])" + _CLOSE),
     lambda m, now: which(m["qual"], lambda y: quarter(y, int(m["q"])), now)),
    (re.compile(r"\b" + _NUM + r"\s+" + _UNIT + r"\s+ago\b", re.I),
     lambda m, now: _back(_number(m["n"]), m["unit"].casefold(), now)),
    # "the last month" ("over the last year") is the stretch up to now, not a calendar unit.
    (re.compile(r"(?<!the\s)\b(?P<qual>last|this|previous)\s+(?P<unit>week|month|quarter|year)\b",
                re.I),
     lambda m, now: (this if m["qual"].casefold() == "this" else
                     lambda unit, now: ago(1, unit, now))(m["unit"].casefold(), now)),
    (re.compile(r"\byesterday\b", re.I), lambda m, now: ago(1, "day", now)),
    (re.compile(r"(?P<n>\d{1,3}|" + _CN_NUM
                + r")(?P<unit>天|日|个?(?:星期|礼拜)|周|个月|个?季度|年)(?:之|以)?前"),
     lambda m, now: _back(_cn_number(m["n"]), _CN_UNITS[m["unit"].lstrip("个")], now)),
    (re.compile(r"(?P<qual>上|这|本)(?:一)?个?(?P<unit>星期|礼拜|周|月|季度)"),
     lambda m, now: (this if m["qual"] != "上" else lambda unit, now: ago(1, unit, now))(
         _CN_UNITS[m["unit"]], now)),
    (re.compile(r"昨天|昨日"), lambda m, now: ago(1, "day", now)),
    (re.compile(r"前天"), lambda m, now: ago(2, "day", now)),
    (re.compile(_CN_Q + r"(?<![\d个第])(?P<m>\d{1,2}|" + _CN_NUM + r")月份?(?P<d>\d{1,2}|"
                + _CN_NUM + r")[日号]"),
     lambda m, now: which(m["qual"], lambda y: day(y, _cn_number(m["m"]), _cn_number(m["d"])),
                           now)),
    (re.compile(_CN_Q + r"(?<![\d个第上下本这])(?P<m>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
                r"月"),
     lambda m, now: which(m["qual"], lambda y: month(y, _cn_number(m["m"])), now)),
    (re.compile(_CN_Q + r"的?(?P<s>[春夏秋冬])[天季]"),
     lambda m, now: (which(m["qual"], lambda y: season(y, _CN_SEASONS[m["s"]]), now)
                     if m["qual"] else None)),
    (re.compile(_CN_Q + r"第?(?P<q>[1-4一二三四])季度"),
     lambda m, now: which(m["qual"], lambda y: quarter(y, _cn_number(m["q"])), now)),
    (re.compile(r"\b(?P<qual>early|mid|late|end\s+of|beginning\s+of|first\s+half\s+of|second"
                r"\s+half\s+of)(?:\s+|-)(?P<which>this|last)\s+year\b", re.I),
     lambda m, now: part(now.year - (m["which"].casefold() == "last"),
                         " ".join(m["qual"].split()).removesuffix(" of"))),
    (re.compile(r"(?P<qual>今年|去年|前年)?的?(?P<p>年初|年中|年底|年末|上半年|下半年)"),
     lambda m, now: part(now.year - {"去年": 1, "前年": 2}.get(m["qual"] or "", 0), m["p"])),
    (re.compile(r"半年(?:之|以)?前"), lambda m, now: _back(6, "month", now)),
    (re.compile(r"\b(?:half\s+a\s+year|six\s+months)\s+ago\b", re.I),
     lambda m, now: _back(6, "month", now)),
    (re.compile(r"(?P<qual>今年|去年|前年)(?!的?(?:年初|年中|年底|年末|上半年|下半年))"),
     lambda m, now: which(m["qual"], year, now)),
    # a month as an adjective of a record ("my August charger order"), or "the order from May"
    (re.compile(r"\b(?:my|our|the|that|this)\s+" + _MON + r"\s+(?=(?:[a-z][a-z-]*\s+){0,2}"
                + _RECORD + r"\b)", re.I),
     _bare_reader),
    (re.compile(r"\b" + _RECORD + r"\s+(?:from|of)\s+" + _MON + _NO_YEAR + _CLOSE
                + r"(?!\s*(?:to|until|till|through|thru|and|-|–)\s)", re.I),
     _bare_reader),
]  # fmt: skip


_SPAN_OPEN = re.compile(r"\b(?:from|between)\s+|从", re.I)
_CONNECTOR = re.compile(r"\s*(?:to|until|till|through|thru|and|-|–|—|~|至|到)\s*", re.I)
_JOIN = re.compile(r"\s*(?:to|until|till|through|thru|-|–|—|~|至|到)\s*", re.I)


@dataclass(frozen=True, slots=True)
class _Found:
    begin: int
    end: int
    period: Period
    bare_month: int = 0  # a month named without a year: a span's other end may give it one


def _loose_at(text: str, pos: int, now: datetime) -> _Found | None:
    for pattern, reader in _LOOSE:
        match = pattern.match(text, pos)
        if match is not None and (period := reader(match, now)) is not None:
            bare = _MONTH_NUMBER[_g(match, "mon").casefold()] if reader is _bare_reader else 0
            return _Found(match.start(), match.end(), period, bare)
    return None


def _span(first: _Found, second: _Found, begin: int) -> _Found:
    if first.bare_month and not second.bare_month:  # "between March and May 2024"
        y = second.period.start.year
        dated = month(y, first.bare_month)
        if dated is not None and dated.start > second.period.start:
            dated = month(y - 1, first.bare_month)
        first = dataclasses.replace(first, period=dated or first.period)
    a, b = sorted((first.period, second.period), key=lambda p: p.start)
    label = f"{a.label} – {b.label}"
    whole = Period(a.start, max(a.end, b.end), label, asked_at=a.moment)
    return _Found(begin, second.end, whole)


def _found(text: str, now: datetime) -> Iterator[_Found]:
    for pattern, reader in _STRICT:
        for match in pattern.finditer(text):
            period = reader(match, now)
            if period is not None:
                yield _Found(match.start(), match.end(), period)
    for opener in _SPAN_OPEN.finditer(text):
        first = _loose_at(text, opener.end(), now)
        link = _CONNECTOR.match(text, first.end) if first is not None else None
        second = _loose_at(text, link.end(), now) if link is not None else None
        if first is not None and second is not None:
            yield _span(first, second, opener.start())


def read_period(text: str, now: datetime) -> Period | None:
    """The period ``text`` names (see the module docstring), or ``None``."""
    found = sorted(_found(text, now), key=lambda f: (-(f.end - f.begin), f.begin))
    kept: list[_Found] = []
    for candidate in found:  # the longest reading of each stretch of text wins
        if all(candidate.end <= k.begin or candidate.begin >= k.end for k in kept):
            kept.append(candidate)
    if not kept:
        return None
    kept.sort(key=lambda f: f.begin)
    for left, right in itertools.pairwise(kept):
        # "Q1 2024 to Q3 2024", "2019年至2021年": two periods joined by a connector are a span.
        link = _JOIN.fullmatch(text, left.end, right.begin)
        if link is not None and len(kept) == 2:
            return _span(left, right, left.begin).period
    if len(kept) == 1:
        return kept[0].period
    periods = sorted((k.period for k in kept), key=lambda p: p.start)
    label = " and ".join(k.period.label for k in kept)
    return Period(periods[0].start, max(p.end for p in periods), label)


_NOW_WORDS = re.compile(
    r"\b(?:now|currently|presently|at present|these days)\b|现在|目前|如今|当前"
)


def asks_about_now(text: str) -> bool:
    """Whether the question asks about the present state ("is my March order shipped now?"):
    then a period it names describes a thing, not the time asked about."""
    return _NOW_WORDS.search(text.casefold()) is not None


def valid_time(text: str, now: datetime) -> tuple[datetime | None, str]:
    """The valid time a question asks about, and the note its reply's reason carries.

    ``(moment, note)``: ``moment`` is the period's ``moment`` when the period has ended — the
    question is then answered, for each memory, with the version valid at that moment. It is
    ``None`` when the question names no period, when the period has not ended (the current
    state is the answer), lies ahead, or when the question asks about now
    (``asks_about_now``). The note names the period read and what was done with it ("period:
    March 2024 (as of 2024-03-31)"); empty when no period is named.
    """
    period = read_period(text, now)
    if period is None:
        return None, ""
    named = f"period: {period.label}"
    if period.start > now:
        return None, f"{named} (ahead of now: not applied)"
    if period.moment >= now:
        return None, f"{named} (not over: the current state)"
    if asks_about_now(text):
        return None, f"{named} (the question asks about now: not applied)"
    return period.moment, f"{named} (as of {period.moment.date().isoformat()})"
