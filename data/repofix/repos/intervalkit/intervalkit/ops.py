"""Operations over lists of intervals."""

from __future__ import annotations

from collections.abc import Iterable

from .model import Interval, closed_name, make_interval


def _sort_key(iv: Interval) -> tuple[float, bool]:
    return (iv.start, not iv.closed_left)


def _joinable(cur: Interval, nxt: Interval) -> bool:
    """True when ``nxt`` (starting no earlier) continues ``cur`` without a gap."""
    if nxt.start < cur.end:
        return True
    return nxt.start == cur.end and (cur.closed_right or nxt.closed_left)


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Merge overlapping or touching intervals into a sorted disjoint list."""
    result: list[Interval] = []
    for iv in sorted(intervals, key=_sort_key):
        if not result or not _joinable(result[-1], iv):
            result.append(iv)
            continue
        cur = result[-1]
        if iv.end > cur.end:
            end, right = iv.end, iv.closed_right
        elif iv.end == cur.end:
            end, right = cur.end, cur.closed_right or iv.closed_right
        else:
            end, right = cur.end, cur.closed_right
        result[-1] = Interval(cur.start, end, closed_name(cur.closed_left, right))
    return result


def intersect_all(intervals: Iterable[Interval]) -> Interval | None:
    """Return the part shared by every interval, or None if there is none."""
    common: Interval | None = None
    for index, iv in enumerate(intervals):
        if index == 0:
            common = iv
            continue
        if common is None:
            return None
        common = common.intersect(iv)
    return common


def subtract(a: Interval, b: Interval) -> list[Interval]:
    """Remove ``b`` from ``a``; the result has zero, one or two pieces."""
    if not a.overlaps(b):
        return [a]
    pieces = [
        make_interval(a.start, b.start, a.closed_left, not b.closed_left),
        make_interval(b.end, a.end, not b.closed_right, a.closed_right),
    ]
    return [p for p in pieces if p is not None]


def gaps(intervals: Iterable[Interval], span: Interval) -> list[Interval]:
    """Return the parts of ``span`` not covered by any of ``intervals``."""
    remaining = [span]
    for iv in merge(intervals):
        next_remaining: list[Interval] = []
        for piece in remaining:
            next_remaining.extend(subtract(piece, iv))
        remaining = next_remaining
    return remaining


def total_length(intervals: Iterable[Interval]) -> float:
    """Total length covered by the intervals, counting overlaps once."""
    return sum(iv.length for iv in merge(intervals))
