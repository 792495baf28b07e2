"""Serialise rows of values to CSV text."""

from __future__ import annotations

from collections.abc import Iterable

from .dialect import EXCEL, CsvError, Dialect


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _needs_quotes(text: str, dialect: Dialect) -> bool:
    specials = (dialect.delimiter, dialect.quotechar, "\r", "\n")
    if any(s in text for s in specials):
        return True
    return dialect.skip_initial_space and text.startswith(" ")


def format_field(value: object, dialect: Dialect = EXCEL) -> str:
    """Render one value as a CSV field, quoting and escaping as needed."""
    text = "" if value is None else str(value)
    mode = dialect.quoting
    if mode == "all":
        quote = True
    elif mode == "nonnumeric":
        quote = not _is_number(value)
    elif mode == "minimal":
        quote = _needs_quotes(text, dialect)
    else:
        quote = False
    q, esc = dialect.quotechar, dialect.escapechar
    if esc is not None:
        text = text.replace(esc, esc + esc)
    if quote:
        if dialect.doublequote:
            text = text.replace(q, q + q)
        elif esc is not None:
            text = text.replace(q, esc + q)
        elif q in text:
            raise CsvError("quotechar in field but neither doublequote nor escapechar set")
        return q + text + q
    if mode == "none" and _needs_quotes(text, dialect):
        if esc is None:
            raise CsvError("field needs escaping but no escapechar is set")
        for special in (dialect.delimiter, q, "\r", "\n"):
            text = text.replace(special, esc + special)
    return text


def format_row(row: Iterable[object], dialect: Dialect = EXCEL) -> str:
    """Render one row, without the line terminator."""
    fields = [format_field(value, dialect) for value in row]
    if len(fields) == 1 and fields[0] == "":
        return dialect.quotechar * 2
    return dialect.delimiter.join(fields)


def write(rows: Iterable[Iterable[object]], dialect: Dialect = EXCEL) -> str:
    """Render all rows, each followed by the dialect's line terminator."""
    return "".join(format_row(row, dialect) + dialect.lineterminator for row in rows)
