"""Money in integer minor units: arithmetic, allocation, parsing and formatting."""

from .allocation import allocate, percentage, round_half_even, split
from .money import CurrencyMismatchError, Money, minor_units, total
from .text import MoneyFormatError, format_money, group_thousands, parse_money

__all__ = [
    "CurrencyMismatchError",
    "Money",
    "MoneyFormatError",
    "allocate",
    "format_money",
    "group_thousands",
    "minor_units",
    "parse_money",
    "percentage",
    "round_half_even",
    "split",
    "total",
]
