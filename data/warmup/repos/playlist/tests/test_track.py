import pytest

from playlist import Track, format_duration, parse_duration


def test_format_duration_minute_and_hour_boundaries():
    """Durations format as h:mm:ss exactly at the minute and hour rollovers."""
    assert format_duration(0) == "0:00:00"
    assert format_duration(59) == "0:00:59"
    assert format_duration(60) == "0:01:00"
    assert format_duration(3599) == "0:59:59"
    assert format_duration(3600) == "1:00:00"
    assert format_duration(36061) == "10:01:01"


def test_format_duration_rejects_negative():
    """A negative number of seconds cannot be formatted."""
    with pytest.raises(ValueError):
        format_duration(-1)


def test_parse_duration_accepts_two_and_three_fields():
    """Both m:ss and h:mm:ss are parsed into seconds; the leading field may exceed 59."""
    assert parse_duration("3:45") == 225
    assert parse_duration("0:59") == 59
    assert parse_duration("1:00:00") == 3600
    assert parse_duration("1:59:59") == 7199
    assert parse_duration(" 60:00 ") == 3600


@pytest.mark.parametrize("text", ["1", "1:2:3:4", "1:60", "1:00:60", "a:bc", "1:-5"], ids=["one_field", "four_fields", "sixty_seconds", "sixty_in_hms", "letters", "negative"])
def test_parse_duration_rejects_malformed_text(text):
    """Malformed durations raise ValueError."""
    with pytest.raises(ValueError):
        parse_duration(text)


def test_track_validation():
    """A track needs a non-blank title and artist and at least one second."""
    assert Track("Song", "Band", 1).seconds == 1
    with pytest.raises(ValueError):
        Track("  ", "Band", 10)
    with pytest.raises(ValueError):
        Track("Song", "", 10)
    with pytest.raises(ValueError):
        Track("Song", "Band", 0)
