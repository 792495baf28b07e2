"""Word-level helpers: splitting text and breaking long words."""
from __future__ import annotations


def split_words(text: str) -> list[str]:
    """Split ``text`` on any run of whitespace, dropping empty pieces."""
    words: list[str] = []
    current: list[str] = []
    for ch in text:
        if ch.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


def chunk_word(word: str, width: int) -> list[str]:
    """Break ``word`` into pieces of at most ``width`` characters."""
    if width < 1:
        raise ValueError("width must be at least 1")
    return [word[i : i + width] for i in range(0, len(word), width)]


def line_length(words: list[str]) -> int:
    """Length of ``words`` joined by single spaces."""
    if not words:
        return 0
    return sum(len(w) for w in words) + len(words) - 1
