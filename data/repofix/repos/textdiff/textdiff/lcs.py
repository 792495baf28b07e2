"""Longest common subsequence over sequences of lines."""

from __future__ import annotations

from typing import Sequence


def lcs_table(a: Sequence[str], b: Sequence[str]) -> list[list[int]]:
    """Suffix table: ``table[i][j]`` is the LCS length of ``a[i:]`` and ``b[j:]``."""
    rows, cols = len(a), len(b)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if a[i] == b[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    return table


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence."""
    return lcs_table(a, b)[0][0]


def lcs(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """One longest common subsequence; ties skip lines of ``a`` first, like deletions."""
    table = lcs_table(a, b)
    i = j = 0
    result: list[str] = []
    for _ in range(len(a) + len(b)):
        if i >= len(a) or j >= len(b):
            break
        if a[i] == b[j]:
            result.append(a[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return result


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """Ratio ``2 * lcs / (len(a) + len(b))``; two empty inputs are identical."""
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    return 2 * lcs_length(a, b) / total
