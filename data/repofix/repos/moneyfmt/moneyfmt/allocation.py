"""Splitting money without losing cents, and percentages."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Sequence

from .money import Money


def allocate(money: Money, ratios: Sequence[int]) -> list[Money]:
    """Split *money* proportionally to *ratios* using the largest-remainder method.

    Leftover cents go to the parts with the largest fractional remainders; ties go
    to the earlier part. The parts always add up to the original amount.
    """
    if any(r < 0 for r in ratios):
        raise ValueError("ratios must be non-negative")
    weight = sum(ratios)
    if weight == 0:
        raise ValueError("ratios must not be empty or all zero")
    sign = -1 if money.amount_cents < 0 else 1
    cents = abs(money.amount_cents)
    shares = [cents * r // weight for r in ratios]
    remainders = [cents * r % weight for r in ratios]
    leftover = cents - sum(shares)
    order = sorted(range(len(ratios)), key=lambda i: (-remainders[i], i))
    for i in order[:leftover]:
        shares[i] += 1
    return [Money(sign * share, money.currency) for share in shares]


def split(money: Money, parts: int) -> list[Money]:
    """Split *money* into *parts* near-equal amounts, larger ones first.

    Raises ValueError when *parts* is below 1.
    """
    return allocate(money, [1] * parts)


def round_half_even(value: Fraction) -> int:
    """Round a fraction to the nearest int, ties to the even neighbour."""
    quotient, remainder = divmod(value.numerator, value.denominator)
    twice = 2 * remainder
    if twice > value.denominator:
        return quotient + 1
    if twice == value.denominator and quotient % 2 == 1:
        return quotient + 1
    return quotient


def percentage(money: Money, percent: int | str | Decimal) -> Money:
    """*percent* % of *money*, rounded half-even to the minor unit."""
    if isinstance(percent, float):
        raise TypeError("use str or Decimal for fractional percentages")
    exact = Fraction(money.amount_cents) * Fraction(Decimal(percent)) / 100
    return Money(round_half_even(exact), money.currency)
