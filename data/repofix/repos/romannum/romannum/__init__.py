"""Roman numerals, Roman arithmetic and English number words."""

from .arith import add, compare, div, mul, roman_range, sub, total
from .convert import MAX_VALUE, MIN_VALUE, RomanError, from_roman, is_roman, to_roman
from .words import ordinal_words, to_words


def roman_to_words(text: str) -> str:
    """Spell the value of a Roman numeral in English words."""
    return to_words(from_roman(text))


__all__ = [
    "MAX_VALUE",
    "MIN_VALUE",
    "RomanError",
    "add",
    "compare",
    "div",
    "from_roman",
    "is_roman",
    "mul",
    "ordinal_words",
    "roman_range",
    "roman_to_words",
    "sub",
    "to_roman",
    "to_words",
]
