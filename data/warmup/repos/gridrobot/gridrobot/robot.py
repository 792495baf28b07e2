"""The robot itself: position, heading and path history."""
from __future__ import annotations

from .commands import DELTAS, HEADINGS, Command, parse_commands, turn
from .grid import Cell, Grid, manhattan
from .path import visit_counts


class Robot:
    """A robot on a grid; it stops in front of obstacles and at the edges."""

    def __init__(self, grid: Grid, start: Cell = (0, 0), heading: str = "N") -> None:
        if not grid.is_free(start):
            raise ValueError(f"start {start} is not a free cell")
        if heading not in HEADINGS:
            raise ValueError(f"unknown heading {heading!r}")
        self.grid = grid
        self.start = start
        self.position = start
        self.heading = heading
        self.history: list[Cell] = [start]
        self.bumps = 0

    def _step(self, backward: bool = False) -> bool:
        """Try to move one cell; return False (and stay) if blocked."""
        dx, dy = DELTAS[self.heading]
        if backward:
            dx, dy = -dx, -dy
        target = (self.position[0] + dx, self.position[1] + dy)
        if not self.grid.is_free(target):
            return False
        self.position = target
        self.history.append(target)
        return True

    def move(self, steps: int, backward: bool = False) -> int:
        """Move up to ``steps`` cells; return how many cells were actually moved."""
        if steps < 0:
            raise ValueError("steps must be non-negative")
        moved = 0
        for _ in range(steps):
            if not self._step(backward):
                self.bumps += 1
                break
            moved += 1
        return moved

    def execute(self, commands: str | list[Command]) -> Cell:
        """Run a command string (or parsed commands) and return the final position."""
        if isinstance(commands, str):
            commands = parse_commands(commands)
        for op, count in commands:
            if op in ("L", "R"):
                self.heading = turn(self.heading, op, count)
            else:
                self.move(count, backward=op == "B")
        return self.position

    def distance_from_start(self) -> int:
        """Manhattan distance between the start and the current position."""
        return manhattan(self.start, self.position)

    def max_distance(self) -> int:
        """Largest Manhattan distance from the start reached along the path."""
        return max(manhattan(self.start, cell) for cell in self.history)

    def visited_cells(self) -> int:
        """Number of distinct cells visited, the start included."""
        return len(set(self.history))

    def visit_counts(self) -> dict[Cell, int]:
        """How often each cell was entered (the start counts once initially)."""
        return visit_counts(self.history)

    def coverage(self) -> float:
        """Fraction of the grid's free cells visited so far."""
        return self.visited_cells() / self.grid.free_cell_count()
