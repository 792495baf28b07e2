from decimal import Decimal
from fractions import Fraction

import pytest

from moneyfmt import Money, allocate, percentage, round_half_even, split


def cents(parts: list[Money]) -> list[int]:
    return [p.amount_cents for p in parts]


def test_allocate_even_ratios_gives_extra_cent_to_first():
    """100 cents over three equal parts gives 34/33/33."""
    assert cents(allocate(Money(100, "USD"), [1, 1, 1])) == [34, 33, 33]


def test_allocate_uses_largest_remainder():
    """Leftover cents go to the largest fractional remainders, not the largest ratio."""
    assert cents(allocate(Money(5, "USD"), [1, 2, 3])) == [1, 2, 2]
    assert cents(allocate(Money(1001, "USD"), [70, 20, 10])) == [701, 200, 100]
    assert cents(allocate(Money(10, "USD"), [1, 3])) == [3, 7]


def test_allocate_negative_and_zero_ratio():
    """Negative amounts mirror positive ones; a zero ratio gets nothing."""
    assert cents(allocate(Money(-100, "USD"), [1, 1, 1])) == [-34, -33, -33]
    assert cents(allocate(Money(11, "USD"), [0, 1, 1])) == [0, 6, 5]
    assert cents(allocate(Money(0, "USD"), [2, 1])) == [0, 0]
    assert cents(allocate(Money(-1, "USD"), [1, 1])) == [-1, 0]
    assert allocate(Money(9, "EUR"), [1])[0] == Money(9, "EUR")


def test_allocate_rejects_bad_ratios():
    """Empty, negative or all-zero ratios are rejected."""
    for ratios in ([], [-1, 2], [0, 0]):
        with pytest.raises(ValueError):
            allocate(Money(100, "USD"), ratios)


def test_split_into_parts():
    """Splitting never loses a cent and puts the larger parts first."""
    assert cents(split(Money(10, "USD"), 4)) == [3, 3, 2, 2]
    assert cents(split(Money(7, "USD"), 1)) == [7]
    assert cents(split(Money(2, "USD"), 3)) == [1, 1, 0]
    with pytest.raises(ValueError):
        split(Money(10, "USD"), 0)
    with pytest.raises(ValueError):
        split(Money(10, "USD"), -2)


def test_round_half_even():
    """Ties go to the even neighbour, other values to the nearest int."""
    values = [Fraction(5, 2), Fraction(7, 2), Fraction(-5, 2), Fraction(-7, 2), Fraction(251, 100), Fraction(249, 100), Fraction(-12, 5), Fraction(4)]
    assert [round_half_even(v) for v in values] == [2, 4, -2, -4, 3, 2, -2, 4]


def test_percentage_exact_and_rounded():
    """Percentages are exact when possible and round half-even otherwise."""
    assert percentage(Money(1000, "USD"), 15) == Money(150, "USD")
    assert percentage(Money(125, "USD"), 10) == Money(12, "USD")
    assert percentage(Money(135, "USD"), 10) == Money(14, "USD")
    assert percentage(Money(1000, "USD"), "12.5") == Money(125, "USD")


def test_percentage_fractional_negative_and_float():
    """Fractional percentages, negative amounts, and floats are handled."""
    assert percentage(Money(300, "USD"), Decimal("0.5")) == Money(2, "USD")
    assert percentage(Money(100, "USD"), "0.5") == Money(0, "USD")
    assert percentage(Money(-125, "USD"), 10) == Money(-12, "USD")
    assert percentage(Money(200, "USD"), 0) == Money(0, "USD")
    with pytest.raises(TypeError):
        percentage(Money(100, "USD"), 0.5)
