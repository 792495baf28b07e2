"""Holiday and weekend rules for a business calendar."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Iterable

SATURDAY = 5
SUNDAY = 6
MAX_SCAN_DAYS = 366


class BusinessCalendar:
    """A set of holidays plus the weekdays treated as weekend."""

    def __init__(self, holidays: Iterable[date] = (), weekend: Iterable[int] = (SATURDAY, SUNDAY)) -> None:
        self.weekend = frozenset(weekend)
        for day in self.weekend:
            if not 0 <= day <= 6:
                raise ValueError(f"invalid weekday: {day}")
        if len(self.weekend) == 7:
            raise ValueError("a calendar needs at least one working weekday")
        self.holidays = frozenset(holidays)

    def is_weekend(self, d: date) -> bool:
        """Return True if *d* falls on a weekend day."""
        return d.weekday() in self.weekend

    def is_holiday(self, d: date) -> bool:
        """Return True if *d* is a registered holiday."""
        return d in self.holidays

    def is_business_day(self, d: date) -> bool:
        """Return True if *d* is neither weekend nor holiday."""
        return not self.is_weekend(d) and not self.is_holiday(d)

    def add_holiday(self, d: date) -> None:
        """Register an extra holiday."""
        self.holidays = self.holidays | {d}

    def _scan(self, d: date, step: int, include_self: bool) -> date:
        current = d if include_self else d + timedelta(days=step)
        for _ in range(MAX_SCAN_DAYS):
            if self.is_business_day(current):
                return current
            current += timedelta(days=step)
        raise ValueError("no business day found within a year")

    def next_business_day(self, d: date, include_self: bool = False) -> date:
        """Return the first business day after *d* (or *d* itself if allowed)."""
        return self._scan(d, 1, include_self)

    def previous_business_day(self, d: date, include_self: bool = False) -> date:
        """Return the last business day before *d* (or *d* itself if allowed)."""
        return self._scan(d, -1, include_self)
