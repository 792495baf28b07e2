import pytest

from exprcalc import ExprSyntaxError, Num, free_variables, parse, to_sexpr


def sx(source):
    return to_sexpr(parse(source))


def test_multiplication_binds_tighter_than_addition():
    """1+2*3 groups the product first; parentheses override it."""
    assert sx("1+2*3") == "(+ 1 (* 2 3))"
    assert sx("(1+2)*3") == "(* (+ 1 2) 3)"
    assert sx("1*2-3") == "(- (* 1 2) 3)"


def test_left_associative_operators():
    """Subtraction, division and modulo associate to the left."""
    assert sx("10-4-3") == "(- (- 10 4) 3)"
    assert sx("8/4/2") == "(/ (/ 8 4) 2)"
    assert sx("7%4*2") == "(* (% 7 4) 2)"


def test_power_is_right_associative_and_tighter_than_unary():
    """2^3^2 nests to the right and -2^2 negates the power."""
    assert sx("2^3^2") == "(^ 2 (^ 3 2))"
    assert sx("-2^2") == "(- (^ 2 2))"
    assert sx("2^-1") == "(^ 2 (- 1))"
    assert sx("2*3^2") == "(* 2 (^ 3 2))"


def test_unary_operators_nest():
    """Repeated and plus-sign prefixes nest, and bind tighter than '*'."""
    assert sx("--3") == "(- (- 3))"
    assert sx("+x") == "(+ x)"
    assert sx("-a*b") == "(* (- a) b)"


def test_function_calls_with_zero_one_and_many_arguments():
    """Calls keep their arguments in order, including nested expressions."""
    assert sx("max(1, 2, x)") == "(max 1 2 x)"
    assert sx("f()") == "(f)"
    assert sx("abs(-x+1)") == "(abs (+ (- x) 1))"


def test_literal_types():
    """Integer literals stay int and decimal literals become float."""
    assert parse("2") == Num(2)
    assert isinstance(parse("2").value, int)
    assert isinstance(parse("2.0").value, float)
    assert sx("1.5") == "1.5"


@pytest.mark.parametrize(
    "source, pos",
    [
        ("", 0),
        ("1 +", 3),
        ("(1+2", 4),
        ("1 2", 2),
        ("max(1,)", 6),
        (")", 0),
        ("max(1 2)", 6),
        ("2 * * 3", 4),
    ],
    ids=["empty", "dangling_plus", "unclosed_paren", "two_numbers", "trailing_comma", "stray_close", "missing_comma", "double_star"],
)
def test_syntax_errors_report_position(source, pos):
    """Malformed expressions raise ExprSyntaxError at the offending token."""
    with pytest.raises(ExprSyntaxError) as info:
        parse(source)
    assert info.value.pos == pos


def test_error_messages_name_the_problem():
    """Errors at the end of input say so; other errors quote the token."""
    with pytest.raises(ExprSyntaxError) as info:
        parse("1 +")
    assert str(info.value) == "unexpected end of input at position 3"
    with pytest.raises(ExprSyntaxError) as info:
        parse("1 + )")
    assert str(info.value) == "unexpected ')' at position 4"


def test_free_variables_sorted_and_distinct():
    """Variables are collected from all node kinds, deduplicated and sorted."""
    assert free_variables(parse("b + a*b - min(c, 2)")) == ["a", "b", "c"]
    assert free_variables(parse("-x^y")) == ["x", "y"]
    assert free_variables(parse("1 + 2")) == []
