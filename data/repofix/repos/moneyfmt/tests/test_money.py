import pytest

from moneyfmt import CurrencyMismatchError, Money, minor_units, total


def test_construction_validates_amount_and_currency():
    """Amounts must be ints and currencies three upper-case letters."""
    with pytest.raises(TypeError):
        Money(1.5, "USD")
    with pytest.raises(TypeError):
        Money(True, "USD")
    for code in ("usd", "US", "USDX", "U1D"):
        with pytest.raises(ValueError):
            Money(100, code)
    assert Money(-5, "EUR").amount_cents == -5


def test_add_and_subtract_same_currency():
    """Same-currency arithmetic works on the minor units."""
    assert Money(150, "USD") + Money(275, "USD") == Money(425, "USD")
    assert Money(150, "USD") - Money(275, "USD") == Money(-125, "USD")


def test_mixed_currency_arithmetic_is_refused():
    """Adding, subtracting or comparing different currencies raises."""
    usd, eur = Money(100, "USD"), Money(100, "EUR")
    for op in (lambda: usd + eur, lambda: usd - eur, lambda: usd < eur, lambda: usd <= eur):
        with pytest.raises(CurrencyMismatchError):
            op()
    with pytest.raises(TypeError):
        usd + 5


def test_negation_abs_and_multiplication():
    """Unary minus, abs and integer multiplication keep the currency."""
    m = Money(-250, "GBP")
    assert -m == Money(250, "GBP")
    assert abs(m) == Money(250, "GBP")
    assert m * 3 == Money(-750, "GBP")
    assert 2 * Money(7, "GBP") == Money(14, "GBP")
    assert Money(7, "GBP") * 0 == Money(0, "GBP")


def test_multiplication_requires_int():
    """Floats and bools are not valid multipliers."""
    with pytest.raises(TypeError):
        Money(100, "USD") * 1.5
    with pytest.raises(TypeError):
        Money(100, "USD") * True


def test_ordering():
    """Strict and non-strict comparisons behave at equality."""
    a, b = Money(100, "USD"), Money(101, "USD")
    assert (a < b, b < a, a < a) == (True, False, False)
    assert (a <= a, b <= a, a <= b) == (True, False, True)
    assert (b > a, a >= a) == (True, True)


def test_zero_and_sign_checks():
    """Zero is neither negative nor non-zero; one cent below zero is negative."""
    assert Money.zero("USD") == Money(0, "USD")
    assert [Money(c, "USD").is_zero() for c in (-1, 0, 1)] == [False, True, False]
    assert [Money(c, "USD").is_negative() for c in (-1, 0, 1)] == [True, False, False]


def test_total():
    """Totals start from zero and refuse foreign currencies."""
    assert total([], "USD") == Money(0, "USD")
    assert total([Money(5, "USD"), Money(-2, "USD"), Money(10, "USD")], "USD") == Money(13, "USD")
    with pytest.raises(CurrencyMismatchError):
        total([Money(5, "EUR")], "USD")


def test_minor_units():
    """Most currencies have two decimals, some zero or three."""
    assert [minor_units(c) for c in ("USD", "JPY", "KRW", "KWD", "BHD", "EUR")] == [2, 0, 0, 3, 3, 2]
