"""Guess the dialect of a CSV sample and whether it starts with a header."""

from __future__ import annotations

from .dialect import CsvError, Dialect
from .reader import read

DEFAULT_DELIMITERS = ",;\t|:"
QUOTE_CANDIDATES = "\"'"
MIN_CONSISTENCY = 0.5


def _count_outside_quotes(line: str, ch: str, quotechar: str) -> int:
    count = 0
    inside = False
    for c in line:
        if c == quotechar:
            inside = not inside
        elif c == ch and not inside:
            count += 1
    return count


def _guess_quotechar(lines: list[str]) -> str:
    """Pick the quote character that most often opens a line or field."""
    best, best_hits = '"', 0
    for q in QUOTE_CANDIDATES:
        hits = 0
        for line in lines:
            for i in range(len(line)):
                if line[i] == q and (i == 0 or not line[i - 1].isalnum()):
                    hits += 1
        if hits > best_hits:
            best, best_hits = q, hits
    return best


def sniff(sample: str, delimiters: str = DEFAULT_DELIMITERS) -> Dialect:
    """Guess delimiter, quote character and initial-space handling from a sample."""
    lines = [line for line in sample.splitlines() if line.strip()]
    if not lines:
        raise CsvError("cannot sniff an empty sample")
    quotechar = _guess_quotechar(lines)
    best: str | None = None
    best_score = (0.0, 0)
    for delim in delimiters:
        counts = [_count_outside_quotes(line, delim, quotechar) for line in lines]
        mode = max(set(counts), key=lambda c: (counts.count(c), c))
        if mode == 0:
            continue
        consistency = counts.count(mode) / len(counts)
        if consistency < MIN_CONSISTENCY:
            continue
        score = (consistency, mode)
        if score > best_score:
            best, best_score = delim, score
    if best is None:
        raise CsvError("could not determine delimiter")
    followed = sum(line.count(best + " ") for line in lines)
    total = sum(line.count(best) for line in lines)
    skip = followed * 2 > total
    return Dialect(delimiter=best, quotechar=quotechar, skip_initial_space=skip)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def has_header(sample: str, dialect: Dialect | None = None) -> bool:
    """Guess whether the first row of ``sample`` is a header row."""
    if dialect is None:
        dialect = sniff(sample)
    rows = read(sample, dialect)
    if len(rows) < 2:
        return False
    header, data = rows[0], rows[1:]
    votes = 0
    for col in range(len(header)):
        cells = [row[col] for row in data if col < len(row)]
        if not cells:
            continue
        if all(_is_number(c) for c in cells):
            votes += -1 if _is_number(header[col]) else 1
            continue
        lengths = {len(c) for c in cells}
        if len(lengths) == 1:
            votes += -1 if len(header[col]) in lengths else 1
    return votes > 0
