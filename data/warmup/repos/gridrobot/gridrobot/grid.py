"""The bounded grid the robot drives on."""
from __future__ import annotations

from typing import Iterable

Cell = tuple[int, int]


def manhattan(a: Cell, b: Cell) -> int:
    """Return the Manhattan (taxicab) distance between two cells."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


class Grid:
    """A ``width`` x ``height`` grid of cells ``(x, y)``, origin at the bottom-left."""

    def __init__(self, width: int, height: int, obstacles: Iterable[Cell] = ()) -> None:
        if width < 1 or height < 1:
            raise ValueError("grid dimensions must be positive")
        self.width = width
        self.height = height
        self.obstacles: set[Cell] = set()
        for cell in obstacles:
            self.add_obstacle(cell)

    def in_bounds(self, cell: Cell) -> bool:
        """True when the cell lies inside the grid."""
        x, y = cell
        return 0 <= x < self.width and 0 <= y < self.height

    def add_obstacle(self, cell: Cell) -> None:
        """Mark a cell as blocked; it must be inside the grid."""
        if not self.in_bounds(cell):
            raise ValueError(f"obstacle {cell} is outside the grid")
        self.obstacles.add(cell)

    def is_free(self, cell: Cell) -> bool:
        """True when the robot may stand on the cell."""
        return self.in_bounds(cell) and cell not in self.obstacles

    def free_cell_count(self) -> int:
        """Number of cells that are not obstacles."""
        return self.width * self.height - len(self.obstacles)
