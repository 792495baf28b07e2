import pytest

from csvdialect import CsvError, Dialect, read, read_dicts


def test_simple_rows():
    """Plain fields split on commas, one row per line."""
    assert read("a,b,c\n1,2,3\n") == [["a", "b", "c"], ["1", "2", "3"]]


def test_line_endings_and_blank_lines():
    """CRLF, CR and LF all end rows; blank lines are skipped; last newline optional."""
    assert read("a,b\r\nc,d\re,f\n\ng,h") == [["a", "b"], ["c", "d"], ["e", "f"], ["g", "h"]]
    assert read("") == []
    assert read("\n\r\n") == []


def test_empty_fields():
    """Adjacent and trailing delimiters produce empty fields."""
    assert read(",a,,\n") == [["", "a", "", ""]]
    assert read('""\n') == [[""]]


def test_quoted_delimiter_and_doubled_quote():
    """Quoted fields may hold delimiters and doubled quote characters."""
    assert read('"a,b","say ""hi""",c\n') == [["a,b", 'say "hi"', "c"]]


def test_quoted_newline_stays_in_field():
    """A newline inside quotes belongs to the field, not a new row."""
    assert read('id,text\n1,"line one\nline two"\n2,x') == [
        ["id", "text"], ["1", "line one\nline two"], ["2", "x"]]
    assert read('"a\r\nb"') == [["a\r\nb"]]


def test_custom_delimiter_and_quotechar():
    """Delimiter and quote character come from the dialect."""
    d = Dialect(delimiter=";", quotechar="'")
    assert read("x;'y;z';'it''s'\n", d) == [["x", "y;z", "it's"]]
    assert read('a,"b";c', d) == [['a,"b"', "c"]]


def test_skip_initial_space():
    """Leading spaces are dropped only when skip_initial_space is set."""
    assert read('a, b,  "c"\n') == [["a", " b", '  "c"']]
    assert read('a, b,  "c"\n', Dialect(skip_initial_space=True)) == [["a", "b", "c"]]
    assert read("a,b ", Dialect(skip_initial_space=True)) == [["a", "b "]]


def test_quote_inside_unquoted_field_is_literal():
    """A quote character in the middle of an unquoted field is kept as is."""
    assert read('ab"c,d\n') == [['ab"c', "d"]]


def test_text_after_closing_quote():
    """Text after a closing quote is appended, or rejected in strict mode."""
    assert read('"ab"c,d') == [["abc", "d"]]
    with pytest.raises(CsvError):
        read('"ab"c,d', Dialect(strict=True))
    assert read('"ab",d', Dialect(strict=True)) == [["ab", "d"]]


def test_no_doublequote_ends_field_at_second_quote():
    """Without doublequote the second quote closes the field and the rest is literal."""
    assert read('"a""b"', Dialect(doublequote=False)) == [['a"b"']]


def test_escapechar():
    """The escape character makes the next character literal, even in quotes."""
    d = Dialect(escapechar="\\")
    assert read('a\\,b,c\\\\\n', d) == [["a,b", "c\\"]]
    assert read('"x\\"y",\\z', d) == [['x"y', "z"]]
    with pytest.raises(CsvError):
        read("abc\\", d)
    assert read("\\, b", Dialect(escapechar="\\", skip_initial_space=True)) == [[", b"]]


def test_unterminated_quote_raises():
    """A quoted field that never closes is an error."""
    with pytest.raises(CsvError):
        read('a,"bc\nd')


def test_read_dicts():
    """read_dicts maps header names to values and checks row widths."""
    assert read_dicts("name,age\nann,3\nbob,40\n") == [
        {"name": "ann", "age": "3"}, {"name": "bob", "age": "40"}]
    assert read_dicts("") == []
    assert read_dicts("name,age\n") == []
    with pytest.raises(CsvError, match="row 3"):
        read_dicts("a,b\n1,2\n3\n")
