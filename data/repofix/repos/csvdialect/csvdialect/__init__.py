"""CSV reading, writing and dialect sniffing without the stdlib csv module."""

from .dialect import EXCEL, EXCEL_TAB, UNIX, CsvError, Dialect
from .reader import read, read_dicts
from .sniffer import has_header, sniff
from .writer import format_field, format_row, write

__all__ = [
    "EXCEL",
    "EXCEL_TAB",
    "UNIX",
    "CsvError",
    "Dialect",
    "format_field",
    "format_row",
    "has_header",
    "read",
    "read_dicts",
    "sniff",
    "write",
]
