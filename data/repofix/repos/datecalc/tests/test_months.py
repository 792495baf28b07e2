from datetime import date

import pytest

from datecalc import (
    add_months,
    days_in_month,
    end_of_month,
    is_leap_year,
    iso_week,
    nth_weekday,
    quarter,
    quarter_end,
    quarter_start,
)


def test_leap_year_rules():
    """Centuries are leap years only when divisible by 400."""
    assert [is_leap_year(y) for y in (2000, 1900, 2024, 2023, 2100)] == [True, False, True, False, False]


def test_days_in_month():
    """Month lengths including leap February."""
    assert [days_in_month(2024, m) for m in (1, 2, 4, 12)] == [31, 29, 30, 31]
    assert [days_in_month(2023, m) for m in range(1, 13)] == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    with pytest.raises(ValueError):
        days_in_month(2024, 0)
    with pytest.raises(ValueError):
        days_in_month(2024, 13)


@pytest.mark.parametrize(
    "start,n,expected",
    [
        (date(2024, 1, 31), 1, date(2024, 2, 29)),
        (date(2023, 1, 31), 1, date(2023, 2, 28)),
        (date(2024, 12, 15), 1, date(2025, 1, 15)),
        (date(2024, 3, 31), -1, date(2024, 2, 29)),
        (date(2024, 1, 15), -1, date(2023, 12, 15)),
        (date(2024, 5, 31), 12, date(2025, 5, 31)),
        (date(2024, 5, 31), 0, date(2024, 5, 31)),
        (date(2024, 8, 31), -18, date(2023, 2, 28)),
    ],
    ids=["jan31_leap", "jan31_common", "year_wrap", "back_clamp", "back_wrap", "twelve", "zero", "back18"],
)
def test_add_months(start, n, expected):
    """Adding months clamps to the end of shorter months and wraps years."""
    assert add_months(start, n) == expected


def test_end_of_month():
    """End of month respects month length and leap years."""
    assert end_of_month(date(2024, 2, 10)) == date(2024, 2, 29)
    assert end_of_month(date(2024, 12, 1)) == date(2024, 12, 31)


def test_nth_weekday_from_start():
    """Fourth Thursday of November 2024 is Thanksgiving, Nov 28."""
    assert nth_weekday(2024, 11, 3, 4) == date(2024, 11, 28)
    assert nth_weekday(2024, 1, 0, 1) == date(2024, 1, 1)
    assert nth_weekday(2024, 1, 1, 1) == date(2024, 1, 2)
    assert nth_weekday(2024, 1, 0, 5) == date(2024, 1, 29)


def test_nth_weekday_from_end():
    """Negative n counts from the end of the month."""
    assert nth_weekday(2024, 5, 0, -1) == date(2024, 5, 27)
    assert nth_weekday(2024, 5, 4, -1) == date(2024, 5, 31)
    assert nth_weekday(2024, 5, 4, -2) == date(2024, 5, 24)
    assert nth_weekday(2024, 1, 0, -5) == date(2024, 1, 1)
    assert nth_weekday(2024, 5, 6, -1) == date(2024, 5, 26)
    assert nth_weekday(2024, 9, 6, 1) == date(2024, 9, 1)


def test_nth_weekday_invalid():
    """Out-of-range occurrences and weekdays raise ValueError."""
    for args in [(2024, 2, 0, 5), (2024, 1, 0, 0), (2024, 1, 0, 6), (2024, 1, 0, -6), (2024, 1, 7, 1), (2024, 1, -1, 1)]:
        with pytest.raises(ValueError):
            nth_weekday(*args)


def test_iso_week_year_boundaries():
    """ISO weeks can belong to the neighbouring year."""
    assert iso_week(date(2024, 12, 30)) == (2025, 1)
    assert iso_week(date(2021, 1, 3)) == (2020, 53)
    assert iso_week(date(2024, 6, 15)) == (2024, 24)


def test_quarter_numbers():
    """Quarter boundaries fall after March, June and September."""
    days = [date(2024, 1, 1), date(2024, 3, 31), date(2024, 4, 1), date(2024, 9, 30), date(2024, 10, 1), date(2024, 12, 31)]
    assert [quarter(d) for d in days] == [1, 1, 2, 3, 4, 4]


def test_quarter_start_and_end():
    """Quarter start and end dates enclose the given date."""
    assert quarter_start(date(2024, 5, 15)) == date(2024, 4, 1)
    assert quarter_end(date(2024, 5, 15)) == date(2024, 6, 30)
    assert quarter_start(date(2024, 1, 1)) == date(2024, 1, 1)
    assert quarter_end(date(2024, 2, 29)) == date(2024, 3, 31)
    assert quarter_start(date(2024, 12, 31)) == date(2024, 10, 1)
    assert quarter_end(date(2024, 11, 2)) == date(2024, 12, 31)
