"""Where two JSON-like values differ, walked the same way for the bundle audit (every difference)
and `pappo reproduce` (the first one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MISSING = object()  # a key one side lacks: unlike a key holding null


def differences(a: Any, b: Any, where: str = "", tol: float = 0.0) -> Iterator[tuple[str, Any, Any]]:
    """(path, a's value, b's value) at each place `a` and `b` differ, in key order: a dict key one
    side lacks (its value MISSING), lists of different lengths (the lists), leaves of other values
    or types (1 and 1.0 differ, as do 1 and True); two floats differ when more than `tol` apart.
    Paths read like `where.key[3].field`."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            yield from differences(a.get(k, MISSING), b.get(k, MISSING), f"{where}.{k}", tol)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{where}[{i}]", tol)
    elif type(a) is not type(b) or (a != b and not (isinstance(a, float) and abs(a - b) <= tol)):
        yield where, a, b


def first_difference(a: Any, b: Any) -> str | None:
    """The path of the first place `a` and `b` differ (exactly: no float tolerance), '(length)' after
    it for lists of different lengths, '-' for the values themselves; None when they are equal."""
    for path, x, y in differences(a, b):
        tail = " (length)" if isinstance(x, list) and isinstance(y, list) else ""
        return (path.lstrip(".") or "-") + tail
    return None
