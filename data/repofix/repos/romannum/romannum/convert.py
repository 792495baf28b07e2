"""Conversion between integers and strictly formed Roman numerals."""

from __future__ import annotations

MIN_VALUE = 1
MAX_VALUE = 3999

TABLE: tuple[tuple[int, str], ...] = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)

# (one, five, ten, unit value) for hundreds, tens and ones
DECADES: tuple[tuple[str, str, str, int], ...] = (
    ("C", "D", "M", 100),
    ("X", "L", "C", 10),
    ("I", "V", "X", 1),
)


class RomanError(ValueError):
    """Raised for invalid numerals or values outside 1..3999."""


def check_range(n: int) -> int:
    """Return ``n`` if it can be written as a Roman numeral, else raise."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"expected int, got {type(n).__name__}")
    if n < MIN_VALUE or n > MAX_VALUE:
        raise RomanError(f"{n} is outside {MIN_VALUE}..{MAX_VALUE}")
    return n


def to_roman(n: int) -> str:
    """Convert an integer in 1..3999 to its canonical Roman numeral."""
    check_range(n)
    parts: list[str] = []
    for value, symbol in TABLE:
        count, n = divmod(n, value)
        parts.append(symbol * count)
    return "".join(parts)


def _take_repeats(text: str, pos: int, symbol: str, limit: int) -> tuple[int, int]:
    """Count up to ``limit`` copies of ``symbol`` starting at ``pos``."""
    count = 0
    for _ in range(limit):
        if pos < len(text) and text[pos] == symbol:
            count += 1
            pos += 1
        else:
            break
    return count, pos


def from_roman(text: str, allow_lowercase: bool = False) -> int:
    """Convert a canonical Roman numeral to an integer; reject non-canonical forms."""
    if not isinstance(text, str):
        raise TypeError("expected a string")
    if allow_lowercase:
        text = text.upper()
    if not text:
        raise RomanError("empty numeral")
    thousands, pos = _take_repeats(text, 0, "M", 3)
    total = thousands * 1000
    for one, five, ten, unit in DECADES:
        if text.startswith(one + ten, pos):
            total += 9 * unit
            pos += 2
        elif text.startswith(one + five, pos):
            total += 4 * unit
            pos += 2
        else:
            has_five = text.startswith(five, pos)
            if has_five:
                pos += 1
            count, pos = _take_repeats(text, pos, one, 3)
            total += (5 * unit if has_five else 0) + count * unit
    if pos != len(text):
        raise RomanError(f"invalid Roman numeral: {text!r}")
    return total


def is_roman(text: str) -> bool:
    """Return True when ``text`` is a canonical upper-case Roman numeral."""
    try:
        from_roman(text)
    except (RomanError, TypeError):
        return False
    return True
