from datetime import date, timedelta

import pytest

from datecalc import (
    BusinessCalendar,
    add_business_days,
    business_days_between,
    business_days_in_month,
)

# 2024-01-01 is a Monday.
MON = date(2024, 1, 1)
FRI = date(2024, 1, 5)
SAT = date(2024, 1, 6)
SUN = date(2024, 1, 7)
NEXT_MON = date(2024, 1, 8)


def test_weekend_detection():
    """Saturday and Sunday are weekend days, Friday is not."""
    cal = BusinessCalendar()
    assert [cal.is_weekend(d) for d in (FRI, SAT, SUN, NEXT_MON)] == [False, True, True, False]


def test_holiday_is_not_business_day():
    """A registered holiday is not a business day, neighbouring weekdays are."""
    cal = BusinessCalendar(holidays=[date(2024, 1, 3)])
    assert cal.is_holiday(date(2024, 1, 3)) is True
    assert cal.is_business_day(date(2024, 1, 3)) is False
    assert cal.is_business_day(date(2024, 1, 4)) is True


def test_add_holiday_later():
    """Holidays added after construction are honoured."""
    cal = BusinessCalendar()
    assert cal.is_business_day(FRI) is True
    cal.add_holiday(FRI)
    assert cal.is_business_day(FRI) is False
    assert cal.is_holiday(MON) is False


def test_invalid_weekend_definitions_raise():
    """Weekday numbers must be 0..6 and at least one day must be a working day."""
    with pytest.raises(ValueError):
        BusinessCalendar(weekend=(5, 7))
    with pytest.raises(ValueError):
        BusinessCalendar(weekend=(-1,))
    with pytest.raises(ValueError):
        BusinessCalendar(weekend=range(7))
    assert BusinessCalendar(weekend=(0, 6)).is_weekend(MON) is True


def test_custom_weekend_friday_saturday():
    """With a Friday/Saturday weekend, Sunday is a working day."""
    cal = BusinessCalendar(weekend=(4, 5))
    assert cal.is_business_day(SUN) is True
    assert cal.is_business_day(FRI) is False
    assert cal.next_business_day(date(2024, 1, 4)) == SUN


def test_next_and_previous_business_day():
    """Scanning skips weekends; include_self keeps a business day as is."""
    cal = BusinessCalendar()
    assert cal.next_business_day(FRI) == NEXT_MON
    assert cal.next_business_day(FRI, include_self=True) == FRI
    assert cal.next_business_day(SAT, include_self=True) == NEXT_MON
    assert cal.previous_business_day(NEXT_MON) == FRI
    assert cal.previous_business_day(SUN, include_self=True) == FRI


def test_scan_limit_is_one_leap_year():
    """The scan looks up to 366 days ahead and gives up after that."""
    cal = BusinessCalendar(holidays=[MON + timedelta(days=i) for i in range(1, 366)])
    assert cal.next_business_day(MON) == date(2025, 1, 1)
    cal.add_holiday(date(2025, 1, 1))
    with pytest.raises(ValueError):
        cal.next_business_day(MON)


def test_add_business_days_forward_over_weekend():
    """Adding business days from Friday skips the weekend."""
    cal = BusinessCalendar()
    assert add_business_days(cal, FRI, 1) == NEXT_MON
    assert add_business_days(cal, FRI, 5) == date(2024, 1, 12)
    assert add_business_days(cal, SAT, 1) == NEXT_MON


def test_add_business_days_backward():
    """Negative counts move backwards over weekends and holidays."""
    cal = BusinessCalendar(holidays=[FRI])
    assert add_business_days(cal, NEXT_MON, -1) == date(2024, 1, 4)
    assert add_business_days(cal, NEXT_MON, -2) == date(2024, 1, 3)
    assert add_business_days(cal, date(2024, 1, 3), -2) == MON


def test_add_zero_business_days_rolls_forward():
    """Adding zero days keeps a business day and rolls a weekend to Monday."""
    cal = BusinessCalendar()
    assert add_business_days(cal, FRI, 0) == FRI
    assert add_business_days(cal, SUN, 0) == NEXT_MON


def test_add_business_days_skips_holiday():
    """Christmas as holiday pushes Dec 24 + 1 to Dec 26."""
    cal = BusinessCalendar(holidays=[date(2024, 12, 25)])
    assert add_business_days(cal, date(2024, 12, 24), 1) == date(2024, 12, 26)
    assert add_business_days(cal, date(2024, 12, 26), -1) == date(2024, 12, 24)


def test_between_default_excludes_start_includes_end():
    """Monday to next Monday counts five business days by default."""
    cal = BusinessCalendar()
    assert business_days_between(cal, MON, NEXT_MON) == 5
    assert business_days_between(cal, MON, NEXT_MON, include_start=True) == 6
    assert business_days_between(cal, MON, NEXT_MON, include_end=False) == 4
    assert business_days_between(cal, MON, NEXT_MON, include_start=True, include_end=False) == 5


def test_between_reversed_is_negative():
    """Swapping the dates negates the count and keeps each flag on its own date."""
    cal = BusinessCalendar()
    assert business_days_between(cal, NEXT_MON, MON) == -5
    assert business_days_between(cal, SAT, date(2024, 1, 15)) == 6
    assert business_days_between(cal, date(2024, 1, 15), SAT) == -5


def test_between_same_day():
    """The same day counts once only when both ends are inclusive and it is a business day."""
    cal = BusinessCalendar()
    assert business_days_between(cal, FRI, FRI) == 0
    assert business_days_between(cal, FRI, FRI, include_start=True) == 1
    assert business_days_between(cal, FRI, FRI, include_start=True, include_end=False) == 0
    assert business_days_between(cal, SAT, SAT, include_start=True) == 0


def test_between_with_holidays():
    """Holidays inside the range are not counted."""
    cal = BusinessCalendar(holidays=[date(2024, 1, 2), date(2024, 1, 3)])
    assert business_days_between(cal, MON, FRI) == 2
    assert business_days_between(cal, MON, FRI, include_start=True) == 3


def test_business_days_in_month():
    """February 2024 has 21 business days from the 1st to the 29th."""
    days = business_days_in_month(BusinessCalendar(), 2024, 2)
    assert (len(days), days[0], days[-1]) == (21, date(2024, 2, 1), date(2024, 2, 29))
    jan = business_days_in_month(BusinessCalendar(holidays=[MON]), 2024, 1)
    assert (len(jan), jan[0], jan[-1]) == (22, date(2024, 1, 2), date(2024, 1, 31))
    with pytest.raises(ValueError):
        business_days_in_month(BusinessCalendar(), 2024, 13)
    with pytest.raises(ValueError):
        business_days_in_month(BusinessCalendar(), 2024, 0)
