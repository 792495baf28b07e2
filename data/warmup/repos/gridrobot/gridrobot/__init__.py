"""A robot moving on a bounded grid with obstacles."""
from .commands import HEADINGS, MAX_COUNT, CommandError, parse_commands, turn
from .grid import Cell, Grid, manhattan
from .path import most_visited, revisited, visit_counts
from .robot import Robot

__all__ = [
    "HEADINGS",
    "MAX_COUNT",
    "Cell",
    "CommandError",
    "Grid",
    "Robot",
    "manhattan",
    "most_visited",
    "parse_commands",
    "revisited",
    "turn",
    "visit_counts",
]
