"""Greedy line wrapping with indentation support."""
from __future__ import annotations

from .words import chunk_word, line_length, split_words


def wrap_words(words: list[str], first_width: int, rest_width: int, break_long_words: bool = True) -> list[list[str]]:
    """Greedily pack ``words`` into lines; the first line may have a different width."""
    lines: list[list[str]] = []
    current: list[str] = []
    for word in words:
        width = first_width if not lines else rest_width
        if current and line_length(current) + 1 + len(word) <= width:
            current.append(word)
            continue
        if current:
            lines.append(current)
            current = []
            width = rest_width
        if len(word) > width and break_long_words:
            lines.append([word[:width]])
            pieces = chunk_word(word[width:], rest_width)
            lines.extend([piece] for piece in pieces[:-1])
            word = pieces[-1]
        current = [word]
    if current:
        lines.append(current)
    return lines


def wrap(
    text: str,
    width: int = 70,
    break_long_words: bool = True,
    indent: str = "",
    subsequent_indent: str = "",
) -> list[str]:
    """Wrap ``text`` into lines of at most ``width`` characters, indents included."""
    first = width - len(indent)
    rest = width - len(subsequent_indent)
    if first < 1 or rest < 1:
        raise ValueError("width must exceed the indentation")
    lines = wrap_words(split_words(text), first, rest, break_long_words)
    result = []
    for index, words in enumerate(lines):
        prefix = indent if index == 0 else subsequent_indent
        result.append(prefix + " ".join(words))
    return result


def fill(text: str, width: int = 70, break_long_words: bool = True) -> str:
    """Wrap ``text`` and join the lines with newlines."""
    return "\n".join(wrap(text, width, break_long_words))


def hanging_indent(text: str, width: int, hang: int = 4) -> list[str]:
    """Wrap with the first line flush left and later lines indented by ``hang`` spaces."""
    if hang < 0:
        raise ValueError("hang must not be negative")
    return wrap(text, width, indent="", subsequent_indent=" " * hang)
