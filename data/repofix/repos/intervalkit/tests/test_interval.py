import pytest

from intervalkit import Interval, closed_name, make_interval, parse_interval


def test_default_interval_is_half_open():
    """A default interval includes its start but not its end."""
    iv = Interval(1, 5)
    assert (iv.contains(1), iv.contains(4.999), iv.contains(5), iv.contains(0.999)) == (True, True, False, False)


def test_closed_and_open_end_membership():
    """Closed ends include the endpoint and open ends exclude it."""
    assert [Interval(1, 5, "both").contains(x) for x in (1, 5)] == [True, True]
    assert [Interval(1, 5, "neither").contains(x) for x in (1, 3, 5)] == [False, True, False]
    assert [Interval(1, 5, "right").contains(x) for x in (1, 5, 6)] == [False, True, False]


def test_invalid_intervals_are_rejected():
    """Reversed, degenerate half-open and unknown-kind intervals raise ValueError."""
    with pytest.raises(ValueError):
        Interval(5, 1)
    with pytest.raises(ValueError):
        Interval(2, 2)
    with pytest.raises(ValueError):
        Interval(0, 1, "open")
    assert Interval(2, 2, "both").length == 0


def test_intervals_are_hashable_values():
    """Intervals hash by value so equal intervals collapse in a set."""
    assert len({Interval(1, 2), Interval(1, 2), Interval(1, 2, "both")}) == 2


def test_length_and_str():
    """Length is end minus start and str uses bracket notation."""
    assert Interval(-3, 4).length == 7
    assert str(Interval(1, 2, "right")) == "(1, 2]"
    assert str(Interval(0, 9, "both")) == "[0, 9]"


def test_closed_name_labels():
    """End flags map to the four closed labels."""
    assert [closed_name(True, True), closed_name(True, False),
            closed_name(False, True), closed_name(False, False)] == ["both", "left", "right", "neither"]


def test_make_interval_returns_none_for_empty():
    """make_interval returns None for reversed or open point intervals."""
    assert make_interval(3, 2, True, True) is None
    assert make_interval(2, 2, True, False) is None
    assert make_interval(2, 2, True, True) == Interval(2, 2, "both")
    assert make_interval(1, 2, False, True) == Interval(1, 2, "right")


def test_intersect_keeps_inner_end_kinds():
    """The intersection takes each end from the interval that bounds it."""
    assert Interval(1, 5).intersect(Interval(3, 8, "both")) == Interval(3, 5, "left")
    assert Interval(3, 8, "both").intersect(Interval(1, 5)) == Interval(3, 5, "left")
    assert Interval(0, 10, "both").intersect(Interval(2, 4, "neither")) == Interval(2, 4, "neither")
    assert Interval(3, 8, "both").intersect(Interval(1, 5, "neither")) == Interval(3, 5, "left")


def test_intersect_with_shared_ends():
    """Shared ends stay closed only when both intervals include them."""
    assert Interval(1, 5, "both").intersect(Interval(1, 5, "left")) == Interval(1, 5, "left")
    assert Interval(1, 5, "right").intersect(Interval(1, 5, "both")) == Interval(1, 5, "right")


def test_touching_intervals_overlap_only_if_both_closed():
    """Intervals meeting at a point overlap only when both include the point."""
    assert Interval(1, 3).overlaps(Interval(3, 5)) is False
    assert Interval(1, 3, "both").overlaps(Interval(3, 5)) is True
    assert Interval(1, 3, "both").intersect(Interval(3, 5)) == Interval(3, 3, "both")
    assert Interval(1, 3, "both").overlaps(Interval(3, 5, "right")) is False
    assert Interval(1, 2).overlaps(Interval(4, 6)) is False


def test_covers():
    """covers is True only when the other interval lies fully inside."""
    outer = Interval(0, 10)
    assert outer.covers(Interval(2, 3)) is True
    assert outer.covers(Interval(0, 10, "neither")) is True
    assert outer.covers(Interval(0, 10, "both")) is False
    assert outer.covers(Interval(5, 11)) is False


def test_parse_interval_notation():
    """Bracket notation is parsed into the matching interval."""
    assert parse_interval("[1, 5)") == Interval(1, 5, "left")
    assert parse_interval(" (0.5,2] ") == Interval(0.5, 2, "right")
    assert parse_interval("[-3,-1]") == Interval(-3, -1, "both")
    assert parse_interval("(1.0, 4)") == Interval(1.0, 4, "neither")
    assert parse_interval("[1,2]") == Interval(1, 2, "both")


def test_parse_interval_keeps_number_style():
    """Integers stay integers and decimals stay floats after parsing."""
    assert str(parse_interval("[1, 5)")) == "[1, 5)"
    assert str(parse_interval("(1.0, 2.5]")) == "(1.0, 2.5]"


@pytest.mark.parametrize("text", ["1, 5", "[1 5)", "[1,2,3]", "[]", "<1, 2>", "[1, 5"])
def test_parse_interval_rejects_bad_notation(text):
    """Malformed notation raises ValueError."""
    with pytest.raises(ValueError):
        parse_interval(text)
