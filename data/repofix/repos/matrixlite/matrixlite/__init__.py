"""Exact linear algebra over fractions.Fraction."""
from .elimination import determinant, pivot_columns, rank, reduced_row_echelon, row_echelon
from .matrix import Matrix, MatrixError, SingularMatrixError, identity, zeros
from .solve import inverse, is_invertible, solve

__all__ = [
    "Matrix",
    "MatrixError",
    "SingularMatrixError",
    "determinant",
    "identity",
    "inverse",
    "is_invertible",
    "pivot_columns",
    "rank",
    "reduced_row_echelon",
    "row_echelon",
    "solve",
    "zeros",
]
