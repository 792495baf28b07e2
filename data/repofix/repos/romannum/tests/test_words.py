import pytest

from romannum import ordinal_words, roman_to_words, to_words


def test_words_units_and_teens():
    """Numbers below twenty have their own names."""
    assert [to_words(n) for n in (0, 1, 9, 10, 11, 13, 19)] == [
        "zero", "one", "nine", "ten", "eleven", "thirteen", "nineteen"]


def test_words_tens_with_hyphen():
    """Tens join their units with a hyphen."""
    assert [to_words(n) for n in (20, 21, 45, 90, 99)] == [
        "twenty", "twenty-one", "forty-five", "ninety", "ninety-nine"]


def test_words_hundreds():
    """Hundreds are followed by the remainder without 'and'."""
    assert [to_words(n) for n in (100, 101, 110, 119, 120, 999)] == [
        "one hundred", "one hundred one", "one hundred ten", "one hundred nineteen",
        "one hundred twenty", "nine hundred ninety-nine"]


def test_words_thousands_example():
    """1234 is 'one thousand two hundred thirty-four'."""
    assert to_words(1234) == "one thousand two hundred thirty-four"
    assert to_words(1000) == "one thousand"
    assert to_words(1005) == "one thousand five"
    assert to_words(20020) == "twenty thousand twenty"


def test_words_large_scales():
    """Millions and billions are named and empty groups are skipped."""
    assert to_words(1_000_000) == "one million"
    assert to_words(2_000_003_000) == "two billion three thousand"
    assert to_words(999_999_999_999) == (
        "nine hundred ninety-nine billion nine hundred ninety-nine million "
        "nine hundred ninety-nine thousand nine hundred ninety-nine")


def test_words_negative():
    """Negative numbers are prefixed with 'minus'."""
    assert to_words(-7) == "minus seven"
    assert to_words(-1_000_001) == "minus one million one"


def test_words_limits_and_types():
    """Magnitudes of a trillion or more and non-integers are rejected."""
    with pytest.raises(ValueError):
        to_words(10**12)
    with pytest.raises(ValueError):
        to_words(-(10**12))
    with pytest.raises(TypeError):
        to_words(1.5)
    with pytest.raises(TypeError):
        to_words(False)


def test_ordinal_irregular_forms():
    """first, second, third, fifth, eighth, ninth and twelfth are irregular."""
    assert [ordinal_words(n) for n in (1, 2, 3, 5, 8, 9, 12)] == [
        "first", "second", "third", "fifth", "eighth", "ninth", "twelfth"]


def test_ordinal_regular_and_tens():
    """Regular ordinals add 'th'; tens ending in y become 'ieth'."""
    assert [ordinal_words(n) for n in (0, 4, 11, 20, 21, 99, 100, 1000)] == [
        "zeroth", "fourth", "eleventh", "twentieth", "twenty-first", "ninety-ninth",
        "one hundredth", "one thousandth"]
    assert ordinal_words(1_000_002) == "one million second"
    with pytest.raises(ValueError):
        ordinal_words(-1)


def test_roman_to_words():
    """A numeral is spelled by its value."""
    assert roman_to_words("MCCXXXIV") == "one thousand two hundred thirty-four"
    assert roman_to_words("XL") == "forty"
