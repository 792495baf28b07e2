"""Weighted averages and letter grades."""
from __future__ import annotations

from typing import Mapping

from .model import Gradebook

DEFAULT_THRESHOLDS: dict[str, float] = {"A": 90.0, "B": 80.0, "C": 70.0, "D": 60.0}


def weighted_average(
    scores: Mapping[str, float], weights: Mapping[str, float], drop_lowest: int = 0
) -> float:
    """Weighted mean of percentage scores after dropping the ``drop_lowest`` lowest.

    Weights must be positive and missing scores count as 0.  Ties among the lowest scores are broken by
    assignment name.  The result is rounded to two decimals.
    """
    if drop_lowest < 0:
        raise ValueError("drop_lowest must not be negative")
    if drop_lowest >= len(weights):
        raise ValueError("drop_lowest must leave at least one assignment")
    if any(weight <= 0 for weight in weights.values()):
        raise ValueError("weights must be positive")
    ordered = sorted(weights, key=lambda name: (scores.get(name, 0.0), name))
    kept = ordered[drop_lowest:]
    total_weight = sum(weights[name] for name in kept)
    weighted = sum(scores.get(name, 0.0) * weights[name] for name in kept)
    return round(weighted / total_weight, 2)


def letter_grade(
    average: float, thresholds: Mapping[str, float] = DEFAULT_THRESHOLDS, fallback: str = "F"
) -> str:
    """The letter whose minimum the average reaches (minimums are inclusive)."""
    if average < 0 or average > 100:
        raise ValueError(f"average out of range: {average}")
    for letter, minimum in sorted(thresholds.items(), key=lambda item: -item[1]):
        if average >= minimum:
            return letter
    return fallback


def student_average(book: Gradebook, student: str, drop_lowest: int = 0) -> float:
    """A student's weighted average over all assignments in the book."""
    return weighted_average(book.scores(student), book.weights(), drop_lowest)
