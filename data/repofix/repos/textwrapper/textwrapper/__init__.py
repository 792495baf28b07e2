"""Plain-text layout: wrapping, justification, centering, truncation, columns."""
from .align import center, justify, justify_line, truncate
from .columns import columnize
from .words import chunk_word, line_length, split_words
from .wrap import fill, hanging_indent, wrap, wrap_words

__all__ = [
    "center", "chunk_word", "columnize", "fill", "hanging_indent", "justify", "justify_line",
    "line_length", "split_words", "truncate", "wrap", "wrap_words",
]
