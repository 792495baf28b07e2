from fractions import Fraction as F

import pytest

from matrixlite import (
    Matrix,
    MatrixError,
    SingularMatrixError,
    determinant,
    identity,
    inverse,
    is_invertible,
    pivot_columns,
    rank,
    reduced_row_echelon,
    row_echelon,
    solve,
)


def test_determinant_small_matrices():
    """Determinants of 1x1, 2x2 and 3x3 matrices are exact."""
    assert determinant(Matrix([[7]])) == 7
    assert determinant(Matrix([[0]])) == 0
    assert determinant(Matrix([[1, 2], [3, 4]])) == -2
    assert determinant(Matrix([[2, 0, 1], [1, 3, 2], [1, 1, 2]])) == 6


def test_determinant_sign_flips_with_row_swap():
    """A zero leading entry forces a swap, which flips the sign."""
    assert determinant(Matrix([[0, 1], [1, 0]])) == -1
    assert determinant(Matrix([[0, 2, 0], [0, 0, 3], [5, 0, 0]])) == 30
    assert determinant(Matrix([[0, 0, 2], [0, 3, 0], [5, 0, 0]])) == -30
    assert determinant(Matrix([[0, 0, 0, 5], [2, 0, 0, 0], [0, 3, 0, 0], [0, 0, 4, 0]])) == -120


def test_determinant_singular_and_non_square():
    """Singular matrices have determinant zero; non-square raise."""
    assert determinant(Matrix([[1, 2], [2, 4]])) == 0
    assert determinant(Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]])) == 0
    with pytest.raises(MatrixError):
        determinant(Matrix([[1, 2, 3], [4, 5, 6]]))


def test_row_echelon_form():
    """Row echelon form zeros out entries below each pivot without normalising."""
    m = Matrix([[2, 4, 2], [4, 9, 5], [2, 7, 9]])
    assert row_echelon(m) == Matrix([[2, 4, 2], [0, 1, 1], [0, 0, 4]])


def test_reduced_row_echelon_form():
    """Reduced form has unit pivots and zeros above and below them."""
    m = Matrix([[1, 2, 3], [2, 4, 7], [1, 2, 4]])
    assert reduced_row_echelon(m) == Matrix([[1, 2, 0], [0, 0, 1], [0, 0, 0]])
    assert reduced_row_echelon(Matrix([[0, 3, 6]])) == Matrix([[0, 1, 2]])


def test_rank_and_pivots():
    """Rank counts pivots; pivot columns skip dependent columns."""
    assert rank(Matrix([[1, 2, 3], [2, 4, 7], [1, 2, 4]])) == 2
    assert pivot_columns(Matrix([[1, 2, 3], [2, 4, 7], [1, 2, 4]])) == [0, 2]
    assert rank(Matrix([[0, 0], [0, 0]])) == 0
    assert rank(identity(4)) == 4
    assert rank(Matrix([[1, 2], [3, 4], [5, 6]])) == 2
    assert pivot_columns(Matrix([[0, 0, 5], [0, 0, 1]])) == [2]


def test_inverse_of_2x2():
    """The inverse of [[4, 7], [2, 6]] is exact and multiplies back to identity."""
    m = Matrix([[4, 7], [2, 6]])
    inv = inverse(m)
    assert inv == Matrix([[F(3, 5), F(-7, 10)], [F(-1, 5), F(2, 5)]])
    assert m * inv == identity(2)


def test_inverse_needs_row_swap():
    """A matrix with a zero top-left entry is still invertible."""
    m = Matrix([[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    assert inverse(m) == Matrix([[0, 0, 1], [1, 0, 0], [0, 1, 0]])


def test_inverse_errors():
    """Singular matrices raise SingularMatrixError; non-square raise MatrixError."""
    with pytest.raises(SingularMatrixError):
        inverse(Matrix([[1, 2], [2, 4]]))
    with pytest.raises(SingularMatrixError):
        inverse(Matrix([[0]]))
    with pytest.raises(MatrixError):
        inverse(Matrix([[1, 2]]))


def test_is_invertible():
    """Only square full-rank matrices are invertible."""
    assert is_invertible(Matrix([[1, 2], [3, 4]])) is True
    assert is_invertible(Matrix([[1, 2], [2, 4]])) is False
    assert is_invertible(Matrix([[1, 0, 0], [0, 1, 0]])) is False


def test_solve_unique_system():
    """A 3x3 system with a unique solution gives exact fractions."""
    a = Matrix([[2, 1, -1], [-3, -1, 2], [-2, 1, 2]])
    assert solve(a, [8, -11, -3]) == [2, 3, -1]
    assert solve(Matrix([[3, 0], [0, 2]]), [1, 1]) == [F(1, 3), F(1, 2)]


def test_solve_with_pivot_swap():
    """Solving works when the first equation lacks the first variable."""
    assert solve(Matrix([[0, 1], [1, 1]]), [2, 5]) == [3, 2]


def test_solve_singular_systems_raise():
    """Inconsistent or underdetermined systems raise SingularMatrixError."""
    with pytest.raises(SingularMatrixError):
        solve(Matrix([[1, 1], [1, 1]]), [1, 2])
    with pytest.raises(SingularMatrixError):
        solve(Matrix([[1, 1], [1, 1]]), [1, 1])
    with pytest.raises(SingularMatrixError):
        solve(Matrix([[1, 0], [0, 0]]), [1, 0])


def test_solve_shape_errors():
    """Non-square coefficients or a wrong-length right side raise MatrixError."""
    with pytest.raises(MatrixError):
        solve(Matrix([[1, 2, 3], [4, 5, 6]]), [1, 2])
    with pytest.raises(MatrixError):
        solve(Matrix([[1, 2], [3, 4]]), [1, 2, 3])
    with pytest.raises(MatrixError):
        solve(Matrix([[1, 2], [3, 4]]), [1])
