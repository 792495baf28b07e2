import pytest

from textwrapper import center, columnize, justify, justify_line, truncate

FRUITS = ["apple", "fig", "kiwi", "banana", "plum", "pear", "cherry"]


def test_justify_distributes_extra_spaces_left_first():
    """Full lines reach the width exactly, extra spaces go to the leftmost gaps."""
    assert justify("the quick brown fox jumps over the lazy dog", 16) == [
        "the  quick brown",
        "fox  jumps  over",
        "the lazy dog",
    ]


def test_justify_line_directly():
    """A line is padded evenly, single words are untouched, overfull lines use single spaces."""
    assert justify_line(["a", "b", "c"], 10) == "a    b   c"
    assert justify_line(["a", "b", "c"], 9) == "a   b   c"
    assert justify_line(["a", "b", "c"], 8) == "a   b  c"
    assert justify_line(["a", "b"], 3) == "a b"
    assert justify_line(["a", "b"], 5) == "a   b"
    assert justify_line(["word"], 10) == "word"
    assert justify_line([], 10) == ""
    assert justify_line(["abc", "def"], 6) == "abc def"


def test_justify_single_word_lines_and_empty_text():
    """Lines holding one word stay left-aligned; empty text gives no lines."""
    assert justify("longword a b", 8) == ["longword", "a b"]
    assert justify("", 5) == []
    assert justify("a b", 1) == ["a", "b"]
    with pytest.raises(ValueError):
        justify("a", 0)
    with pytest.raises(ValueError):
        justify("", 0)


def test_center_puts_odd_space_on_the_right():
    """Centering splits padding evenly, the odd extra column going right."""
    assert center("ab", 5, "*") == "*ab**"
    assert center("ab", 6) == "  ab  "
    assert center("abc", 3) == "abc"
    assert center("abcd", 3) == "abcd"
    with pytest.raises(ValueError):
        center("a", 5, "--")


def test_truncate_basic_and_boundaries():
    """Text within the width is untouched; longer text ends in the ellipsis."""
    assert truncate("hello world", 11) == "hello world"
    assert truncate("hello world", 10) == "hello w..."
    assert truncate("hello", 3) == "..."
    assert truncate("hello", 2) == ".."
    assert truncate("hello", 0) == ""
    assert truncate("hello", 4, ellipsis="~") == "hel~"
    with pytest.raises(ValueError):
        truncate("hello", -1)


def test_truncate_at_word_boundary():
    """With at_word the cut moves back to the previous whole word."""
    assert truncate("hello world foo", 10, at_word=True) == "hello..."
    assert truncate("hello world foo", 14, at_word=True) == "hello world..."
    assert truncate("abcdefghij", 6, at_word=True) == "abc..."
    assert truncate("hi there you", 9, at_word=True) == "hi..."
    assert truncate("a bcdefgh", 7, at_word=True) == "a..."
    assert truncate(" abcdefgh", 7, at_word=True) == " abc..."


def test_columnize_fills_columns_top_to_bottom():
    """Items run down each column; rows never exceed the width."""
    assert columnize(FRUITS, 30) == ["apple   kiwi    plum    cherry", "fig     banana  pear"]
    assert columnize(FRUITS, 29) == ["apple   banana  cherry", "fig     plum", "kiwi    pear"]


def test_columnize_narrow_gap_and_single_column():
    """A custom gap changes the fit; a too-narrow width gives one column."""
    assert columnize(["a", "b", "c", "d"], 7, gap=1) == ["a b c d"]
    assert columnize(["a", "b", "c", "d"], 6, gap=1) == ["a c", "b d"]
    assert columnize(["abc", "de"], 2) == ["abc", "de"]
    assert columnize(["a", "b", "c"], 5, gap=0) == ["abc"]


def test_columnize_default_width_is_80():
    """Two 39-character items fit side by side in the default 80 columns."""
    a, b = "a" * 39, "b" * 39
    assert columnize([a, b]) == [a + "  " + b]
    assert columnize([a, b], 79) == [a, b]


def test_columnize_short_last_column_and_empty():
    """A short last column leaves later rows shorter; empty input gives no rows."""
    assert columnize(["a", "b", "c", "d", "e"], 9) == ["a  c  e", "b  d"]
    assert columnize(["a", "b", "c", "d"], 9) == ["a  c", "b  d"]
    assert columnize([], 10) == []
    assert columnize(["x"]) == ["x"]
    assert columnize(["a"], 1) == ["a"]
    with pytest.raises(ValueError):
        columnize(["a"], 0)
    with pytest.raises(ValueError):
        columnize(["a"], 5, gap=-1)
