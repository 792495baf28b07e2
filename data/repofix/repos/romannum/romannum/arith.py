"""Arithmetic performed on Roman numerals."""

from __future__ import annotations

from collections.abc import Iterable

from .convert import RomanError, from_roman, to_roman


def add(a: str, b: str) -> str:
    """Return the numeral for a + b."""
    return to_roman(from_roman(a) + from_roman(b))


def sub(a: str, b: str) -> str:
    """Return the numeral for a - b; the result must stay positive."""
    result = from_roman(a) - from_roman(b)
    if result < 1:
        raise RomanError(f"{a} - {b} is not positive")
    return to_roman(result)


def mul(a: str, b: str) -> str:
    """Return the numeral for a * b."""
    return to_roman(from_roman(a) * from_roman(b))


def div(a: str, b: str) -> tuple[str, str]:
    """Integer-divide a by b, returning (quotient, remainder); '' means zero."""
    quotient, remainder = divmod(from_roman(a), from_roman(b))
    if quotient == 0:
        raise RomanError(f"{a} / {b} has no Roman quotient")
    return to_roman(quotient), to_roman(remainder) if remainder > 0 else ""


def compare(a: str, b: str) -> int:
    """Return -1, 0 or 1 as numeral a is less than, equal to or greater than b."""
    x, y = from_roman(a), from_roman(b)
    return (x > y) - (x < y)


def total(numerals: Iterable[str]) -> str:
    """Return the numeral for the sum of all numerals."""
    values = [from_roman(n) for n in numerals]
    if not values:
        raise RomanError("cannot total an empty sequence")
    return to_roman(sum(values))


def roman_range(start: int, stop: int, step: int = 1) -> list[str]:
    """Numerals for range(start, stop, step); every value must be in 1..3999."""
    if step == 0:
        raise ValueError("step must not be zero")
    return [to_roman(n) for n in range(start, stop, step)]
