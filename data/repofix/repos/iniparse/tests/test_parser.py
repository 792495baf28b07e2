import pytest

from iniparse import ParseError, parse, strip_inline_comment


def test_equals_and_colon_delimiters():
    """Both 'key = value' and 'key: value' are accepted and keys are lowercased."""
    cfg = parse("[s]\na = 1\nB: two\n")
    assert cfg.section_dict("s") == {"a": "1", "b": "two"}


def test_first_delimiter_wins():
    """Only the first '=' or ':' splits the line; the rest stays in the value."""
    cfg = parse("[s]\nurl: http://x?a=1\nk = a:b\n")
    assert cfg.section_dict("s") == {"url": "http://x?a=1", "k": "a:b"}


def test_comment_lines_are_ignored():
    """Lines starting with # or ; (even indented) are skipped."""
    cfg = parse("# top\n[s]\n; note\na = 1\n  # indented\nb = 2\n")
    assert cfg.section_dict("s") == {"a": "1", "b": "2"}


def test_inline_comments_need_whitespace_before():
    """Inline comments are only recognised after whitespace."""
    cfg = parse("[s]\na = v # note\nb = v ;x\ncolor = #fff\nc = x;y\n")
    assert cfg.section_dict("s") == {"a": "v", "b": "v", "color": "#fff", "c": "x;y"}


def test_strip_inline_comment_edges():
    """A comment char right after leading whitespace strips; one at index 0 never does."""
    assert strip_inline_comment("\t;c") == ""
    assert strip_inline_comment("#a ") == "#a "
    assert strip_inline_comment("a\t# b # c") == "a"


def test_continuation_lines_join_with_newlines():
    """Indented lines continue the previous value."""
    cfg = parse("[s]\nk = first\n  second\n\tthird\nz = 0\n")
    assert cfg.get("s", "k") == "first\nsecond\nthird"


def test_continuation_after_empty_value():
    """An empty first value followed by continuation lines has no leading newline."""
    cfg = parse("[s]\nk =\n  a\n  b\n")
    assert cfg.get("s", "k") == "a\nb"


def test_blank_line_ends_continuation():
    """After a blank line an indented line is an error, reported with its line number."""
    with pytest.raises(ParseError) as info:
        parse("[s]\nk = 1\n\n  more\n")
    assert info.value.line_no == 4


def test_continuation_without_option_is_error():
    """An indented line directly under a header has nothing to continue."""
    with pytest.raises(ParseError) as info:
        parse("[s]\n  orphan\n")
    assert info.value.line_no == 2


def test_option_outside_section_is_error():
    """Options before the first header are rejected on line 1."""
    with pytest.raises(ParseError) as info:
        parse("a = 1\n[s]\n")
    assert info.value.line_no == 1


@pytest.mark.parametrize("header", ["[abc", "[]", "[  ]", "["], ids=["unterminated", "empty", "blank", "bracket"])
def test_bad_headers(header):
    """Malformed section headers raise ParseError."""
    with pytest.raises(ParseError):
        parse(f"[ok]\n{header}\n")


def test_single_char_section_name():
    """A one-character section name is valid."""
    assert parse("[x]\n").sections() == ["x"]


def test_duplicates_are_errors():
    """Repeating a section or an option in one section is rejected."""
    with pytest.raises(ParseError) as info:
        parse("[a]\n[b]\n[a]\n")
    assert info.value.line_no == 3
    with pytest.raises(ParseError):
        parse("[a]\nk = 1\nK = 2\n")


def test_same_option_in_two_sections_is_fine():
    """The same key may appear once per section."""
    cfg = parse("[a]\nk = 1\n[b]\nk = 2\n")
    assert (cfg.get("a", "k"), cfg.get("b", "k")) == ("1", "2")


def test_missing_delimiter_or_key():
    """A line with no delimiter or an empty key raises ParseError."""
    with pytest.raises(ParseError):
        parse("[s]\njustaword\n")
    with pytest.raises(ParseError) as info:
        parse("[s]\n= value\n")
    assert "empty option name" in str(info.value)


def test_default_section_goes_to_defaults():
    """[DEFAULT] fills the defaults and is not listed as a section."""
    cfg = parse("[DEFAULT]\na = 1\n[s]\nb = 2\n[DEFAULT]\nc = 3\n")
    assert cfg.defaults == {"a": "1", "c": "3"}
    assert cfg.sections() == ["s"]
