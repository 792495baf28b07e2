from fractions import Fraction as F

import pytest

from matrixlite import Matrix, MatrixError, identity, zeros


def test_construction_converts_to_fractions_and_reports_shape():
    """A 2x3 matrix keeps its entries as Fractions and reports shape (2, 3)."""
    m = Matrix([[1, 2, 3], [4, 5, F(1, 2)]])
    assert m.shape == (2, 3)
    assert m.rows == [[F(1), F(2), F(3)], [F(4), F(5), F(1, 2)]]
    assert m[1, 2] == F(1, 2)


def test_construction_rejects_ragged_and_empty():
    """Ragged rows, no rows, or empty rows are rejected."""
    with pytest.raises(MatrixError):
        Matrix([[1, 2], [3]])
    with pytest.raises(MatrixError):
        Matrix([])
    with pytest.raises(MatrixError):
        Matrix([[]])


def test_rows_returns_independent_copy():
    """Mutating the rows copy does not change the matrix."""
    m = Matrix([[1, 2]])
    rows = m.rows
    rows[0][0] = 99
    assert m == Matrix([[1, 2]])


def test_transpose_of_rectangular_matrix():
    """Transposing a 2x3 matrix gives the 3x2 mirror."""
    assert Matrix([[1, 2, 3], [4, 5, 6]]).transpose() == Matrix([[1, 4], [2, 5], [3, 6]])


def test_add_and_subtract_elementwise():
    """Addition and subtraction act entry by entry."""
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[10, 20], [30, 40]])
    assert a + b == Matrix([[11, 22], [33, 44]])
    assert a - b == Matrix([[-9, -18], [-27, -36]])
    assert -a == Matrix([[-1, -2], [-3, -4]])


def test_add_shape_mismatch_raises():
    """Adding matrices of different shapes raises MatrixError."""
    with pytest.raises(MatrixError):
        Matrix([[1, 2]]) + Matrix([[1], [2]])
    with pytest.raises(MatrixError):
        Matrix([[1, 2]]) - Matrix([[1, 2], [3, 4]])


def test_scalar_multiplication_both_sides():
    """Scalars multiply every entry from either side."""
    m = Matrix([[1, -2], [0, 3]])
    assert m * F(1, 2) == Matrix([[F(1, 2), -1], [0, F(3, 2)]])
    assert 3 * m == Matrix([[3, -6], [0, 9]])


def test_matrix_product_rectangular():
    """A 2x3 times 3x2 product is the expected 2x2 matrix."""
    a = Matrix([[1, 2, 3], [4, 5, 6]])
    b = Matrix([[7, 8], [9, 10], [11, 12]])
    assert a * b == Matrix([[58, 64], [139, 154]])
    assert (b @ a).shape == (3, 3)


def test_matrix_product_incompatible_shapes():
    """Multiplying 2x3 by 2x3 raises MatrixError."""
    a = Matrix([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(MatrixError):
        a * a


def test_identity_and_zeros():
    """identity(3) has ones on the diagonal; zeros has the requested shape."""
    assert identity(3) == Matrix([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert identity(1) == Matrix([[1]])
    assert zeros(2, 3) == Matrix([[0, 0, 0], [0, 0, 0]])
    with pytest.raises(MatrixError):
        identity(0)
    with pytest.raises(MatrixError):
        zeros(1, 0)
    with pytest.raises(MatrixError):
        zeros(0, 1)
    with pytest.raises(MatrixError):
        zeros(-1, 2)


def test_trace_and_square_check():
    """Trace sums the diagonal; it is undefined for non-square matrices."""
    assert Matrix([[1, 2], [3, F(1, 2)]]).trace() == F(3, 2)
    assert Matrix([[1, 2]]).is_square() is False
    with pytest.raises(MatrixError):
        Matrix([[1, 2]]).trace()


def test_power_non_negative_exponents():
    """Powers 0..5 of a Fibonacci matrix give Fibonacci numbers."""
    fib = Matrix([[1, 1], [1, 0]])
    assert fib ** 0 == identity(2)
    assert fib ** 1 == fib
    assert fib ** 2 == Matrix([[2, 1], [1, 1]])
    assert fib ** 5 == Matrix([[8, 5], [5, 3]])
    assert fib ** 6 == Matrix([[13, 8], [8, 5]])


def test_power_negative_uses_inverse():
    """A negative power is the power of the inverse."""
    m = Matrix([[2, 0], [0, 4]])
    assert m ** -1 == Matrix([[F(1, 2), 0], [0, F(1, 4)]])
    assert m ** -2 == Matrix([[F(1, 4), 0], [0, F(1, 16)]])


def test_power_requires_square():
    """Raising a non-square matrix to a power raises MatrixError."""
    with pytest.raises(MatrixError):
        Matrix([[1, 2, 3]]) ** 2
    with pytest.raises(MatrixError):
        Matrix([[1, 2, 3]]) ** 0
    with pytest.raises(MatrixError):
        Matrix([[1], [2]]) ** 1


def test_power_zero_of_singular_matrix_is_identity():
    """Any square matrix, even a singular one, to the power 0 is the identity."""
    assert Matrix([[0, 0], [0, 0]]) ** 0 == identity(2)
    assert Matrix([[1, 2], [2, 4]]) ** 1 == Matrix([[1, 2], [2, 4]])


def test_equality_hash_and_repr():
    """Equal matrices hash alike, compare unequal to other types, and repr exactly."""
    a = Matrix([[1, F(1, 2)]])
    assert a == Matrix([[F(2, 2), F(2, 4)]])
    assert hash(a) == hash(Matrix([[1, F(1, 2)]]))
    assert a != [[1, F(1, 2)]]
    assert repr(a) == "Matrix([[1, 1/2]])"
