import pytest

from gradebook import Gradebook, letter_grade, student_average, weighted_average


def test_weighted_average_uses_weights():
    """Heavier assignments count proportionally more."""
    assert weighted_average({"hw": 80, "exam": 90}, {"hw": 1, "exam": 3}) == 87.5
    assert weighted_average({"a": 100, "b": 0, "c": 0}, {"a": 1, "b": 1, "c": 1}) == 33.33


def test_weighted_average_drops_lowest_scores():
    """Dropping N removes the N lowest scores before averaging."""
    scores = {"a": 50, "b": 70, "c": 90}
    weights = {"a": 1, "b": 1, "c": 1}
    assert weighted_average(scores, weights, drop_lowest=0) == 70.0
    assert weighted_average(scores, weights, drop_lowest=1) == 80.0
    assert weighted_average(scores, weights, drop_lowest=2) == 90.0


def test_weighted_average_drop_limits():
    """Dropping every assignment or a negative number of them is an error."""
    scores = {"a": 50, "b": 70, "c": 90}
    weights = {"a": 1, "b": 1, "c": 1}
    with pytest.raises(ValueError):
        weighted_average(scores, weights, drop_lowest=3)
    with pytest.raises(ValueError):
        weighted_average(scores, weights, drop_lowest=-1)


def test_weighted_average_missing_scores_count_as_zero():
    """A missing score counts as 0 and is therefore the first one dropped."""
    assert weighted_average({"a": 80}, {"a": 1, "b": 1}) == 40.0
    assert weighted_average({"a": 80}, {"a": 1, "b": 1}, drop_lowest=1) == 80.0


def test_weighted_average_tie_drops_alphabetically_first():
    """Among equal lowest scores the alphabetically first assignment is dropped."""
    scores = {"a": 50, "b": 50, "c": 100}
    weights = {"b": 3, "a": 1, "c": 1}
    assert weighted_average(scores, weights, drop_lowest=1) == 62.5


def test_weighted_average_rejects_non_positive_weights():
    """Every weight must be positive; an empty weight table cannot be averaged."""
    with pytest.raises(ValueError):
        weighted_average({"a": 100, "b": 50}, {"a": 0, "b": 1})
    with pytest.raises(ValueError):
        weighted_average({"a": 100}, {"a": -1})
    with pytest.raises(ValueError):
        weighted_average({}, {})
    assert weighted_average({"a": 100, "b": 50}, {"a": 0.01, "b": 1}) == 50.5


def test_weighted_average_missing_sorts_as_exact_zero():
    """A missing score ranks like a real 0: below 0.5, and tied with 0 (name decides)."""
    assert weighted_average({"b": 0.5, "c": 100}, {"a": 1, "b": 1, "c": 1}, drop_lowest=1) == 50.25
    assert weighted_average({"a": 0, "c": 100}, {"a": 1, "b": 3, "c": 1}, drop_lowest=1) == 25.0


@pytest.mark.parametrize(
    "average, expected",
    [(100, "A"), (90, "A"), (89.99, "B"), (80, "B"), (79.99, "C"), (70, "C"), (69.99, "D"), (60, "D"), (59.99, "F"), (0, "F")],
    ids=["top", "a_min", "below_a", "b_min", "below_b", "c_min", "below_c", "d_min", "below_d", "zero"],
)
def test_letter_grade_default_thresholds(average, expected):
    """Each default minimum is inclusive: 90 A, 80 B, 70 C, 60 D, else F."""
    assert letter_grade(average) == expected


def test_letter_grade_rejects_out_of_range():
    """Averages below 0 or above 100 are rejected."""
    with pytest.raises(ValueError):
        letter_grade(100.01)
    with pytest.raises(ValueError):
        letter_grade(-0.01)


def test_letter_grade_custom_thresholds_and_fallback():
    """Custom thresholds are checked from the highest minimum down, in any dict order."""
    assert letter_grade(50, {"P": 50}) == "P"
    assert letter_grade(49.9, {"P": 50}) == "F"
    assert letter_grade(10, {"P": 50}, fallback="U") == "U"
    assert letter_grade(95, {"D": 60, "A": 90}) == "A"
    assert letter_grade(75, {"D": 60, "A": 90}) == "D"


def test_student_average_from_book():
    """A student's average uses the book's weights, percentages and drop rule."""
    book = Gradebook()
    book.add_assignment("hw1", weight=1, max_points=10)
    book.add_assignment("hw2", weight=1, max_points=10)
    book.add_assignment("exam", weight=2, max_points=50)
    book.add_student("ann")
    book.record("ann", "hw1", 4)
    book.record("ann", "hw2", 8)
    book.record("ann", "exam", 45)
    assert student_average(book, "ann") == 75.0
    assert student_average(book, "ann", drop_lowest=1) == 86.67
