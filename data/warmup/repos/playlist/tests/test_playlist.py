import pytest

from playlist import Playlist, PlaylistFullError, Track


def make(*titles: str) -> Playlist:
    return Playlist(Track(t, "Band", 100) for t in titles)


def test_add_appends_and_inserts_at_valid_positions():
    """Tracks append by default and can be inserted at the front or exactly at the end."""
    pl = make("b")
    pl.add(Track("a", "X", 10), position=0)
    pl.add(Track("c", "X", 10), position=2)
    pl.add(Track("d", "X", 10))
    assert pl.titles() == ["a", "b", "c", "d"]


def test_add_rejects_positions_outside_the_list():
    """Inserting before the start or past the end raises IndexError."""
    pl = make("a", "b")
    with pytest.raises(IndexError):
        pl.add(Track("x", "X", 10), position=3)
    with pytest.raises(IndexError):
        pl.add(Track("x", "X", 10), position=-1)
    assert len(pl) == 2


def test_playlist_capacity_limit():
    """A playlist accepts exactly max_tracks tracks and refuses one more."""
    pl = Playlist(max_tracks=2)
    pl.add(Track("a", "X", 10))
    pl.add(Track("b", "X", 10))
    assert len(pl) == 2
    with pytest.raises(PlaylistFullError):
        pl.add(Track("c", "X", 10))
    assert Playlist(max_tracks=1).max_tracks == 1
    with pytest.raises(ValueError):
        Playlist(max_tracks=0)


def test_default_capacity_is_one_hundred():
    """By default a playlist holds 100 tracks."""
    pl = Playlist(Track(f"t{i}", "X", 1) for i in range(100))
    assert len(pl) == 100
    with pytest.raises(PlaylistFullError):
        pl.add(Track("extra", "X", 1))


def test_remove_takes_first_matching_title():
    """Removing a title removes only its first occurrence and returns that track."""
    pl = Playlist([Track("a", "X", 10), Track("b", "X", 20), Track("a", "Y", 30)])
    removed = pl.remove("a")
    assert removed == Track("a", "X", 10)
    assert pl.titles() == ["b", "a"]
    with pytest.raises(KeyError):
        pl.remove("zzz")


def test_move_forward_and_backward():
    """Moving a track places it exactly at the target index."""
    pl = make("a", "b", "c")
    pl.move(0, 2)
    assert pl.titles() == ["b", "c", "a"]
    pl.move(2, 0)
    assert pl.titles() == ["a", "b", "c"]
    pl.move(1, 1)
    assert pl.titles() == ["a", "b", "c"]


def test_move_rejects_out_of_range_indices():
    """Source and target must both be existing indices."""
    pl = make("a", "b", "c")
    for source, target in [(3, 0), (0, 3), (-1, 0), (0, -1)]:
        with pytest.raises(IndexError):
            pl.move(source, target)
    assert pl.titles() == ["a", "b", "c"]


def test_total_duration():
    """The total length is the sum of all tracks, formatted as h:mm:ss."""
    assert Playlist().total_duration() == "0:00:00"
    pl = Playlist([Track("a", "X", 200), Track("b", "X", 250), Track("c", "X", 3200)])
    assert pl.total_seconds() == 3650
    assert pl.total_duration() == "1:00:50"


def test_filter_by_duration_is_inclusive_on_both_ends():
    """Filtering keeps tracks whose length equals either bound."""
    pl = Playlist([Track(str(s), "X", s) for s in (100, 180, 240, 300)])
    assert [t.seconds for t in pl.filter_by_duration(180, 240)] == [180, 240]
    assert [t.seconds for t in pl.filter_by_duration(181, 239)] == []
    assert [t.seconds for t in pl.filter_by_duration(240, 240)] == [240]


def test_filter_by_duration_defaults_and_open_ranges():
    """Without bounds all tracks are kept; a single bound filters one side only."""
    pl = Playlist([Track(str(s), "X", s) for s in (100, 180, 240, 300)])
    assert [t.seconds for t in pl.filter_by_duration()] == [100, 180, 240, 300]
    assert [t.seconds for t in pl.filter_by_duration(241)] == [300]
    assert [t.seconds for t in pl.filter_by_duration(max_seconds=179)] == [100]
    with pytest.raises(ValueError):
        pl.filter_by_duration(200, 199)


def test_tracks_property_returns_a_copy():
    """Mutating the returned track list does not change the playlist."""
    pl = make("a", "b")
    pl.tracks.clear()
    assert pl.titles() == ["a", "b"]
