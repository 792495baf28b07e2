import pytest

from gridrobot import MAX_COUNT, CommandError, parse_commands, turn


def test_parse_mixed_commands_with_default_count():
    """Commands without a number count once; numbers are read as counts."""
    assert parse_commands("F3 L R F b12") == [("F", 3), ("L", 1), ("R", 1), ("F", 1), ("B", 12)]


def test_parse_empty_string_gives_no_commands():
    """An empty or blank command string is an empty program."""
    assert parse_commands("   ") == []


def test_parse_count_limits_are_inclusive():
    """Counts 1 and MAX_COUNT are accepted."""
    assert parse_commands(f"F1 R{MAX_COUNT}") == [("F", 1), ("R", 99)]


@pytest.mark.parametrize("text", ["F0", "F100", "X2", "F2x", "L-1"])
def test_parse_rejects_bad_tokens(text):
    """Zero, too large, unknown ops and non-numeric counts are errors."""
    with pytest.raises(CommandError):
        parse_commands(text)


def test_turning_right_and_left_wraps_around():
    """Right from W is N, left from N is W, and three rights equal one left."""
    assert [turn("W", "R"), turn("N", "L"), turn("E", "R", 3), turn("S", "L", 4)] == ["N", "W", "N", "S"]


def test_turn_rejects_bad_input():
    """Unknown headings and non-turn ops raise ValueError."""
    with pytest.raises(ValueError):
        turn("Q", "L")
    with pytest.raises(ValueError):
        turn("N", "F")
