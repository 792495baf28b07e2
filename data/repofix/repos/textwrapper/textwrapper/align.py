"""Alignment helpers: justification, centering and truncation."""
from __future__ import annotations

from .words import split_words
from .wrap import wrap_words


def justify_line(words: list[str], width: int) -> str:
    """Spread ``words`` to exactly ``width`` by widening gaps, leftmost gaps first."""
    if len(words) < 2:
        return " ".join(words)
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    if spaces < gaps:
        return " ".join(words)
    base, extra = divmod(spaces, gaps)
    parts = []
    for i, word in enumerate(words[:-1]):
        parts.append(word + " " * (base + (1 if i < extra else 0)))
    parts.append(words[-1])
    return "".join(parts)


def justify(text: str, width: int) -> list[str]:
    """Wrap and fully justify ``text``; the last line stays left-aligned."""
    if width < 1:
        raise ValueError("width must be at least 1")
    lines = wrap_words(split_words(text), width, width)
    result = [justify_line(words, width) for words in lines[:-1]]
    if lines:
        result.append(" ".join(lines[-1]))
    return result


def center(line: str, width: int, fill: str = " ") -> str:
    """Center ``line`` in ``width`` (never shortening it); an odd leftover goes right."""
    if len(fill) != 1:
        raise ValueError("fill must be a single character")
    total = width - len(line)
    left = total // 2
    return fill * left + line + fill * (total - left)


def truncate(text: str, width: int, ellipsis: str = "...", at_word: bool = False) -> str:
    """Shorten ``text`` to ``width`` characters, marking the cut with ``ellipsis``."""
    if width < 0:
        raise ValueError("width must not be negative")
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return ellipsis[:width]
    keep = width - len(ellipsis)
    head = text[:keep]
    if at_word:
        cut = head.rfind(" ")
        if cut > 0 and text[keep] != " ":
            head = head[:cut]
        head = head.rstrip()
    return head + ellipsis
