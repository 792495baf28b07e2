"""Interval arithmetic with closed, open and half-open ends."""

from .intervalset import IntervalSet
from .model import Interval, closed_name, make_interval, parse_interval
from .ops import gaps, intersect_all, merge, subtract, total_length

__all__ = [
    "Interval",
    "IntervalSet",
    "closed_name",
    "gaps",
    "intersect_all",
    "make_interval",
    "merge",
    "parse_interval",
    "subtract",
    "total_length",
]
