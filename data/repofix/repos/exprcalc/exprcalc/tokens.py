"""Tokenizer for arithmetic expressions."""
from __future__ import annotations

from dataclasses import dataclass

OPERATORS = "+-*/%^(),"


class ExprSyntaxError(ValueError):
    """Raised for malformed input; ``pos`` is the 0-based offending offset."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} at position {pos}")
        self.pos = pos


@dataclass(frozen=True)
class Token:
    """A lexical token: kind is 'num', 'name', 'op' or 'end'."""

    kind: str
    text: str
    pos: int


def _scan_number(source: str, start: int) -> int:
    """Return the end offset of the number literal starting at ``start``."""
    end = start
    dots = 0
    for ch in source[start:]:
        if ch == ".":
            dots += 1
            if dots > 1:
                raise ExprSyntaxError("malformed number", end)
        elif not ch.isdigit():
            break
        end += 1
    if source[start:end] == ".":
        raise ExprSyntaxError("malformed number", start)
    return end


def _scan_name(source: str, start: int) -> int:
    """Return the end offset of the identifier starting at ``start``."""
    end = start
    for ch in source[start:]:
        if not (ch.isalnum() or ch == "_"):
            break
        end += 1
    return end


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens, always ending with an 'end' token."""
    tokens: list[Token] = []
    i = 0
    n = len(source)
    for _ in range(n):
        if i >= n:
            break
        ch = source[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            end = _scan_number(source, i)
            tokens.append(Token("num", source[i:end], i))
            i = end
        elif ch.isalpha() or ch == "_":
            end = _scan_name(source, i)
            tokens.append(Token("name", source[i:end], i))
            i = end
        elif ch in OPERATORS:
            tokens.append(Token("op", ch, i))
            i += 1
        else:
            raise ExprSyntaxError(f"unexpected character {ch!r}", i)
    tokens.append(Token("end", "", n))
    return tokens
