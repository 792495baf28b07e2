"""Due dates and late fines (amounts in cents, days as integers)."""
from __future__ import annotations

LOAN_DAYS = 14
FINE_PER_DAY = 25
FINE_CAP = 500


def due_day(day: int, loan_days: int = LOAN_DAYS) -> int:
    """Day on which a loan made on ``day`` must be back."""
    if day < 0:
        raise ValueError("day must be non-negative")
    if loan_days < 1:
        raise ValueError("loan period must be at least one day")
    return day + loan_days


def days_late(due: int, returned: int) -> int:
    """Whole days past the due day; returning on the due day is on time."""
    return max(0, returned - due)


def late_fine(
    due: int,
    returned: int,
    per_day: int = FINE_PER_DAY,
    cap: int = FINE_CAP,
    grace: int = 0,
) -> int:
    """Fine for a return: days late beyond ``grace`` times ``per_day``, at most ``cap``."""
    if per_day < 0 or cap < 0 or grace < 0:
        raise ValueError("fine parameters must be non-negative")
    late = days_late(due, returned)
    if late <= grace:
        return 0
    return min((late - grace) * per_day, cap)
