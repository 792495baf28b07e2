"""Core immutable Matrix type with exact Fraction entries."""
from __future__ import annotations

from fractions import Fraction
from typing import Sequence, Union

Number = Union[int, Fraction]


class MatrixError(ValueError):
    """Raised for malformed matrices or incompatible shapes."""


class SingularMatrixError(MatrixError):
    """Raised when an operation needs an invertible matrix."""


class Matrix:
    """A rectangular matrix whose entries are stored as Fractions."""

    def __init__(self, rows: Sequence[Sequence[Number]]) -> None:
        if len(rows) == 0:
            raise MatrixError("matrix needs at least one row")
        width = len(rows[0])
        if width == 0:
            raise MatrixError("matrix needs at least one column")
        for row in rows:
            if len(row) != width:
                raise MatrixError("all rows must have the same length")
        self._rows = tuple(tuple(Fraction(x) for x in row) for row in rows)

    @property
    def shape(self) -> tuple[int, int]:
        """Return (number of rows, number of columns)."""
        return len(self._rows), len(self._rows[0])

    @property
    def rows(self) -> list[list[Fraction]]:
        """Return a mutable copy of the entries as a list of rows."""
        return [list(row) for row in self._rows]

    def __getitem__(self, pos: tuple[int, int]) -> Fraction:
        i, j = pos
        return self._rows[i][j]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Matrix):
            return NotImplemented
        return self._rows == other._rows

    def __hash__(self) -> int:
        return hash(self._rows)

    def __repr__(self) -> str:
        body = ", ".join("[" + ", ".join(str(x) for x in row) + "]" for row in self._rows)
        return f"Matrix([{body}])"

    def is_square(self) -> bool:
        """Return True when the matrix has as many rows as columns."""
        n, m = self.shape
        return n == m

    def transpose(self) -> Matrix:
        """Return the transposed matrix."""
        n, m = self.shape
        return Matrix([[self._rows[i][j] for i in range(n)] for j in range(m)])

    def trace(self) -> Fraction:
        """Return the sum of the main diagonal of a square matrix."""
        if not self.is_square():
            raise MatrixError("trace needs a square matrix")
        return sum((self._rows[i][i] for i in range(self.shape[0])), Fraction(0))

    def _check_same_shape(self, other: Matrix) -> None:
        if self.shape != other.shape:
            raise MatrixError(f"shape mismatch: {self.shape} vs {other.shape}")

    def __add__(self, other: Matrix) -> Matrix:
        self._check_same_shape(other)
        return Matrix([[a + b for a, b in zip(r, s)] for r, s in zip(self._rows, other._rows)])

    def __sub__(self, other: Matrix) -> Matrix:
        self._check_same_shape(other)
        return Matrix([[a - b for a, b in zip(r, s)] for r, s in zip(self._rows, other._rows)])

    def __neg__(self) -> Matrix:
        return self.scale(-1)

    def scale(self, factor: Number) -> Matrix:
        """Multiply every entry by a scalar."""
        return Matrix([[x * factor for x in row] for row in self._rows])

    def matmul(self, other: Matrix) -> Matrix:
        """Return the matrix product self @ other."""
        n, m = self.shape
        m2, p = other.shape
        if m != m2:
            raise MatrixError(f"cannot multiply {self.shape} by {other.shape}")
        return Matrix(
            [
                [sum((self._rows[i][k] * other._rows[k][j] for k in range(m)), Fraction(0)) for j in range(p)]
                for i in range(n)
            ]
        )

    def __mul__(self, other: Union[Matrix, Number]) -> Matrix:
        if isinstance(other, Matrix):
            return self.matmul(other)
        return self.scale(other)

    def __rmul__(self, other: Number) -> Matrix:
        return self.scale(other)

    def __matmul__(self, other: Matrix) -> Matrix:
        return self.matmul(other)

    def __pow__(self, exponent: int) -> Matrix:
        """Raise a square matrix to an integer power (negative uses the inverse)."""
        if not self.is_square():
            raise MatrixError("power needs a square matrix")
        base: Matrix = self
        if exponent < 0:
            from .solve import inverse

            base = inverse(self)
            exponent = -exponent
        result = identity(self.shape[0])
        for bit in range(exponent.bit_length()):
            if (exponent >> bit) & 1:
                result = result.matmul(base)
            base = base.matmul(base)
        return result


def identity(n: int) -> Matrix:
    """Return the n x n identity matrix (n must be positive)."""
    return Matrix([[1 if i == j else 0 for j in range(n)] for i in range(n)])


def zeros(rows: int, cols: int) -> Matrix:
    """Return a rows x cols matrix of zeros (both must be positive)."""
    return Matrix([[0] * cols for _ in range(rows)])
