"""Edit scripts: sequences of equal / insert / delete operations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .lcs import lcs_table

EQUAL, INSERT, DELETE = "equal", "insert", "delete"
PREFIX = {EQUAL: " ", DELETE: "-", INSERT: "+"}


@dataclass(frozen=True)
class Edit:
    """One operation; indices are the positions in ``a`` and ``b`` before it applies."""

    tag: str
    line: str
    a_index: int
    b_index: int


def edit_script(a: Sequence[str], b: Sequence[str]) -> list[Edit]:
    """Minimal edit script turning ``a`` into ``b``; deletions come before insertions."""
    table = lcs_table(a, b)
    i = j = 0
    ops: list[Edit] = []
    for _ in range(len(a) + len(b)):
        if i < len(a) and j < len(b) and a[i] == b[j]:
            ops.append(Edit(EQUAL, a[i], i, j))
            i += 1
            j += 1
        elif i < len(a) and (j >= len(b) or table[i + 1][j] >= table[i][j + 1]):
            ops.append(Edit(DELETE, a[i], i, j))
            i += 1
        elif j < len(b):
            ops.append(Edit(INSERT, b[j], i, j))
            j += 1
        else:
            break
    return ops


def count_changes(ops: Sequence[Edit]) -> tuple[int, int]:
    """Return ``(insertions, deletions)`` in an edit script."""
    inserted = sum(1 for op in ops if op.tag == INSERT)
    deleted = sum(1 for op in ops if op.tag == DELETE)
    return inserted, deleted


def apply_script(a: Sequence[str], ops: Sequence[Edit]) -> list[str]:
    """Replay ``ops`` against ``a``; equal/delete lines must match ``a``."""
    result: list[str] = []
    pos = 0
    for op in ops:
        if op.tag == INSERT:
            result.append(op.line)
            continue
        if pos >= len(a) or a[pos] != op.line:
            raise ValueError(f"edit script does not match input at line {pos + 1}")
        if op.tag == EQUAL:
            result.append(op.line)
        pos += 1
    if pos != len(a):
        raise ValueError("edit script does not consume the whole input")
    return result
