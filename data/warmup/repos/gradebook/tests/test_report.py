import pytest

from gradebook import Gradebook, assignment_stats, class_rank, median, report_card


def test_class_rank_ties_share_rank_and_skip_next():
    """Equal averages share a rank and the following rank is skipped."""
    averages = {"dan": 70, "bob": 85, "ann": 90, "cat": 85}
    assert class_rank(averages) == [(1, "ann", 90), (2, "bob", 85), (2, "cat", 85), (4, "dan", 70)]


def test_class_rank_tie_at_the_top_and_empty():
    """A tie for first gives everyone rank 1 (alphabetical order); no students, no ranking."""
    assert class_rank({"b": 80, "a": 80, "c": 79}) == [(1, "a", 80), (1, "b", 80), (3, "c", 79)]
    assert class_rank({"y": 50, "x": 50}) == [(1, "x", 50), (1, "y", 50)]
    assert class_rank({}) == []


def test_median_odd_even_and_empty():
    """Odd lengths take the middle value, even lengths the mean of the two middle ones."""
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    assert median([5]) == 5
    with pytest.raises(ValueError):
        median([])


def make_book() -> Gradebook:
    book = Gradebook()
    book.add_assignment("hw", max_points=50)
    book.add_assignment("exam", weight=3)
    for name in ["ann", "bob", "cat"]:
        book.add_student(name)
    book.record("ann", "hw", 40)
    book.record("bob", "hw", 45)
    book.record("ann", "exam", 95)
    book.record("bob", "exam", 75)
    book.record("cat", "exam", 60)
    return book


def test_assignment_stats_over_recorded_scores():
    """Statistics only use recorded percentages and report how many are missing."""
    assert assignment_stats(make_book(), "hw") == {
        "count": 2,
        "missing": 1,
        "mean": 85.0,
        "min": 80.0,
        "max": 90.0,
        "median": 85.0,
    }
    stats = assignment_stats(make_book(), "exam")
    assert (stats["count"], stats["missing"], stats["mean"], stats["median"]) == (3, 0, 76.67, 75.0)


def test_assignment_stats_without_scores_and_unknown():
    """An assignment nobody handed in only reports counts; an unknown one raises KeyError."""
    book = make_book()
    book.add_assignment("project")
    assert assignment_stats(book, "project") == {"count": 0, "missing": 3}
    with pytest.raises(KeyError):
        assignment_stats(book, "nope")


def test_report_card_averages_and_letters():
    """The report card lists every student's weighted average and letter grade."""
    assert report_card(make_book()) == {
        "ann": (91.25, "A"),
        "bob": (78.75, "C"),
        "cat": (45.0, "F"),
    }


def test_report_card_with_drop_and_custom_thresholds():
    """Dropping the lowest score and custom thresholds change the card."""
    card = report_card(make_book(), drop_lowest=1, thresholds={"P": 60})
    assert card == {"ann": (95.0, "P"), "bob": (90.0, "P"), "cat": (60.0, "P")}
