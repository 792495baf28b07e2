"""Text taken from a bundle, made safe to print: a bundle's text cannot move the cursor, hide what
follows, recolour the verdict on a terminal, or (one line) forge lines of the verdict."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but \t and \n


def printable(text: str) -> str:
    """`text` with every control character but tab and newline escaped (`\\x1b`): a bundle's text
    cannot move the cursor, hide what follows, or recolour the verdict on a terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def one_line(text: str) -> str:
    """`printable`, newlines escaped too: a field cannot forge lines of the verdict."""
    return printable(text).replace("\n", "\\n")
