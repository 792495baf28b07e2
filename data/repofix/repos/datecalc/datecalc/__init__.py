"""Business calendar helpers on datetime.date."""

from .business import add_business_days, business_days_between, business_days_in_month
from .holidays import BusinessCalendar
from .months import (
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

__all__ = [
    "BusinessCalendar",
    "add_business_days",
    "add_months",
    "business_days_between",
    "business_days_in_month",
    "days_in_month",
    "end_of_month",
    "is_leap_year",
    "iso_week",
    "nth_weekday",
    "quarter",
    "quarter_end",
    "quarter_start",
]
