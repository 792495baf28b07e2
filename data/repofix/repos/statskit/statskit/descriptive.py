"""Central tendency and spread for finite samples."""

from __future__ import annotations

import math
from typing import Iterable, Sequence


class StatsError(ValueError):
    """Raised when a statistic is undefined for the given data."""


def _values(data: Iterable[float], minimum: int = 1) -> list[float]:
    values = list(data)
    if len(values) < minimum:
        raise StatsError(f"need at least {minimum} data point(s), got {len(values)}")
    return values


def mean(data: Iterable[float]) -> float:
    """Arithmetic mean."""
    values = _values(data)
    return sum(values) / len(values)


def median(data: Iterable[float]) -> float:
    """Middle value; the mean of the two middle values for even sizes."""
    values = sorted(_values(data))
    n = len(values)
    mid = n // 2
    if n % 2 == 1:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2


def frequencies(data: Iterable[float]) -> dict[float, int]:
    """How often each value occurs, in order of first appearance."""
    counts: dict[float, int] = {}
    for value in data:
        counts[value] = counts.get(value, 0) + 1
    return counts


def modes(data: Iterable[float]) -> list[float]:
    """All most-frequent values, in order of first appearance."""
    counts = frequencies(_values(data))
    top = max(counts.values())
    return [value for value, count in counts.items() if count == top]


def mode(data: Iterable[float]) -> float:
    """The most frequent value; ties go to the value seen first."""
    return modes(data)[0]


def data_range(data: Iterable[float]) -> float:
    """Difference between the largest and smallest value."""
    values = _values(data)
    return max(values) - min(values)


def variance(data: Iterable[float], sample: bool = True) -> float:
    """Sample (n-1) or population (n) variance."""
    ddof = 1 if sample else 0
    values = _values(data, minimum=ddof + 1)
    centre = sum(values) / len(values)
    squares = sum((x - centre) ** 2 for x in values)
    return squares / (len(values) - ddof)


def stdev(data: Iterable[float], sample: bool = True) -> float:
    """Square root of :func:`variance`."""
    return math.sqrt(variance(data, sample=sample))


def zscores(data: Sequence[float], sample: bool = False) -> list[float]:
    """Standard scores of every value (population stdev by default)."""
    values = list(data)
    centre = mean(values)
    spread = stdev(values, sample=sample)
    if spread == 0:
        raise StatsError("z-scores are undefined for constant data")
    return [(x - centre) / spread for x in values]
