from intervalkit import Interval, IntervalSet


def test_add_merges_neighbours():
    """Adding a bridging interval joins the neighbours into one."""
    s = IntervalSet([Interval(0, 2), Interval(5, 8)])
    s.add(Interval(2, 5))
    assert list(s) == [Interval(0, 8)]
    assert len(s) == 1


def test_remove_splits_stored_interval():
    """Removing a middle part splits the stored interval."""
    s = IntervalSet([Interval(0, 10)])
    s.remove(Interval(4, 6))
    assert list(s) == [Interval(0, 4), Interval(6, 10)]
    assert s.length == 8


def test_query_point_lookup():
    """query returns the interval containing the point or None."""
    s = IntervalSet([Interval(0, 2), Interval(5, 8, "both")])
    assert s.query(0) == Interval(0, 2)
    assert s.query(8) == Interval(5, 8, "both")
    assert s.query(2) is None
    assert s.query(-1) is None
    assert s.query(9) is None


def test_contains_operator():
    """The in operator checks point membership and rejects non-numbers."""
    s = IntervalSet([Interval(1, 3)])
    assert (1 in s, 2.5 in s, 3 in s, "2" in s) == (True, True, False, False)


def test_overlapping_and_span():
    """overlapping selects intersecting intervals; span encloses them all."""
    s = IntervalSet([Interval(0, 2, "right"), Interval(4, 6), Interval(9, 12, "both")])
    assert s.overlapping(Interval(2, 5)) == [Interval(0, 2, "right"), Interval(4, 6)]
    assert s.span() == Interval(0, 12, "right")


def test_empty_set():
    """An empty set is falsy, has no span and zero length."""
    s = IntervalSet()
    assert (bool(s), len(s), s.span(), s.length) == (False, 0, None, 0)
    s.add(Interval(1, 2))
    assert bool(s) is True
