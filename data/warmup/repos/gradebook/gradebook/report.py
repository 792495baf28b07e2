"""Class-wide reports: ranking and per-assignment statistics."""
from __future__ import annotations

from typing import Mapping, Sequence

from .grading import DEFAULT_THRESHOLDS, letter_grade, student_average
from .model import Gradebook


def class_rank(averages: Mapping[str, float]) -> list[tuple[int, str, float]]:
    """Rank students by average, best first; equal averages share a rank (1, 2, 2, 4)."""
    ordered = sorted(averages.items(), key=lambda item: (-item[1], item[0]))
    ranking: list[tuple[int, str, float]] = []
    for position, (name, average) in enumerate(ordered):
        if position > 0 and average == ordered[position - 1][1]:
            rank = ranking[-1][0]
        else:
            rank = position + 1
        ranking.append((rank, name, average))
    return ranking


def median(values: Sequence[float]) -> float:
    """The middle value, or the mean of the two middle values for even length."""
    if not values:
        raise ValueError("median of empty sequence")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def assignment_stats(book: Gradebook, assignment: str) -> dict[str, float]:
    """Count, missing, mean, min, max and median of the recorded percentages."""
    if assignment not in book.assignments:
        raise KeyError(assignment)
    values = []
    for student in book.students():
        value = book.percent(student, assignment)
        if value is not None:
            values.append(value)
    missing = len(book.students()) - len(values)
    if not values:
        return {"count": 0, "missing": missing}
    return {
        "count": len(values),
        "missing": missing,
        "mean": round(sum(values) / len(values), 2),
        "min": min(values),
        "max": max(values),
        "median": median(values),
    }


def report_card(
    book: Gradebook, drop_lowest: int = 0, thresholds: Mapping[str, float] = DEFAULT_THRESHOLDS
) -> dict[str, tuple[float, str]]:
    """Average and letter grade for every student."""
    card: dict[str, tuple[float, str]] = {}
    for student in book.students():
        average = student_average(book, student, drop_lowest)
        card[student] = (average, letter_grade(average, thresholds))
    return card
