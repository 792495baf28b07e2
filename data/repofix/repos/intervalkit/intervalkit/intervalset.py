"""A mutable set of points stored as disjoint intervals."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .model import Interval, closed_name
from .ops import merge, subtract, total_length


class IntervalSet:
    """A normalised collection of disjoint, sorted intervals."""

    def __init__(self, intervals: Iterable[Interval] = ()) -> None:
        self._items: list[Interval] = merge(intervals)

    def add(self, iv: Interval) -> None:
        """Add an interval, merging it with any neighbours it touches."""
        self._items = merge(self._items + [iv])

    def remove(self, iv: Interval) -> None:
        """Remove every point of ``iv`` from the set."""
        kept: list[Interval] = []
        for item in self._items:
            kept.extend(subtract(item, iv))
        self._items = kept

    def query(self, x: float) -> Interval | None:
        """Return the stored interval containing ``x``, or None."""
        for item in self._items:
            if item.start > x:
                break
            if item.contains(x):
                return item
        return None

    def overlapping(self, iv: Interval) -> list[Interval]:
        """Return the stored intervals that share a point with ``iv``."""
        return [item for item in self._items if item.overlaps(iv)]

    def span(self) -> Interval | None:
        """Return the smallest interval enclosing the whole set."""
        if not self._items:
            return None
        first, last = self._items[0], self._items[-1]
        return Interval(first.start, last.end, closed_name(first.closed_left, last.closed_right))

    @property
    def length(self) -> float:
        """Total covered length."""
        return total_length(self._items)

    def __contains__(self, x: object) -> bool:
        return isinstance(x, (int, float)) and self.query(x) is not None

    def __iter__(self) -> Iterator[Interval]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return len(self._items) > 0
