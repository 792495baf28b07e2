"""Dimension vectors over (length, mass, time) and unit errors."""

from __future__ import annotations

from dataclasses import dataclass


class UnitError(ValueError):
    """Raised for malformed unit expressions."""


class UnknownUnitError(UnitError):
    """Raised when a unit symbol is not in the table."""


class IncompatibleUnitsError(UnitError):
    """Raised when converting or combining units of different dimensions."""


@dataclass(frozen=True)
class Dimension:
    """Integer exponents of length, mass and time."""

    length: int = 0
    mass: int = 0
    time: int = 0

    def __mul__(self, other: Dimension) -> Dimension:
        return Dimension(self.length + other.length, self.mass + other.mass, self.time + other.time)

    def __truediv__(self, other: Dimension) -> Dimension:
        return Dimension(self.length - other.length, self.mass - other.mass, self.time - other.time)

    def __pow__(self, exponent: int) -> Dimension:
        return Dimension(self.length * exponent, self.mass * exponent, self.time * exponent)

    def is_dimensionless(self) -> bool:
        """True when every exponent is zero."""
        return self.length == 0 and self.mass == 0 and self.time == 0

    def __str__(self) -> str:
        parts = []
        for symbol, exponent in zip("LMT", (self.length, self.mass, self.time)):
            if exponent == 0:
                continue
            parts.append(symbol if exponent == 1 else f"{symbol}^{exponent}")
        return " ".join(parts) or "1"


DIMENSIONLESS = Dimension()
LENGTH = Dimension(length=1)
MASS = Dimension(mass=1)
TIME = Dimension(time=1)
