"""Gaussian elimination: echelon forms, rank and determinant."""
from __future__ import annotations

from fractions import Fraction

from .matrix import Matrix, MatrixError


def eliminate(rows: list[list[Fraction]], reduced: bool = False, limit: int | None = None) -> tuple[list[int], int]:
    """Run Gaussian elimination in place on ``rows``.

    Only the first ``limit`` columns (all when None) are used as pivot columns.
    Returns the list of pivot columns and the number of row swaps performed.
    """
    n = len(rows)
    m = len(rows[0]) if limit is None else limit
    pivots: list[int] = []
    swaps = 0
    r = 0
    for c in range(m):
        pivot = None
        for i in range(r, n):
            if rows[i][c] != 0:
                pivot = i
                break
        if pivot is None:
            continue
        if pivot != r:
            rows[r], rows[pivot] = rows[pivot], rows[r]
            swaps += 1
        if reduced:
            lead = rows[r][c]
            rows[r] = [x / lead for x in rows[r]]
        start = 0 if reduced else r + 1
        for i in range(start, n):
            if i == r or rows[i][c] == 0:
                continue
            factor = rows[i][c] / rows[r][c]
            rows[i] = [a - factor * b for a, b in zip(rows[i], rows[r])]
        pivots.append(c)
        r += 1
    return pivots, swaps


def row_echelon(matrix: Matrix) -> Matrix:
    """Return a row echelon form (leading entries not normalised)."""
    rows = matrix.rows
    eliminate(rows)
    return Matrix(rows)


def reduced_row_echelon(matrix: Matrix) -> Matrix:
    """Return the unique reduced row echelon form."""
    rows = matrix.rows
    eliminate(rows, reduced=True)
    return Matrix(rows)


def pivot_columns(matrix: Matrix) -> list[int]:
    """Return the indices of the pivot columns."""
    pivots, _ = eliminate(matrix.rows)
    return pivots


def rank(matrix: Matrix) -> int:
    """Return the rank (number of pivots)."""
    return len(pivot_columns(matrix))


def determinant(matrix: Matrix) -> Fraction:
    """Return the determinant of a square matrix."""
    if not matrix.is_square():
        raise MatrixError("determinant needs a square matrix")
    n = matrix.shape[0]
    rows = matrix.rows
    _, swaps = eliminate(rows)
    det = Fraction(1)
    for i in range(n):
        det *= rows[i][i]
    return -det if swaps % 2 == 1 else det
