"""Grouping edit scripts into unified-diff hunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .script import DELETE, EQUAL, INSERT, PREFIX, Edit, edit_script


def format_range(start: int, count: int) -> str:
    """Unified range for a 0-based ``start``: ``3``, ``3,2`` or ``2,0`` when empty."""
    if count == 0:
        return f"{start},0"
    if count == 1:
        return f"{start + 1}"
    return f"{start + 1},{count}"


@dataclass
class Hunk:
    """A hunk: 0-based start lines, line counts and prefixed body lines."""

    a_start: int
    a_count: int
    b_start: int
    b_count: int
    lines: list[str] = field(default_factory=list)

    def header(self) -> str:
        a_range = format_range(self.a_start, self.a_count)
        b_range = format_range(self.b_start, self.b_count)
        return f"@@ -{a_range} +{b_range} @@"

    def old_lines(self) -> list[str]:
        """Lines the hunk expects in the original (context and deletions)."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "-")]

    def new_lines(self) -> list[str]:
        """Lines the hunk produces (context and insertions)."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "+")]


def group_hunks(ops: Sequence[Edit], context: int = 3) -> list[list[Edit]]:
    """Split ``ops`` into runs of changes with up to ``context`` equal lines around them.

    Changes separated by at most ``2 * context`` equal lines share one hunk.
    """
    if context < 0:
        raise ValueError("context must be non-negative")
    changes = [k for k, op in enumerate(ops) if op.tag != EQUAL]
    if not changes:
        return []
    spans: list[tuple[int, int]] = []
    first = previous = changes[0]
    for k in changes[1:]:
        if k - previous - 1 > 2 * context:
            spans.append((first, previous))
            first = k
        previous = k
    spans.append((first, previous))
    return [list(ops[max(0, s - context) : min(len(ops), e + context + 1)]) for s, e in spans]


def make_hunk(ops: Sequence[Edit]) -> Hunk:
    """Build a :class:`Hunk` from a non-empty run of operations."""
    if not ops:
        raise ValueError("a hunk needs at least one operation")
    a_count = sum(1 for op in ops if op.tag != INSERT)
    b_count = sum(1 for op in ops if op.tag != DELETE)
    lines = [PREFIX[op.tag] + op.line for op in ops]
    return Hunk(ops[0].a_index, a_count, ops[0].b_index, b_count, lines)


def unified_diff(
    a: Sequence[str],
    b: Sequence[str],
    fromfile: str = "a",
    tofile: str = "b",
    context: int = 3,
) -> list[str]:
    """Unified diff lines (no newlines); empty when the inputs are equal."""
    groups = group_hunks(edit_script(a, b), context)
    if not groups:
        return []
    out = [f"--- {fromfile}", f"+++ {tofile}"]
    for group in groups:
        hunk = make_hunk(group)
        out.append(hunk.header())
        out.extend(hunk.lines)
    return out
