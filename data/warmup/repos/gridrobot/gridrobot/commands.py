"""Parsing of command strings and heading arithmetic."""
from __future__ import annotations

HEADINGS = ("N", "E", "S", "W")
DELTAS = {"N": (0, 1), "E": (1, 0), "S": (0, -1), "W": (-1, 0)}
OPS = ("F", "B", "L", "R")
MAX_COUNT = 99

Command = tuple[str, int]


class CommandError(ValueError):
    """Raised for a malformed command string."""


def parse_commands(text: str) -> list[Command]:
    """Parse e.g. ``"F3 L R2"`` into ``[("F", 3), ("L", 1), ("R", 2)]``.

    Ops are F (forward), B (backward), L and R (turn 90 degrees); the
    optional count defaults to 1 and must lie in ``1..MAX_COUNT``.
    """
    commands: list[Command] = []
    for token in text.split():
        op = token[0].upper()
        if op not in OPS:
            raise CommandError(f"unknown command {token!r}")
        digits = token[1:]
        if not digits:
            count = 1
        elif digits.isdigit():
            count = int(digits)
        else:
            raise CommandError(f"bad count in {token!r}")
        if count < 1 or count > MAX_COUNT:
            raise CommandError(f"count out of range in {token!r}")
        commands.append((op, count))
    return commands


def turn(heading: str, op: str, times: int = 1) -> str:
    """Return the heading after turning left (L) or right (R) ``times`` times."""
    if heading not in HEADINGS:
        raise ValueError(f"unknown heading {heading!r}")
    if op == "R":
        step = 1
    elif op == "L":
        step = -1
    else:
        raise ValueError(f"not a turn: {op!r}")
    index = HEADINGS.index(heading)
    return HEADINGS[(index + step * times) % len(HEADINGS)]
