import pytest

from exprcalc import ExprSyntaxError, Token, tokenize


def kinds(source):
    return [(t.kind, t.text, t.pos) for t in tokenize(source)]


def test_tokenize_mixed_expression_with_positions():
    """Numbers, names and operators are tokenized with their start offsets."""
    assert kinds("3 + x1*(2.5)") == [
        ("num", "3", 0),
        ("op", "+", 2),
        ("name", "x1", 4),
        ("op", "*", 6),
        ("op", "(", 7),
        ("num", "2.5", 8),
        ("op", ")", 11),
        ("end", "", 12),
    ]


def test_tokenize_empty_and_blank_input():
    """Empty or blank input yields only the end token at the input length."""
    assert tokenize("") == [Token("end", "", 0)]
    assert tokenize("   ") == [Token("end", "", 3)]


def test_tokenize_number_forms():
    """Leading-dot, trailing-dot and multi-digit numbers are single tokens."""
    assert kinds(".5 1. 42") == [("num", ".5", 0), ("num", "1.", 3), ("num", "42", 6), ("end", "", 8)]


def test_tokenize_identifiers_with_underscores_and_digits():
    """Identifiers may start with an underscore and contain digits."""
    assert kinds("_a_b2^x") == [("name", "_a_b2", 0), ("op", "^", 5), ("name", "x", 6), ("end", "", 7)]


def test_tokenize_number_then_name_splits():
    """A digit run followed by letters yields a number then a name."""
    assert kinds("2x") == [("num", "2", 0), ("name", "x", 1), ("end", "", 2)]


def test_tokenize_all_operators():
    """Every operator character becomes its own op token."""
    assert [t.text for t in tokenize("+-*/%^(),")][:-1] == list("+-*/%^(),")


def test_unexpected_character_reports_position():
    """An unknown character raises ExprSyntaxError with its offset."""
    with pytest.raises(ExprSyntaxError) as info:
        tokenize("2 $ 3")
    assert info.value.pos == 2
    assert "position 2" in str(info.value)


def test_malformed_numbers_report_position():
    """A second decimal point or a lone dot is a syntax error at that offset."""
    with pytest.raises(ExprSyntaxError) as info:
        tokenize("1.2.3")
    assert info.value.pos == 3
    with pytest.raises(ExprSyntaxError) as info:
        tokenize("  . + 1")
    assert info.value.pos == 2
