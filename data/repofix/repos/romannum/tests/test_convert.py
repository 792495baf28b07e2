import pytest

from romannum import MAX_VALUE, MIN_VALUE, RomanError, from_roman, is_roman, to_roman


def test_to_roman_small_values():
    """Small numbers use additive and subtractive forms."""
    assert [to_roman(n) for n in (1, 2, 3, 4, 5, 6, 8, 9, 10)] == [
        "I", "II", "III", "IV", "V", "VI", "VIII", "IX", "X"]


def test_to_roman_subtractive_pairs():
    """40, 90, 400 and 900 use XL, XC, CD and CM."""
    assert [to_roman(n) for n in (14, 40, 49, 90, 400, 444, 900, 999)] == [
        "XIV", "XL", "XLIX", "XC", "CD", "CDXLIV", "CM", "CMXCIX"]


def test_to_roman_limits():
    """The range ends 1 and 3999 convert; the neighbours outside raise."""
    assert (to_roman(MIN_VALUE), to_roman(MAX_VALUE)) == ("I", "MMMCMXCIX")
    assert to_roman(1994) == "MCMXCIV"
    with pytest.raises(RomanError):
        to_roman(0)
    with pytest.raises(RomanError):
        to_roman(4000)
    with pytest.raises(RomanError):
        to_roman(-5)


def test_to_roman_type_errors():
    """Only real integers are accepted, not bools, floats or strings."""
    for bad in (True, 3.0, "5"):
        with pytest.raises(TypeError):
            to_roman(bad)


def test_from_roman_values():
    """Canonical numerals convert back to their values."""
    assert [from_roman(s) for s in ("I", "IV", "IX", "XLII", "XC", "CD", "MCMXCIV", "MMMCMXCIX")] == [
        1, 4, 9, 42, 90, 400, 1994, 3999]


def test_from_roman_round_trip_all_values():
    """Every value in 1..3999 survives a round trip."""
    assert all(from_roman(to_roman(n)) == n for n in range(1, 4000))


@pytest.mark.parametrize("text", [
    "IIII", "VX", "IL", "IC", "XM", "VV", "LL", "DD", "MMMM", "IIX", "XXXX", "CMC", "CMD",
    "XCX", "IXI", "IVI", "VIV", "CCCC", "DCD", "ABC", "X I", "",
])
def test_from_roman_rejects_non_canonical(text):
    """Repeated, misordered or unknown symbols are rejected."""
    with pytest.raises(RomanError):
        from_roman(text)


def test_from_roman_lowercase():
    """Lower-case numerals are rejected unless explicitly allowed."""
    with pytest.raises(RomanError):
        from_roman("xiv")
    assert from_roman("xiv", allow_lowercase=True) == 14
    assert from_roman("MmXxIv", allow_lowercase=True) == 2024


def test_from_roman_requires_string():
    """Non-string input raises TypeError."""
    with pytest.raises(TypeError, match="expected a string"):
        from_roman(12)


def test_is_roman():
    """is_roman reports validity without raising."""
    assert [is_roman(s) for s in ("XII", "IIII", "", "iv", None, "MMM", "MMMD")] == [
        True, False, False, False, False, True, True]
