"""Percentiles and histograms."""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Iterable

from .descriptive import StatsError, _values


def percentile(data: Iterable[float], p: float) -> float:
    """The *p*-th percentile (0..100) with linear interpolation between ranks."""
    if p < 0 or p > 100:
        raise StatsError(f"percentile must be within 0..100, got {p}")
    values = sorted(_values(data))
    rank = (len(values) - 1) * p / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(values) - 1)
    frac = rank - lo
    return values[lo] + (values[hi] - values[lo]) * frac


def quartiles(data: Iterable[float]) -> tuple[float, float, float]:
    """First, second and third quartile."""
    values = _values(data)
    return percentile(values, 25), percentile(values, 50), percentile(values, 75)


def iqr(data: Iterable[float]) -> float:
    """Interquartile range Q3 - Q1."""
    q1, _, q3 = quartiles(data)
    return q3 - q1


def bin_edges(lo: float, hi: float, bins: int) -> list[float]:
    """``bins + 1`` evenly spaced edges from *lo* to *hi*."""
    if bins < 1:
        raise StatsError("need at least one bin")
    if hi <= lo:
        raise StatsError("upper bound must exceed lower bound")
    width = (hi - lo) / bins
    return [lo + i * width for i in range(bins)] + [hi]


def histogram(
    data: Iterable[float],
    bins: int = 10,
    lo: float | None = None,
    hi: float | None = None,
) -> list[int]:
    """Count values per bin; bins are [left, right) except the last, which is closed.

    Values outside ``[lo, hi]`` are ignored. Bounds default to the data's min and max;
    constant data gets a unit-wide range.
    """
    values = list(data)
    if lo is None:
        lo = min(values) if values else 0.0
    if hi is None:
        hi = max(values) if values else lo + 1.0
    if hi == lo:
        hi = lo + 1.0
    edges = bin_edges(lo, hi, bins)
    counts = [0] * bins
    for x in values:
        if x < lo or x > hi:
            continue
        index = bisect_right(edges, x) - 1
        if index == bins:
            index = bins - 1
        counts[index] += 1
    return counts
