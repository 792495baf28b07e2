from playlist import Track, artist_runs, smart_shuffle


def t(artist: str, n: int) -> Track:
    return Track(f"{artist}{n}", artist, 100 + n)


def titles(tracks):
    return [track.title for track in tracks]


def test_shuffle_interleaves_the_largest_artist():
    """The artist with most tracks leads, and others are slotted in between."""
    tracks = [t("A", 1), t("A", 2), t("A", 3), t("B", 1), t("C", 1)]
    assert titles(smart_shuffle(tracks)) == ["A1", "B1", "A2", "C1", "A3"]


def test_shuffle_prefers_larger_artist_even_when_listed_later():
    """A later artist with more tracks goes first; leftovers repeat only when unavoidable."""
    tracks = [t("B", 1), t("A", 1), t("A", 2), t("A", 3)]
    assert titles(smart_shuffle(tracks)) == ["A1", "B1", "A2", "A3"]


def test_shuffle_repeats_artist_only_when_nothing_else_is_left():
    """When only the just-played artist has tracks left, its tracks follow in order."""
    tracks = [t("A", 1), t("A", 2), t("A", 3), t("B", 1)]
    assert titles(smart_shuffle(tracks)) == ["A1", "B1", "A2", "A3"]


def test_shuffle_tie_goes_to_first_appearing_artist():
    """Artists with equally many tracks alternate, starting with the first seen."""
    tracks = [t("A", 1), t("A", 2), t("B", 1), t("B", 2)]
    assert titles(smart_shuffle(tracks)) == ["A1", "B1", "A2", "B2"]


def test_shuffle_edge_cases():
    """Empty input stays empty and a single artist keeps its order."""
    assert smart_shuffle([]) == []
    assert titles(smart_shuffle([t("A", 1), t("A", 2)])) == ["A1", "A2"]


def test_artist_runs_counts_adjacent_repeats():
    """Adjacent same-artist pairs are counted, including at the very start and end."""
    assert artist_runs([]) == 0
    assert artist_runs([t("A", 1)]) == 0
    assert artist_runs([t("A", 1), t("A", 2), t("B", 1), t("B", 2)]) == 2
    assert artist_runs([t("A", 1), t("B", 1), t("A", 2)]) == 0


def test_shuffle_removes_runs_and_keeps_all_tracks():
    """A shuffled playlist contains every track once and no avoidable repeats."""
    tracks = [t("A", 1), t("A", 2), t("B", 1), t("B", 2), t("C", 1), t("C", 2)]
    shuffled = smart_shuffle(tracks)
    assert sorted(titles(shuffled)) == sorted(titles(tracks))
    assert artist_runs(shuffled) == 0
    assert titles(shuffled) == ["A1", "B1", "C1", "A2", "B2", "C2"]
