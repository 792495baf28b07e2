"""Business-day arithmetic on top of a BusinessCalendar."""

from __future__ import annotations

from datetime import date, timedelta

from .holidays import BusinessCalendar
from .months import days_in_month


def add_business_days(cal: BusinessCalendar, start: date, n: int) -> date:
    """Move *n* business days from *start*; negative *n* moves backwards.

    With ``n == 0`` a non-business start rolls forward to the next business day.
    """
    if n == 0:
        return cal.next_business_day(start, include_self=True)
    current = start
    for _ in range(abs(n)):
        current = cal.next_business_day(current) if n > 0 else cal.previous_business_day(current)
    return current


def business_days_between(
    cal: BusinessCalendar,
    a: date,
    b: date,
    include_start: bool = False,
    include_end: bool = True,
) -> int:
    """Count business days from *a* to *b*; the result is negative when b < a."""
    sign = 1
    if b < a:
        a, b = b, a
        include_start, include_end = include_end, include_start
        sign = -1
    total = 0
    span = (b - a).days
    for offset in range(span + 1):
        day = a + timedelta(days=offset)
        if offset == 0 and not include_start:
            continue
        if offset == span and not include_end:
            continue
        if cal.is_business_day(day):
            total += 1
    return sign * total


def business_days_in_month(cal: BusinessCalendar, year: int, month: int) -> list[date]:
    """List every business day of the given month."""
    length = days_in_month(year, month)
    first = date(year, month, 1)
    days: list[date] = []
    for offset in range(length):
        day = first + timedelta(days=offset)
        if cal.is_business_day(day):
            days.append(day)
    return days
