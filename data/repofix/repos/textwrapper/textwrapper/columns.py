"""Column layout of short items, filled top-to-bottom like ``ls``."""
from __future__ import annotations


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def columnize(items: list[str], width: int = 80, gap: int = 2) -> list[str]:
    """Lay ``items`` out in as many columns as fit in ``width``, column-major."""
    if width < 1 or gap < 0:
        raise ValueError("width must be positive and gap non-negative")
    if not items:
        return []
    col_width = max(len(item) for item in items)
    ncols = max(1, (width + gap) // (col_width + gap))
    nrows = _ceil_div(len(items), ncols)
    rows = []
    for r in range(nrows):
        cells = [items[c * nrows + r] for c in range(ncols) if c * nrows + r < len(items)]
        padded = [cell.ljust(col_width) for cell in cells[:-1]] + cells[-1:]
        rows.append((" " * gap).join(padded))
    return rows
