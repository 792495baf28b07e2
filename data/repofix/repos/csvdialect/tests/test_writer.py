import pytest

from csvdialect import UNIX, CsvError, Dialect, format_field, format_row, read, write


def test_minimal_quoting():
    """Only fields with delimiter, quote or newline are quoted."""
    assert format_row(["a", "b,c", 'q"t', "x\ny", "r\rs", 7]) == 'a,"b,c","q""t","x\ny","r\rs",7'


def test_none_and_numbers():
    """None becomes an empty field and numbers use str()."""
    assert format_row([None, 0, -1.5, True]) == ",0,-1.5,True"


def test_single_empty_field_row_is_quoted():
    """A row with one empty field is written as a pair of quotes."""
    assert format_row([""]) == '""'
    assert format_row([None]) == '""'
    assert format_row(["", ""]) == ","
    assert format_row([]) == ""


def test_quote_all_and_nonnumeric():
    """quoting='all' quotes every field; 'nonnumeric' leaves numbers bare."""
    assert format_row(["a", 1], Dialect(quoting="all")) == '"a","1"'
    assert format_row(["a", 1, 2.5, True, None], Dialect(quoting="nonnumeric")) == '"a",1,2.5,"True",""'


def test_quoting_none_uses_escapechar():
    """With quoting='none' special characters are escaped, or an error is raised."""
    d = Dialect(quoting="none", escapechar="\\")
    assert format_field('a,b"c\\', d) == 'a\\,b\\"c\\\\'
    assert format_field("plain", Dialect(quoting="none")) == "plain"
    with pytest.raises(CsvError):
        format_field("a,b", Dialect(quoting="none"))


def test_no_doublequote():
    """Without doublequote the quote is escaped, or the field is rejected."""
    assert format_field('a"b', Dialect(doublequote=False, escapechar="\\")) == '"a\\"b"'
    with pytest.raises(CsvError):
        format_field('a"b', Dialect(doublequote=False))
    assert format_field("a,b", Dialect(doublequote=False)) == '"a,b"'


def test_leading_space_quoted_when_skipping_initial_space():
    """A leading space is protected by quotes only if readers would skip it."""
    assert format_field(" a") == " a"
    assert format_field(" a", Dialect(skip_initial_space=True)) == '" a"'


def test_dialect_is_hashable_value():
    """Dialects are immutable values that compare and hash by content."""
    assert len({Dialect(), Dialect(), Dialect(delimiter=";")}) == 2


def test_write_uses_line_terminator():
    """write ends every row with the dialect's terminator."""
    assert write([["a", "b"], [1, 2]]) == "a,b\r\n1,2\r\n"
    assert write([["a", "b"]], UNIX) == '"a","b"\n'
    assert write([]) == ""


def test_round_trip():
    """Text written by write is read back to the same fields."""
    rows = [["id", "note"], ["1", 'he said "no", then left\nbye'], ["2", ""]]
    d = Dialect(delimiter="|", escapechar="\\")
    assert read(write(rows)) == rows
    assert read(write(rows, d), d) == rows


@pytest.mark.parametrize("kwargs", [
    {"delimiter": ""}, {"delimiter": ";;"}, {"quotechar": ""}, {"delimiter": '"'},
    {"escapechar": "ab"}, {"quoting": "some"},
], ids=["empty_delim", "long_delim", "empty_quote", "same_chars", "long_escape", "bad_mode"])
def test_invalid_dialect(kwargs):
    """Invalid dialect parameters raise CsvError."""
    with pytest.raises(CsvError):
        Dialect(**kwargs)
