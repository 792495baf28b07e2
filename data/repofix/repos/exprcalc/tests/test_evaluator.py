import math

import pytest

from exprcalc import BinOp, EvalError, Num, Var, calculate, evaluate


def test_basic_arithmetic_and_precedence():
    """Evaluation follows precedence and left associativity."""
    assert calculate("1+2*3") == 7
    assert calculate("10-4-3") == 3
    assert calculate("7/2") == 3.5
    assert calculate("8/4/2") == 1.0


def test_power_and_unary_minus_values():
    """Right-associative power and unary minus give the conventional values."""
    assert calculate("2^3^2") == 512
    assert calculate("-2^2") == -4
    assert calculate("(-2)^2") == 4
    assert calculate("2^-1") == 0.5
    assert calculate("+5") == 5


def test_modulo_follows_python_sign_rules():
    """Modulo of a negative left operand is non-negative for a positive divisor."""
    assert calculate("7 % 3") == 1
    assert calculate("-7 % 3") == 2
    assert calculate("7 % -3") == -2


def test_variables_and_constants():
    """Variables are looked up; they shadow the built-in constants."""
    assert calculate("x*y + 1", {"x": 3, "y": 4}) == 13
    assert calculate("pi") == math.pi
    assert calculate("e") == math.e
    assert calculate("pi", {"pi": 3}) == 3
    assert calculate("2*e", {}) == 2 * math.e


def test_undefined_variable_raises():
    """Referencing an unknown variable raises EvalError."""
    with pytest.raises(EvalError):
        calculate("x + 1")
    with pytest.raises(EvalError):
        calculate("x + y", {"x": 1})


def test_builtin_functions():
    """min, max and abs work on any number of valid arguments."""
    assert calculate("min(3, 1, 2)") == 1
    assert calculate("max(-1, -5)") == -1
    assert calculate("max(4)") == 4
    assert calculate("min(7)") == 7
    assert calculate("abs(-4)") == 4
    assert calculate("abs(2 - 5) * 2") == 6


def test_function_arity_and_unknown_function_errors():
    """Wrong argument counts and unknown functions raise EvalError."""
    with pytest.raises(EvalError):
        calculate("abs(1, 2)")
    with pytest.raises(EvalError):
        calculate("min()")
    with pytest.raises(EvalError):
        calculate("max()")
    with pytest.raises(EvalError):
        calculate("abs()")
    with pytest.raises(EvalError):
        calculate("sqrt(4)")


def test_division_and_modulo_by_zero():
    """Dividing or taking modulo by zero raises EvalError."""
    with pytest.raises(EvalError):
        calculate("1 / (2 - 2)")
    with pytest.raises(EvalError):
        calculate("5 % 0")


def test_zero_powers():
    """0^0 is 1, 0^2 is 0, and 0 to a negative power raises EvalError."""
    assert calculate("0^0") == 1
    assert calculate("0^2") == 0
    with pytest.raises(EvalError):
        calculate("0^-1")


def test_evaluate_hand_built_ast():
    """evaluate accepts AST nodes directly and rejects unknown operators."""
    assert evaluate(BinOp("-", Num(10), Var("a")), {"a": 4}) == 6
    with pytest.raises(EvalError):
        evaluate(BinOp("&", Num(1), Num(2)))
