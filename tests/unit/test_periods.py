"""periods: the period a question names (English and Chinese), and the valid time it asks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.periods import (
    asks_about_now,
    read_period,
    valid_time,
)
from memstream.services.domain.timespans import MONTHS

NOW = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)


def read(text: str, now: datetime = NOW) -> tuple[str, str, str] | None:
    period = read_period(text, now)
    if period is None:
        return None
    return period.label, period.start.date().isoformat(), period.end.date().isoformat()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # dates
        ("what was the price on 2024-03-03?", ("3 March 2024", "2024-03-03", "2024-03-04")),
        ("the order of 3 March 2024", ("3 March 2024", "2024-03-03", "2024-03-04")),
        ("on the 3rd of March, 2024", ("3 March 2024", "2024-03-03", "2024-03-04")),
        ("March 3rd, 2024", ("3 March 2024", "2024-03-03", "2024-03-04")),
        ("2024年3月3日的价格", ("3 March 2024", "2024-03-03", "2024-03-04")),
        ("3月5号下的单", ("5 March 2026", "2026-03-05", "2026-03-06")),
        ("what did I buy on May 3", ("3 May 2026", "2026-05-03", "2026-05-04")),
        ("yesterday", ("3 December 2026", "2026-12-03", "2026-12-04")),
        ("昨天的订单", ("3 December 2026", "2026-12-03", "2026-12-04")),
        # months
        ("the price in March 2024", ("March 2024", "2024-03-01", "2024-04-01")),
        ("what did it cost in nov. 1991", ("November 1991", "1991-11-01", "1991-12-01")),
        ("what did I buy in March?", ("March 2026", "2026-03-01", "2026-04-01")),
        ("in December", ("December 2026", "2026-12-01", "2027-01-01")),  # begun: this one
        ("last December", ("December 2025", "2025-12-01", "2026-01-01")),  # ended: the last
        ("this March", ("March 2026", "2026-03-01", "2026-04-01")),
        ("mid-March", ("March 2026", "2026-03-01", "2026-04-01")),
        ("三月的价格", ("March 2026", "2026-03-01", "2026-04-01")),
        ("十二月的订单", ("December 2026", "2026-12-01", "2027-01-01")),
        ("2024年3月的价格", ("March 2024", "2024-03-01", "2024-04-01")),
        ("去年三月", ("March 2025", "2025-03-01", "2025-04-01")),
        ("last month", ("November 2026", "2026-11-01", "2026-12-01")),
        ("上个月买了什么", ("November 2026", "2026-11-01", "2026-12-01")),
        ("本月", ("December 2026", "2026-12-01", "2027-01-01")),
        # quarters
        ("revenue in Q1 2024", ("Q1 2024", "2024-01-01", "2024-04-01")),
        ("2024 Q3", ("Q3 2024", "2024-07-01", "2024-10-01")),
        ("the first quarter of 2024", ("Q1 2024", "2024-01-01", "2024-04-01")),
        ("2024年第一季度", ("Q1 2024", "2024-01-01", "2024-04-01")),
        ("last quarter", ("Q3 2026", "2026-07-01", "2026-10-01")),
        ("上季度", ("Q3 2026", "2026-07-01", "2026-10-01")),
        ("in the second quarter", ("Q2 2026", "2026-04-01", "2026-07-01")),
        # years
        ("in 2023", ("2023", "2023-01-01", "2024-01-01")),
        ("in the year 2019", ("2019", "2019-01-01", "2020-01-01")),
        ("last year", ("2025", "2025-01-01", "2026-01-01")),
        ("去年的价格", ("2025", "2025-01-01", "2026-01-01")),
        ("前年", ("2024", "2024-01-01", "2025-01-01")),
        ("今年", ("2026", "2026-01-01", "2027-01-01")),
        ("2023年的价格", ("2023", "2023-01-01", "2024-01-01")),
        # seasons
        ("last spring", ("spring 2026", "2026-03-01", "2026-06-01")),
        ("last winter", ("winter 2025–26", "2025-12-01", "2026-03-01")),
        ("summer of 2021", ("summer 2021", "2021-06-01", "2021-09-01")),
        ("去年夏天", ("summer 2025", "2025-06-01", "2025-09-01")),
        # relative
        ("two months ago", ("October 2026", "2026-10-01", "2026-11-01")),
        ("3 weeks ago", ("the week of 2026-11-09", "2026-11-09", "2026-11-16")),
        ("a couple of weeks ago", ("the week of 2026-11-16", "2026-11-16", "2026-11-23")),
        ("last week", ("the week of 2026-11-23", "2026-11-23", "2026-11-30")),
        ("上周", ("the week of 2026-11-23", "2026-11-23", "2026-11-30")),
        ("三个月前", ("September 2026", "2026-09-01", "2026-10-01")),
        ("两年前", ("December 2024", "2024-12-01", "2025-01-01")),
        ("a year ago", ("December 2025", "2025-12-01", "2026-01-01")),
        # spans
        ("who led it from Nov 1991 to 2002?", ("November 1991 – 2002", "1991-11-01", "2003-01-01")),
        ("between March and May 2024", ("March 2024 – May 2024", "2024-03-01", "2024-06-01")),
        ("Q1 2024 to Q3 2024", ("Q1 2024 – Q3 2024", "2024-01-01", "2024-10-01")),
        ("从2019年到2021年", ("2019 – 2021", "2019-01-01", "2022-01-01")),
        ("2019年至2021年", ("2019 – 2021", "2019-01-01", "2022-01-01")),
        # several separate periods: the span that covers them
        ("in March 2025 and in May 2025", ("March 2025 and May 2025", "2025-03-01", "2025-06-01")),
    ],
)
def test_reads_the_period_a_question_names(text: str, expected: tuple[str, str, str]) -> None:
    assert read(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "May I ask where my order is?",
        "this may be the wrong size",
        "the protesters march to the square",
        "is the 2023 model quieter?",
        "what does the XR-2000 cost?",
        "ticket Q1-ABC is open",
        "the AQ1 2024 filter",
        "how much is that in 2024 dollars?",
        "it sold in 2000 stores",
        "2023年款的手机还有货吗",
        "order 2024-0042",
        "what is 2024 divided by 8?",
        "which model has 2000 mAh?",
        "why is the sky blue?",
        "我的订单到哪了",
        "I need it in three months",
        "what did I buy in the last month?",  # the stretch up to now: the current state
        "how much did I spend over the last year",
        "what did I leave in Jan's car?",
        "",
    ],
)
def test_what_only_looks_like_a_period_is_not_read(text: str) -> None:
    assert read_period(text, NOW) is None


def test_a_span_is_asked_at_the_end_of_its_first_part() -> None:
    # A state that held "from 1998 to 2001" began by the end of 1998 and ended within 2001.
    period = read_period("Which team did he play for from 1998 to 2001?", NOW)
    assert period is not None
    assert period.moment == datetime(1999, 1, 1, tzinfo=UTC) - timedelta(microseconds=1)
    single = read_period("What was the price in March 2024?", NOW)
    assert single is not None
    assert single.moment == datetime(2024, 4, 1, tzinfo=UTC) - timedelta(microseconds=1)


def test_valid_time_applies_only_a_period_that_has_ended() -> None:
    as_of, note = valid_time("What was the price in March 2024?", NOW)
    assert as_of == datetime(2024, 4, 1, tzinfo=UTC) - timedelta(microseconds=1)
    assert note == "period: March 2024 (as of 2024-03-31)"
    assert valid_time("What is the price?", NOW) == (None, "")
    assert valid_time("What did I buy this year?", NOW) == (
        None,
        "period: 2026 (not over: the current state)",
    )
    assert valid_time("the price in March 2027", NOW) == (
        None,
        "period: March 2027 (ahead of now: not applied)",
    )
    assert valid_time("Is the order I placed in March 2026 shipped now?", NOW) == (
        None,
        "period: March 2026 (the question asks about now: not applied)",
    )
    assert asks_about_now("现在还有货吗") and not asks_about_now("what did I know then")


# ---- properties --------------------------------------------------------------------------

moments = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC)
)
texts = st.text(
    alphabet=st.sampled_from(list("abcdefgMmQqy0123456789 -/,.年月日号上去前今个周季度春夏")),
    max_size=40,
)


@given(texts, moments)
def test_any_period_read_starts_before_it_ends_and_its_moment_lies_within(
    text: str, now: datetime
) -> None:
    period = read_period(text, now)
    if period is not None:
        assert period.start < period.end
        assert period.start <= period.moment < period.end
        assert period.start.tzinfo is not None


past_tense = st.one_of(
    st.builds(
        lambda n, unit: f"what happened {n} {unit}{'s' if n > 1 else ''} ago?",
        st.integers(1, 40),
        st.sampled_from(["day", "week", "month", "quarter", "year"]),
    ),
    st.builds(
        lambda n, unit: f"{n}{unit}前发生了什么",
        st.integers(1, 40),
        st.sampled_from(["天", "周", "个星期", "个月", "个季度", "年"]),
    ),
    st.builds(
        lambda word, what: f"{word} {what}",
        st.sampled_from(["last", "previous"]),
        st.sampled_from(["week", "month", "quarter", "year", "spring", "summer", "autumn"]),
    ),
    st.builds(lambda m: f"last {m.title()}", st.sampled_from(MONTHS)),
    st.sampled_from(["yesterday", "去年", "前年", "上周", "上个月", "上季度", "昨天", "前天"]),
)


@given(past_tense, moments)
def test_a_past_relative_period_has_ended_by_now(text: str, now: datetime) -> None:
    period = read_period(text, now)
    assert period is not None, text
    assert period.end <= now
    as_of, note = valid_time(text, now)
    assert as_of == period.moment and note.startswith(f"period: {period.label} (as of")


@given(st.sampled_from(MONTHS), moments)
def test_a_month_without_a_year_is_the_latest_that_has_begun(month: str, now: datetime) -> None:
    for text in (f"what did I buy in {month.title()}?", f"{MONTHS.index(month) + 1}月买了什么"):
        period = read_period(text, now)
        assert period is not None, text
        assert period.start <= now
        a_year_later = period.start.replace(year=period.start.year + 1)
        assert a_year_later > now


days = st.dates(min_value=datetime(1971, 1, 1).date(), max_value=datetime(2099, 12, 31).date())


@given(days, st.integers(0, 6))
def test_a_written_date_reads_back_as_that_day(day: datetime, form: int) -> None:
    name = MONTHS[day.month - 1].title()
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10 if day.day not in (11, 12, 13) else 0)
    written = [
        f"what happened on {day.isoformat()}?",
        f"the order of {day.day} {name} {day.year}",
        f"{name} {day.day}{suffix or 'th'}, {day.year}",
        f"{day.year}年{day.month}月{day.day}日的订单",
        f"{day.year}年{day.month}月{day.day}号",
        f"on the {day.day}{suffix or 'th'} of {name} {day.year}",
        f"{day.year}/{day.month}/{day.day}",
    ][form]
    period = read_period(written, NOW)
    assert period is not None, written
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert (period.start, period.end) == (start, start + timedelta(days=1)), written
    assert period.label == f"{day.day} {name} {day.year}"


@given(days, st.integers(0, 3))
def test_a_written_month_reads_back_as_that_month(day: datetime, form: int) -> None:
    name = MONTHS[day.month - 1]
    written = [
        f"what was the price in {name.title()} {day.year}?",
        f"what did it cost in {name[:3]} {day.year}",
        f"{day.year}年{day.month}月的价格",
        f"the price in {name} of {day.year}",
    ][form]
    period = read_period(written, NOW)
    assert period is not None, written
    assert period.label == f"{name.title()} {day.year}"
    assert period.start == datetime(day.year, day.month, 1, tzinfo=UTC)
