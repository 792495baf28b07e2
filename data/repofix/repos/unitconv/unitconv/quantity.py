"""Quantities: a float value attached to a :class:`Unit`."""

from __future__ import annotations

import math
import re

from .dimension import Dimension, IncompatibleUnitsError, UnitError
from .units import Unit, parse_unit

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def _as_unit(unit: str | Unit) -> Unit:
    return unit if isinstance(unit, Unit) else parse_unit(unit)


class Quantity:
    """A value in a unit, e.g. ``Quantity(12.5, "km/h")``."""

    def __init__(self, value: float, unit: str | Unit = "") -> None:
        self.value = float(value)
        self.unit = _as_unit(unit)

    @property
    def dimension(self) -> Dimension:
        return self.unit.dimension

    @property
    def si_value(self) -> float:
        """The value expressed in SI base units (m, kg, s)."""
        return self.value * self.unit.factor

    def _require_same_dimension(self, other: Dimension) -> None:
        if self.dimension != other:
            raise IncompatibleUnitsError(f"{self.dimension} is not compatible with {other}")

    def to(self, unit: str | Unit) -> Quantity:
        """Convert to another unit of the same dimension."""
        target = _as_unit(unit)
        self._require_same_dimension(target.dimension)
        return Quantity(self.si_value / target.factor, target)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.to(self.unit).value, self.unit)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.to(self.unit).value, self.unit)

    def __mul__(self, other: Quantity | float) -> Quantity:
        if isinstance(other, Quantity):
            return Quantity(self.value * other.value, self.unit * other.unit)
        return Quantity(self.value * other, self.unit)

    __rmul__ = __mul__

    def __truediv__(self, other: Quantity | float) -> Quantity:
        if isinstance(other, Quantity):
            return Quantity(self.value / other.value, self.unit / other.unit)
        return Quantity(self.value / other, self.unit)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        if self.dimension != other.dimension:
            return False
        return math.isclose(self.si_value, other.si_value, rel_tol=1e-9, abs_tol=1e-12)

    def __lt__(self, other: Quantity) -> bool:
        self._require_same_dimension(other.dimension)
        return self.si_value < other.si_value

    def __le__(self, other: Quantity) -> bool:
        return self < other or self == other

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit}".rstrip()

    def __repr__(self) -> str:
        return f"Quantity({self.value!r}, {str(self.unit)!r})"


def parse_quantity(text: str) -> Quantity:
    """Parse text such as ``"12.5 km/h"``, ``"-3m"`` or ``"1e3 g"``."""
    match = _QUANTITY.match(text)
    if match is None:
        raise UnitError(f"cannot parse quantity {text!r}")
    return Quantity(float(match.group(1)), match.group(2))


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a bare number between two compatible units."""
    return Quantity(value, from_unit).to(to_unit).value
