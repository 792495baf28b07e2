"""The Interval value type and its textual notation."""

from __future__ import annotations

from dataclasses import dataclass

CLOSED_KINDS = ("left", "right", "both", "neither")


def closed_name(left: bool, right: bool) -> str:
    """Return the ``closed`` label for the given end flags."""
    if left and right:
        return "both"
    if left:
        return "left"
    if right:
        return "right"
    return "neither"


def make_interval(start: float, end: float, left: bool, right: bool) -> Interval | None:
    """Build an interval from end flags, or return None when it would be empty."""
    if start > end:
        return None
    if start == end and not (left and right):
        return None
    return Interval(start, end, closed_name(left, right))


@dataclass(frozen=True)
class Interval:
    """A non-empty numeric interval; ``closed`` says which ends are included."""

    start: float
    end: float
    closed: str = "left"

    def __post_init__(self) -> None:
        if self.closed not in CLOSED_KINDS:
            raise ValueError(f"unknown closed kind: {self.closed!r}")
        if self.start > self.end:
            raise ValueError("start must not exceed end")
        if self.start == self.end and self.closed != "both":
            raise ValueError("degenerate interval must be closed on both ends")

    @property
    def closed_left(self) -> bool:
        """True when the start point belongs to the interval."""
        return self.closed in ("left", "both")

    @property
    def closed_right(self) -> bool:
        """True when the end point belongs to the interval."""
        return self.closed in ("right", "both")

    @property
    def length(self) -> float:
        """Distance between the two ends."""
        return self.end - self.start

    def contains(self, x: float) -> bool:
        """Return True when the point ``x`` lies inside the interval."""
        above = self.start < x or (self.closed_left and x == self.start)
        below = x < self.end or (self.closed_right and x == self.end)
        return above and below

    def covers(self, other: Interval) -> bool:
        """Return True when ``other`` lies completely inside this interval."""
        return self.intersect(other) == other

    def intersect(self, other: Interval) -> Interval | None:
        """Return the common part of two intervals, or None if they are disjoint."""
        if self.start > other.start:
            lo, left = self.start, self.closed_left
        elif self.start < other.start:
            lo, left = other.start, other.closed_left
        else:
            lo, left = self.start, self.closed_left and other.closed_left
        if self.end < other.end:
            hi, right = self.end, self.closed_right
        elif self.end > other.end:
            hi, right = other.end, other.closed_right
        else:
            hi, right = self.end, self.closed_right and other.closed_right
        return make_interval(lo, hi, left, right)

    def overlaps(self, other: Interval) -> bool:
        """Return True when the intervals share at least one point."""
        return self.intersect(other) is not None

    def __str__(self) -> str:
        left = "[" if self.closed_left else "("
        right = "]" if self.closed_right else ")"
        return f"{left}{self.start}, {self.end}{right}"


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def parse_interval(text: str) -> Interval:
    """Parse notation such as ``"[1, 5)"`` or ``"(0.5,2]"`` into an Interval."""
    text = text.strip()
    if len(text) < 5 or text[0] not in "[(" or text[-1] not in "])":
        raise ValueError(f"bad interval notation: {text!r}")
    parts = text[1:-1].split(",")
    if len(parts) != 2:
        raise ValueError(f"bad interval notation: {text!r}")
    start, end = (_number(p.strip()) for p in parts)
    return Interval(start, end, closed_name(text[0] == "[", text[-1] == "]"))
