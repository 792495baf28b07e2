import pytest

from librarydesk import FINE_CAP, days_late, due_day, late_fine


def test_due_day_default_and_custom_period():
    """A loan is due 14 days later by default, or after the given period."""
    assert (due_day(0), due_day(10), due_day(10, loan_days=1)) == (14, 24, 11)


def test_due_day_rejects_bad_input():
    """Negative days and loan periods below one day are invalid."""
    with pytest.raises(ValueError):
        due_day(-1)
    with pytest.raises(ValueError):
        due_day(5, loan_days=0)


def test_days_late_on_time_and_after():
    """Returning early or on the due day is 0 days late; the day after is 1."""
    assert [days_late(20, d) for d in (3, 19, 20, 21, 30)] == [0, 0, 0, 1, 10]


def test_fine_per_day_up_to_cap():
    """Fines are 25 cents per late day, capped at 500 (reached exactly at 20 days)."""
    assert [late_fine(10, r) for r in (10, 11, 14, 29, 30, 31, 100)] == [0, 25, 100, 475, 500, 500, FINE_CAP]


def test_fine_with_grace_and_custom_rates():
    """Grace days are free; only the days beyond them are charged."""
    assert late_fine(10, 11, grace=2) == 0
    assert late_fine(10, 12, grace=2) == 0
    assert late_fine(10, 13, grace=2) == 25
    assert late_fine(0, 5, per_day=10, cap=30) == 30
    assert late_fine(0, 2, per_day=10, cap=30) == 20


def test_fine_rejects_negative_parameters():
    """Negative rates, caps or grace periods raise ValueError."""
    for kwargs in ({"per_day": -1}, {"cap": -1}, {"grace": -1}):
        with pytest.raises(ValueError):
            late_fine(0, 5, **kwargs)
