"""Month, week and quarter helpers."""

from __future__ import annotations

from datetime import date, timedelta

_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap_year(year: int) -> bool:
    """Gregorian leap-year rule."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    """Number of days in the given month."""
    if month < 1 or month > 12:
        raise ValueError(f"invalid month: {month}")
    if month == 2 and is_leap_year(year):
        return 29
    return _DAYS[month - 1]


def add_months(d: date, n: int) -> date:
    """Shift *d* by *n* months, clamping the day to the target month's end."""
    index = d.year * 12 + (d.month - 1) + n
    year, month0 = divmod(index, 12)
    month = month0 + 1
    day = min(d.day, days_in_month(year, month))
    return date(year, month, day)


def end_of_month(d: date) -> date:
    """Last day of the month containing *d*."""
    return date(d.year, d.month, days_in_month(d.year, d.month))


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The *n*-th given weekday (0=Mon) of a month; n=-1 means the last one."""
    if not 0 <= weekday <= 6:
        raise ValueError(f"invalid weekday: {weekday}")
    if n == 0:
        raise ValueError(f"invalid occurrence: {n}")
    if n > 0:
        first = date(year, month, 1)
        shift = (weekday - first.weekday()) % 7
        result = first + timedelta(days=shift + 7 * (n - 1))
    else:
        last = date(year, month, days_in_month(year, month))
        shift = (last.weekday() - weekday) % 7
        result = last - timedelta(days=shift + 7 * (-n - 1))
    if result.month != month:
        raise ValueError(f"month has no occurrence {n} of weekday {weekday}")
    return result


def iso_week(d: date) -> tuple[int, int]:
    """Return (ISO year, ISO week number) of *d*."""
    iso = d.isocalendar()
    return iso[0], iso[1]


def quarter(d: date) -> int:
    """Calendar quarter 1..4 of *d*."""
    return (d.month - 1) // 3 + 1


def quarter_start(d: date) -> date:
    """First day of the quarter containing *d*."""
    return date(d.year, 3 * (quarter(d) - 1) + 1, 1)


def quarter_end(d: date) -> date:
    """Last day of the quarter containing *d*."""
    month = 3 * quarter(d)
    return date(d.year, month, days_in_month(d.year, month))
