import pytest

from romannum import RomanError, add, compare, div, mul, roman_range, sub, total


def test_add():
    """Adding numerals gives the numeral of the sum."""
    assert add("XIV", "XXVIII") == "XLII"
    assert add("MMMCMXCVIII", "I") == "MMMCMXCIX"
    with pytest.raises(RomanError):
        add("MMMCMXCIX", "I")


def test_sub():
    """Subtraction must leave a positive result."""
    assert sub("L", "I") == "XLIX"
    assert sub("II", "I") == "I"
    with pytest.raises(RomanError, match="not positive"):
        sub("V", "V")
    with pytest.raises(RomanError, match="not positive"):
        sub("V", "X")


def test_mul():
    """Multiplication is limited to results up to 3999."""
    assert mul("XII", "XII") == "CXLIV"
    assert mul("I", "MMM") == "MMM"
    with pytest.raises(RomanError):
        mul("MM", "II")


def test_div_quotient_and_remainder():
    """Division returns quotient and remainder, with '' for a zero remainder."""
    assert div("XVII", "V") == ("III", "II")
    assert div("XX", "V") == ("IV", "")
    assert div("V", "V") == ("I", "")
    assert div("XVI", "V") == ("III", "I")
    with pytest.raises(RomanError, match="no Roman quotient"):
        div("IV", "V")


def test_compare():
    """compare orders numerals by value."""
    assert (compare("IX", "XI"), compare("XI", "IX"), compare("X", "X")) == (-1, 1, 0)


def test_total():
    """total sums many numerals and rejects an empty input."""
    assert total(["X", "X", "II"]) == "XXII"
    assert total(["MMM", "CM", "XC", "IX"]) == "MMMCMXCIX"
    with pytest.raises(RomanError, match="empty"):
        total([])


def test_roman_range():
    """roman_range follows range() semantics with exclusive stop."""
    assert roman_range(1, 5) == ["I", "II", "III", "IV"]
    assert roman_range(10, 0, -3) == ["X", "VII", "IV", "I"]
    assert roman_range(5, 5) == []
    with pytest.raises(ValueError, match="step"):
        roman_range(1, 5, 0)
    with pytest.raises(RomanError):
        roman_range(0, 3)
