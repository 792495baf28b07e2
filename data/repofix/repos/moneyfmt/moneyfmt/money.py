"""The Money value type: integer minor units plus an ISO currency code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

DEFAULT_MINOR_UNITS = 2
_MINOR_UNITS = {"JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3}


class CurrencyMismatchError(ValueError):
    """Raised when an operation mixes two currencies."""


def minor_units(currency: str) -> int:
    """Number of decimal digits of the currency's minor unit."""
    return _MINOR_UNITS.get(currency, DEFAULT_MINOR_UNITS)


@dataclass(frozen=True, order=False)
class Money:
    """An exact amount in minor units (e.g. cents) of one currency."""

    amount_cents: int
    currency: str

    def __post_init__(self) -> None:
        if isinstance(self.amount_cents, bool) or not isinstance(self.amount_cents, int):
            raise TypeError("amount_cents must be an int")
        code = self.currency
        if len(code) != 3 or not code.isalpha() or not code.isupper():
            raise ValueError(f"invalid currency code: {code!r}")

    @classmethod
    def zero(cls, currency: str) -> "Money":
        """A zero amount in *currency*."""
        return cls(0, currency)

    def _check(self, other: object) -> "Money":
        if not isinstance(other, Money):
            raise TypeError(f"expected Money, got {type(other).__name__}")
        if other.currency != self.currency:
            raise CurrencyMismatchError(f"{self.currency} vs {other.currency}")
        return other

    def __add__(self, other: "Money") -> "Money":
        return Money(self.amount_cents + self._check(other).amount_cents, self.currency)

    def __sub__(self, other: "Money") -> "Money":
        return Money(self.amount_cents - self._check(other).amount_cents, self.currency)

    def __neg__(self) -> "Money":
        return Money(-self.amount_cents, self.currency)

    def __abs__(self) -> "Money":
        return Money(abs(self.amount_cents), self.currency)

    def __mul__(self, factor: int) -> "Money":
        if isinstance(factor, bool) or not isinstance(factor, int):
            raise TypeError("money can only be multiplied by an int")
        return Money(self.amount_cents * factor, self.currency)

    __rmul__ = __mul__

    def __lt__(self, other: "Money") -> bool:
        return self.amount_cents < self._check(other).amount_cents

    def __le__(self, other: "Money") -> bool:
        return self.amount_cents <= self._check(other).amount_cents

    def is_zero(self) -> bool:
        """True for a zero amount."""
        return self.amount_cents == 0

    def is_negative(self) -> bool:
        """True for amounts below zero."""
        return self.amount_cents < 0


def total(items: Iterable[Money], currency: str) -> Money:
    """Sum of *items*, all of which must be in *currency*."""
    result = Money.zero(currency)
    for item in items:
        result = result + item
    return result
