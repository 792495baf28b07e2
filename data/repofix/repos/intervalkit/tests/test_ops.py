from intervalkit import Interval, gaps, intersect_all, merge, subtract, total_length


def test_merge_touching_half_open_intervals():
    """Merging [1, 2) and [2, 5) yields one interval."""
    assert merge([Interval(1, 2), Interval(2, 5)]) == [Interval(1, 5)]


def test_merge_keeps_gap_at_open_point():
    """[1, 2) and (2, 5) stay apart because 2 is missing from both."""
    assert merge([Interval(2, 5, "neither"), Interval(1, 2)]) == [Interval(1, 2), Interval(2, 5, "neither")]


def test_merge_sorts_and_combines_overlaps():
    """Unsorted overlapping inputs merge into a sorted disjoint list."""
    items = [Interval(8, 9), Interval(1, 4), Interval(3, 6, "both"), Interval(5, 6)]
    assert merge(items) == [Interval(1, 6, "both"), Interval(8, 9)]


def test_merge_contained_and_equal_starts():
    """A contained interval is absorbed and equal starts keep the closed start."""
    assert merge([Interval(1, 10), Interval(2, 3, "both")]) == [Interval(1, 10)]
    assert merge([Interval(1, 5, "neither"), Interval(1, 3)]) == [Interval(1, 5)]
    assert merge([Interval(1, 5), Interval(1, 5, "right")]) == [Interval(1, 5, "both")]


def test_merge_empty_and_single():
    """Merging nothing gives nothing; a single interval is returned as is."""
    assert merge([]) == []
    assert merge([Interval(0, 1, "right")]) == [Interval(0, 1, "right")]


def test_intersect_all():
    """intersect_all returns the common part, or None when it is empty."""
    assert intersect_all([Interval(0, 10), Interval(2, 8, "both"), Interval(5, 12)]) == Interval(5, 8, "both")
    assert intersect_all([Interval(0, 2), Interval(3, 4), Interval(0, 9)]) is None
    assert intersect_all([Interval(1, 2)]) == Interval(1, 2)
    assert intersect_all([]) is None


def test_subtract_middle_splits_in_two():
    """Removing a middle part leaves two pieces with complementary ends."""
    assert subtract(Interval(0, 10), Interval(3, 5)) == [Interval(0, 3, "left"), Interval(5, 10, "left")]
    assert subtract(Interval(0, 10, "both"), Interval(3, 5, "neither")) == [
        Interval(0, 3, "both"), Interval(5, 10, "both")]


def test_subtract_edges_and_disjoint():
    """Subtracting an edge trims one side; a disjoint interval changes nothing."""
    assert subtract(Interval(0, 10), Interval(-5, 4)) == [Interval(4, 10)]
    assert subtract(Interval(0, 10), Interval(6, 20)) == [Interval(0, 6)]
    assert subtract(Interval(0, 10), Interval(10, 12)) == [Interval(0, 10)]
    assert subtract(Interval(0, 10), Interval(0, 10, "both")) == []


def test_subtract_leaves_single_points():
    """Removing an open interval from a closed one can leave isolated points."""
    assert subtract(Interval(1, 5, "both"), Interval(1, 5, "neither")) == [
        Interval(1, 1, "both"), Interval(5, 5, "both")]


def test_gaps_within_span():
    """gaps lists the uncovered parts of the span in order."""
    covered = [Interval(2, 4), Interval(6, 7, "both")]
    assert gaps(covered, Interval(0, 10)) == [
        Interval(0, 2), Interval(4, 6), Interval(7, 10, "neither")]


def test_gaps_fully_covered_or_empty():
    """A covered span has no gaps and an empty cover leaves the whole span."""
    assert gaps([Interval(-1, 11)], Interval(0, 10)) == []
    assert gaps([], Interval(0, 10, "both")) == [Interval(0, 10, "both")]


def test_total_length_counts_overlaps_once():
    """Overlapping parts are counted only once in the total length."""
    assert total_length([Interval(0, 4), Interval(2, 6), Interval(10, 11)]) == 7
    assert total_length([]) == 0
