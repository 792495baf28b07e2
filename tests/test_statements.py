"""Problem statements: function, input, expected vs actual; written from tests, never the fix."""

from __future__ import annotations

from pappo.tasks.statements import problem_statement

TEST_SRC = '''import pytest

from shop import Cart, total


def test_total():
    """The total of 2 x 3 and 1 x 4 is 10."""
    assert total([(2, 3), (1, 4)]) == 10


def test_reversed_literal():
    """Literal on the left is still the expected side."""
    assert 7 == total([(7, 1)])


def test_cart_method():
    """Removing an item lowers the count."""
    cart = Cart()
    cart.add("pear")
    cart.remove("pear")
    assert len(cart) == 0


def test_refuses_negative():
    """Negative quantities are refused."""
    with pytest.raises(ValueError):
        total([(-1, 3)])
'''
TESTS = {"tests/test_shop.py": TEST_SRC}


def failure(line: int, exc: str = "AssertionError", message: str = "", compare=None) -> dict:
    return {
        "exc_type": exc,
        "message": message,
        "test_file": "tests/test_shop.py",
        "test_line": line,
        "def_line": line - 2,
        "compare": compare,
        "raised_in_test_file": True,
    }


def test_assert_equal_names_function_input_expected_and_actual():
    f = {"tests/test_shop.py::test_total": failure(8, compare={"op": "==", "left": "9", "right": "10"})}
    text = problem_statement(TESTS, list(f), f)
    assert text.startswith("`total()` gives a wrong result")
    assert "What I expect: The total of 2 x 3 and 1 x 4 is 10." in text
    assert "from shop import total\n" in text and "pytest" not in text  # only used names
    assert "`total([(2, 3), (1, 4)])` gives `9`, but it should be `10`." in text


def test_literal_on_the_left_is_expected():
    f = {
        "tests/test_shop.py::test_reversed_literal": failure(
            13, compare={"op": "==", "left": "7", "right": "6"}
        )
    }
    assert "`total([(7, 1)])` gives `6`, but it should be `7`." in problem_statement(TESTS, list(f), f)


def test_method_named_from_setup_when_observed_side_has_no_api():
    f = {"tests/test_shop.py::test_cart_method": failure(21, compare={"op": "==", "left": "1", "right": "0"})}
    text = problem_statement(TESTS, list(f), f)
    assert text.startswith("`remove()` gives a wrong result")
    assert 'cart.add("pear")' in text and "`len(cart)` gives `1`, but it should be `0`." in text


def test_missing_exception_and_crash():
    f = {
        "tests/test_shop.py::test_refuses_negative": failure(
            26, "Failed", "DID NOT RAISE <class 'ValueError'>"
        )
    }
    text = problem_statement(TESTS, list(f), f)
    assert "I expected `ValueError` to be raised here, but no error was raised." in text
    crash = {"tests/test_shop.py::test_total": failure(8, "ZeroDivisionError", "division by zero")}
    assert "crashes with `ZeroDivisionError: division by zero`" in problem_statement(
        TESTS, list(crash), crash
    )


def test_two_cases_at_most_and_deterministic():
    f = {
        "tests/test_shop.py::test_total": failure(8, compare={"op": "==", "left": "9", "right": "10"}),
        "tests/test_shop.py::test_reversed_literal": failure(
            13, compare={"op": "==", "left": "7", "right": "6"}
        ),
        "tests/test_shop.py::test_refuses_negative": failure(
            26, "Failed", "DID NOT RAISE <class 'ValueError'>"
        ),
    }
    text = problem_statement(TESTS, sorted(f), f)
    assert text.count("To reproduce:") == 2 and "DID NOT RAISE" not in text
    assert text == problem_statement(TESTS, sorted(f), dict(reversed(list(f.items()))))


def test_snippet_includes_test_helpers_and_their_imports():
    src = (
        "from shop import Cart\nfrom other import unused\n\nPRICE = 3\n\n\ndef make_cart():\n"
        '    cart = Cart()\n    cart.add("pear", PRICE)\n    return cart\n\n\n'
        'def test_total():\n    """A cart with one pear costs 3."""\n    assert make_cart().total() == 3\n'
    )
    f = {"tests/test_shop.py::test_total": failure(15, compare={"op": "==", "left": "0", "right": "3"})}
    text = problem_statement({"tests/test_shop.py": src}, list(f), f)
    assert "from shop import Cart" in text and "def make_cart():" in text and "PRICE = 3" in text
    assert "unused" not in text
    assert text.startswith("`total()` gives a wrong result")
