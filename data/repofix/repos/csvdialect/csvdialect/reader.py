"""A character-level state machine that splits CSV text into rows."""

from __future__ import annotations

from .dialect import EXCEL, CsvError, Dialect

START, FIELD, QUOTED, QUOTE_IN_QUOTED = range(4)


def read(text: str, dialect: Dialect = EXCEL) -> list[list[str]]:
    """Parse CSV ``text`` into rows of string fields; blank lines are skipped."""
    rows: list[list[str]] = []
    row: list[str] = []
    field: list[str] = []
    state = START
    escaped = False
    n = len(text)
    for i in range(n):
        ch = text[i]
        if escaped:
            field.append(ch)
            escaped = False
            if state == START:
                state = FIELD
            continue
        if ch == dialect.escapechar and state != QUOTE_IN_QUOTED:
            escaped = True
            continue
        if state == QUOTED:
            if ch == dialect.quotechar:
                state = QUOTE_IN_QUOTED
            else:
                field.append(ch)
            continue
        if state == QUOTE_IN_QUOTED and ch == dialect.quotechar and dialect.doublequote:
            field.append(ch)
            state = QUOTED
            continue
        if ch == dialect.delimiter:
            row.append("".join(field))
            field = []
            state = START
        elif ch in "\r\n":
            if row or field or state != START:
                row.append("".join(field))
                rows.append(row)
            row, field, state = [], [], START
        elif state == START:
            if ch == " " and dialect.skip_initial_space:
                continue
            if ch == dialect.quotechar:
                state = QUOTED
            else:
                field.append(ch)
                state = FIELD
        else:
            if state == QUOTE_IN_QUOTED and dialect.strict:
                raise CsvError(f"unexpected {ch!r} after closing quote at offset {i}")
            field.append(ch)
            state = FIELD
    if escaped:
        raise CsvError("text ends with an unused escape character")
    if state == QUOTED:
        raise CsvError("unterminated quoted field")
    if row or field or state != START:
        row.append("".join(field))
        rows.append(row)
    return rows


def read_dicts(text: str, dialect: Dialect = EXCEL) -> list[dict[str, str]]:
    """Parse CSV text whose first row is a header into a list of dicts."""
    rows = read(text, dialect)
    if not rows:
        return []
    header = rows[0]
    result = []
    for lineno, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise CsvError(f"row {lineno} has {len(row)} fields, expected {len(header)}")
        result.append(dict(zip(header, row)))
    return result
