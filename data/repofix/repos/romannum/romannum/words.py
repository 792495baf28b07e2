"""Spell integers as English words."""

from __future__ import annotations

ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
    "seventeen", "eighteen", "nineteen",
)
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
SCALES = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"))
LIMIT = 10**12

IRREGULAR_ORDINALS = {
    "one": "first", "two": "second", "three": "third", "five": "fifth",
    "eight": "eighth", "nine": "ninth", "twelve": "twelfth",
}


def _below_thousand(n: int) -> str:
    """Spell 1..999."""
    words: list[str] = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words.append(ONES[hundreds] + " hundred")
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(TENS[tens] + ("-" + ONES[ones] if ones else ""))
    elif rest > 0:
        words.append(ONES[rest])
    return " ".join(words)


def to_words(n: int) -> str:
    """Spell an integer with magnitude below one trillion in English."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("expected int")
    if abs(n) >= LIMIT:
        raise ValueError(f"{n} is too large to spell")
    if n == 0:
        return ONES[0]
    if n < 0:
        return "minus " + to_words(-n)
    parts: list[str] = []
    for value, name in SCALES:
        count, n = divmod(n, value)
        if count:
            parts.append(_below_thousand(count) + " " + name)
    if n:
        parts.append(_below_thousand(n))
    return " ".join(parts)


def ordinal_words(n: int) -> str:
    """Spell a non-negative integer as an ordinal, e.g. 21 -> 'twenty-first'."""
    if n < 0:
        raise ValueError("ordinals need a non-negative number")
    words = to_words(n)
    head, sep, last = words.rpartition(" ")
    prefix, dash, unit = last.rpartition("-")
    if unit in IRREGULAR_ORDINALS:
        unit = IRREGULAR_ORDINALS[unit]
    elif unit.endswith("y"):
        unit = unit[:-1] + "ieth"
    else:
        unit += "th"
    return head + sep + prefix + dash + unit
