"""Assignments, students and the scores they earned."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Assignment:
    """A graded piece of work with a relative weight and a maximum score."""

    name: str
    weight: float = 1.0
    max_points: float = 100.0


class Gradebook:
    """Stores raw points per student and assignment."""

    def __init__(self) -> None:
        self.assignments: dict[str, Assignment] = {}
        self._points: dict[str, dict[str, float]] = {}

    def add_assignment(self, name: str, weight: float = 1.0, max_points: float = 100.0) -> Assignment:
        """Register an assignment; weight and max_points must be positive."""
        if name in self.assignments:
            raise ValueError(f"duplicate assignment {name!r}")
        if weight <= 0 or max_points <= 0:
            raise ValueError("weight and max_points must be positive")
        assignment = Assignment(name, weight, max_points)
        self.assignments[name] = assignment
        return assignment

    def add_student(self, name: str) -> None:
        """Register a student with no scores yet."""
        if name in self._points:
            raise ValueError(f"duplicate student {name!r}")
        self._points[name] = {}

    def students(self) -> list[str]:
        """All student names in alphabetical order."""
        return sorted(self._points)

    def record(self, student: str, assignment: str, points: float) -> None:
        """Record the points a student earned, between 0 and the maximum inclusive."""
        sheet = self._points.get(student)
        if sheet is None:
            raise KeyError(f"unknown student {student!r}")
        spec = self.assignments.get(assignment)
        if spec is None:
            raise KeyError(f"unknown assignment {assignment!r}")
        if points < 0 or points > spec.max_points:
            raise ValueError(f"points out of range: {points}")
        sheet[assignment] = points

    def percent(self, student: str, assignment: str) -> float | None:
        """The score as a percentage, or None if nothing was recorded."""
        points = self._points[student].get(assignment)
        if points is None:
            return None
        return points / self.assignments[assignment].max_points * 100

    def scores(self, student: str) -> dict[str, float]:
        """Percentages for every assignment; missing work counts as 0."""
        result: dict[str, float] = {}
        for name in self.assignments:
            value = self.percent(student, name)
            result[name] = 0.0 if value is None else value
        return result

    def weights(self) -> dict[str, float]:
        """The weight of every assignment by name."""
        return {name: a.weight for name, a in self.assignments.items()}
