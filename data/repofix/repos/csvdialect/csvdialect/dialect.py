"""Dialect description shared by the reader, writer and sniffer."""

from __future__ import annotations

from dataclasses import dataclass

QUOTING_MODES = ("minimal", "all", "nonnumeric", "none")


class CsvError(ValueError):
    """Raised for malformed CSV input or an unwritable field."""


@dataclass(frozen=True)
class Dialect:
    """Formatting parameters of a CSV file."""

    delimiter: str = ","
    quotechar: str = '"'
    doublequote: bool = True
    escapechar: str | None = None
    skip_initial_space: bool = False
    lineterminator: str = "\r\n"
    quoting: str = "minimal"
    strict: bool = False

    def __post_init__(self) -> None:
        if len(self.delimiter) != 1:
            raise CsvError("delimiter must be a single character")
        if len(self.quotechar) != 1:
            raise CsvError("quotechar must be a single character")
        if self.delimiter == self.quotechar:
            raise CsvError("delimiter and quotechar must differ")
        if self.escapechar is not None and len(self.escapechar) != 1:
            raise CsvError("escapechar must be a single character")
        if self.quoting not in QUOTING_MODES:
            raise CsvError(f"unknown quoting mode: {self.quoting!r}")


EXCEL = Dialect()
EXCEL_TAB = Dialect(delimiter="\t")
UNIX = Dialect(lineterminator="\n", quoting="all")
