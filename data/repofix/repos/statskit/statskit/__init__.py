"""Descriptive statistics without the stdlib statistics module."""

from .descriptive import StatsError, data_range, frequencies, mean, median, mode, modes, stdev, variance, zscores
from .distribution import bin_edges, histogram, iqr, percentile, quartiles
from .running import RunningStats

__all__ = [
    "RunningStats",
    "StatsError",
    "bin_edges",
    "data_range",
    "frequencies",
    "histogram",
    "iqr",
    "mean",
    "median",
    "mode",
    "modes",
    "percentile",
    "quartiles",
    "stdev",
    "variance",
    "zscores",
]
