"""The unit table and parsing of unit expressions such as ``kg*m/s^2``."""

from __future__ import annotations

from dataclasses import dataclass

from .dimension import DIMENSIONLESS, LENGTH, MASS, TIME, Dimension, UnitError, UnknownUnitError

# symbol -> (factor to the SI base unit, dimension)
UNITS: dict[str, tuple[float, Dimension]] = {
    "m": (1.0, LENGTH),
    "km": (1000.0, LENGTH),
    "cm": (0.01, LENGTH),
    "mm": (0.001, LENGTH),
    "in": (0.0254, LENGTH),
    "ft": (0.3048, LENGTH),
    "mi": (1609.344, LENGTH),
    "g": (0.001, MASS),
    "kg": (1.0, MASS),
    "lb": (0.45359237, MASS),
    "s": (1.0, TIME),
    "min": (60.0, TIME),
    "h": (3600.0, TIME),
}


@dataclass(frozen=True)
class Unit:
    """A product of table units raised to integer powers."""

    terms: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_terms(cls, terms: dict[str, int]) -> Unit:
        """Build a unit, dropping symbols whose exponent cancelled to zero."""
        return cls(tuple((name, exp) for name, exp in terms.items() if exp != 0))

    @property
    def factor(self) -> float:
        """Multiplier that converts a value in this unit to SI base units."""
        result = 1.0
        for name, exp in self.terms:
            result *= UNITS[name][0] ** exp
        return result

    @property
    def dimension(self) -> Dimension:
        result = DIMENSIONLESS
        for name, exp in self.terms:
            result = result * UNITS[name][1] ** exp
        return result

    def _combine(self, other: Unit, sign: int) -> Unit:
        terms = dict(self.terms)
        for name, exp in other.terms:
            terms[name] = terms.get(name, 0) + sign * exp
        return Unit.from_terms(terms)

    def __mul__(self, other: Unit) -> Unit:
        return self._combine(other, 1)

    def __truediv__(self, other: Unit) -> Unit:
        return self._combine(other, -1)

    def __str__(self) -> str:
        def fmt(name: str, exp: int) -> str:
            return name if exp == 1 else f"{name}^{exp}"

        top = [fmt(name, exp) for name, exp in self.terms if exp > 0]
        bottom = [fmt(name, -exp) for name, exp in self.terms if exp < 0]
        if not bottom:
            return "*".join(top)
        return ("*".join(top) or "1") + "/" + "*".join(bottom)


def parse_token(token: str) -> tuple[str, int]:
    """Parse ``name`` or ``name^exp`` into (symbol, exponent)."""
    name, caret, power = token.strip().partition("^")
    if name not in UNITS:
        raise UnknownUnitError(f"unknown unit {name!r}")
    if not caret:
        return name, 1
    try:
        exp = int(power)
    except ValueError:
        raise UnitError(f"bad exponent in {token!r}") from None
    if exp == 0:
        raise UnitError(f"zero exponent in {token!r}")
    return name, exp


def parse_unit(text: str) -> Unit:
    """Parse ``a*b/c*d`` (everything after the first '/' is in the denominator)."""
    text = text.strip()
    if text in ("", "1"):
        return Unit()
    terms: dict[str, int] = {}
    for position, part in enumerate(text.split("/")):
        part = part.strip()
        if not part:
            raise UnitError(f"empty unit in {text!r}")
        if part == "1" and position == 0:
            continue
        sign = 1 if position == 0 else -1
        for token in part.split("*"):
            name, exp = parse_token(token)
            terms[name] = terms.get(name, 0) + sign * exp
    return Unit.from_terms(terms)
