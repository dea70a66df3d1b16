"""Calendar periods: days, weeks, months, quarters, seasons and years as [start, end) in UTC,
named as a reader would name them, and those that lie relative to ``now``.

A week starts on Monday; seasons are northern and meteorological (spring March–May, …), and a
winter is the one that begins in December of its year. Pure: ``now`` is a parameter. Must not
import any I/O library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Period:
    """A named stretch of time: [start, end), UTC, with how the question named it."""

    start: datetime
    end: datetime
    label: str
    asked_at: datetime | None = None  # for a span: the last instant of its first part

    @property
    def moment(self) -> datetime:
        """The instant the question asks about (see ``periods``)."""
        return self.asked_at if self.asked_at is not None else self.end - _TICK


def day(y: int, m: int, d: int) -> Period | None:
    if not 1 <= y <= 9998:
        return None
    try:
        start = datetime(y, m, d, tzinfo=UTC)
    except ValueError:
        return None
    return Period(start, start + timedelta(days=1), f"{d} {MONTHS[m - 1].title()} {y}")


def month(y: int, m: int) -> Period | None:
    if not (1 <= m <= 12 and 1 <= y <= 9998):
        return None
    end = datetime(y + m // 12, m % 12 + 1, 1, tzinfo=UTC)
    return Period(datetime(y, m, 1, tzinfo=UTC), end, f"{MONTHS[m - 1].title()} {y}")


def quarter(y: int, q: int) -> Period | None:
    start, end = month(y, 3 * q - 2), month(y, 3 * q)
    if start is None or end is None:
        return None
    return Period(start.start, end.end, f"Q{q} {y}")


def year(y: int) -> Period | None:
    if not 1 <= y <= 9998:
        return None
    return Period(datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC), str(y))


# Parts of a year: the months each spans (first, last) and how the label names it.
PARTS = {
    "early": (1, 4, "early"), "beginning": (1, 4, "early"), "start": (1, 4, "early"),
    "mid": (5, 8, "mid"), "middle": (5, 8, "mid"), "late": (9, 12, "late"),
    "end": (10, 12, "end of"), "first half": (1, 6, "first half of"),
    "second half": (7, 12, "second half of"), "h1": (1, 6, "first half of"),
    "h2": (7, 12, "second half of"),
    "年初": (1, 3, "early"), "年中": (5, 8, "mid"), "年底": (10, 12, "end of"),
    "年末": (10, 12, "end of"), "上半年": (1, 6, "first half of"),
    "下半年": (7, 12, "second half of"),
}  # fmt: skip


def part(y: int, name: str) -> Period | None:
    """A part of year ``y`` ("early 2024": January–April; "下半年": July–December)."""
    first_month, last_month, label = PARTS[name.casefold()]
    first, last = month(y, first_month), month(y, last_month)
    if first is None or last is None:
        return None
    return Period(first.start, last.end, f"{label} {y}")


def season(y: int, name: str) -> Period | None:
    first, last = month(y, SEASONS[name]), month(y + (name == "winter"), SEASONS[name] % 12 + 2)
    if first is None or last is None:
        return None
    label = f"winter {y}–{(y + 1) % 100:02d}" if name == "winter" else f"{name} {y}"
    return Period(first.start, last.end, label)


def week(day: datetime) -> Period:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=day.weekday())
    return Period(start, start + timedelta(days=7), f"the week of {start.date().isoformat()}")


def latest(make: Callable[[int], Period | None], now: datetime, *, ended: bool) -> Period | None:
    """The most recent period ``make(year)`` that has begun (``ended``: that has ended)."""
    for y in (now.year, now.year - 1, now.year - 2):
        p = make(y)
        if p is not None and (p.end <= now if ended else p.start <= now):
            return p
    return None


def which(
    qualifier: str | None, make: Callable[[int], Period | None], now: datetime
) -> Period | None:
    """The period ``make(year)`` a qualifier picks: "this"/"今年" the current year's,
    "去年"/"前年" one/two years back, "last"/"previous" the latest that has ended, anything
    else the latest that has begun."""
    q = (qualifier or "").strip().casefold()
    if q in ("this", "今年"):
        return make(now.year)
    if q in ("去年",):
        return make(now.year - 1)
    if q in ("前年",):
        return make(now.year - 2)
    return latest(make, now, ended=q in ("last", "previous"))


def ago(n: int, unit: str, now: datetime) -> Period | None:
    """The calendar ``unit`` (day, week, month, quarter, year) ``n`` units before ``now``'s."""
    if unit == "day":
        moment = now - timedelta(days=n)
        return day(moment.year, moment.month, moment.day)
    if unit == "week":
        return week(now - timedelta(weeks=n))
    if unit == "year":
        return year(now.year - n)
    months = now.year * 12 + now.month - 1 - (3 * n if unit == "quarter" else n)
    if unit == "quarter":
        return quarter(months // 12, (months % 12) // 3 + 1)
    return month(months // 12, months % 12 + 1)


def this(unit: str, now: datetime) -> Period | None:
    """The calendar ``unit`` that holds ``now``."""
    if unit == "week":
        return week(now)
    if unit == "year":
        return year(now.year)
    if unit == "quarter":
        return quarter(now.year, (now.month - 1) // 3 + 1)
    return month(now.year, now.month)
