"""Inverses and linear system solving built on elimination."""
from __future__ import annotations

from fractions import Fraction
from typing import Sequence

from .elimination import eliminate, rank
from .matrix import Matrix, MatrixError, Number, SingularMatrixError


def is_invertible(matrix: Matrix) -> bool:
    """Return True for a square matrix of full rank."""
    return matrix.is_square() and rank(matrix) == matrix.shape[0]


def inverse(matrix: Matrix) -> Matrix:
    """Return the inverse of a square matrix (Gauss-Jordan)."""
    if not matrix.is_square():
        raise MatrixError("only square matrices can be inverted")
    n = matrix.shape[0]
    aug = [row + [Fraction(1 if i == j else 0) for j in range(n)] for i, row in enumerate(matrix.rows)]
    pivots, _ = eliminate(aug, reduced=True, limit=n)
    if len(pivots) < n:
        raise SingularMatrixError("matrix is singular")
    return Matrix([row[n:] for row in aug])


def solve(matrix: Matrix, rhs: Sequence[Number]) -> list[Fraction]:
    """Solve ``matrix @ x = rhs`` for a unique solution x."""
    n, m = matrix.shape
    if n != m:
        raise MatrixError("coefficient matrix must be square")
    if len(rhs) != n:
        raise MatrixError(f"expected {n} right-hand values, got {len(rhs)}")
    aug = [row + [Fraction(b)] for row, b in zip(matrix.rows, rhs)]
    pivots, _ = eliminate(aug, reduced=True)
    if len(pivots) < n or pivots[-1] >= n:
        raise SingularMatrixError("system has no unique solution")
    return [aug[i][n] for i in range(n)]
