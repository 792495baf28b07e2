"""Statistics over a robot's path history."""
from __future__ import annotations

from typing import Sequence

from .grid import Cell


def visit_counts(history: Sequence[Cell]) -> dict[Cell, int]:
    """Count how many times each cell appears in the history."""
    counts: dict[Cell, int] = {}
    for cell in history:
        counts[cell] = counts.get(cell, 0) + 1
    return counts


def revisited(history: Sequence[Cell], at_least: int = 2) -> list[Cell]:
    """Cells visited ``at_least`` times, sorted by (x, y)."""
    return sorted(cell for cell, n in visit_counts(history).items() if n >= at_least)


def most_visited(history: Sequence[Cell]) -> Cell | None:
    """The most visited cell; ties go to the cell reached first. None if empty."""
    if not history:
        return None
    counts = visit_counts(history)
    best = history[0]
    for cell in history[1:]:
        if counts[cell] > counts[best]:
            best = cell
    return best
