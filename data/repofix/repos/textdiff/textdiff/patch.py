"""Parsing unified diffs and applying them to lists of lines."""

from __future__ import annotations

import re
from typing import Sequence

from .unified import Hunk

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """Raised for malformed diffs or diffs that do not fit the input."""


def parse_range(start: str, count: str | None) -> tuple[int, int]:
    """Turn a header range into a 0-based start and a line count."""
    size = 1 if count is None else int(count)
    first = int(start)
    if size == 0:
        return first, 0
    if first < 1:
        raise PatchError(f"line numbers start at 1, got {first}")
    return first - 1, size


def parse_unified(diff: Sequence[str]) -> list[Hunk]:
    """Parse unified diff lines into hunks; text outside hunks is ignored."""
    hunks: list[Hunk] = []
    need_a = need_b = 0
    for line in diff:
        if need_a == 0 and need_b == 0:
            match = _HEADER.match(line)
            if match:
                a_start, a_count = parse_range(match.group(1), match.group(2))
                b_start, b_count = parse_range(match.group(3), match.group(4))
                hunks.append(Hunk(a_start, a_count, b_start, b_count))
                need_a, need_b = a_count, b_count
            continue
        tag = line[:1] or " "
        if tag == "\\":
            continue
        if tag not in (" ", "-", "+"):
            raise PatchError(f"unexpected line in hunk: {line!r}")
        need_a -= tag != "+"
        need_b -= tag != "-"
        if need_a < 0 or need_b < 0:
            raise PatchError("hunk body longer than its header says")
        hunks[-1].lines.append(tag + line[1:])
    if need_a or need_b:
        raise PatchError("diff ends in the middle of a hunk")
    return hunks


def apply_patch(a: Sequence[str], diff: Sequence[str], reverse: bool = False) -> list[str]:
    """Apply a unified diff to ``a`` (or undo it when ``reverse`` is true)."""
    result: list[str] = []
    pos = 0
    for hunk in parse_unified(diff):
        old, new = hunk.old_lines(), hunk.new_lines()
        start = hunk.a_start
        if reverse:
            old, new, start = new, old, hunk.b_start
        if start < pos:
            raise PatchError("hunks overlap or are out of order")
        if list(a[start : start + len(old)]) != old:
            raise PatchError(f"hunk does not match the input at line {start + 1}")
        result.extend(a[pos:start])
        result.extend(new)
        pos = start + len(old)
    result.extend(a[pos:])
    return result
