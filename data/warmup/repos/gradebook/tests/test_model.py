import pytest

from gradebook import Assignment, Gradebook


def test_add_assignment_defaults_and_validation():
    """Assignments default to weight 1 and 100 points; weights and maxima must be positive."""
    book = Gradebook()
    assert book.add_assignment("hw") == Assignment("hw", 1.0, 100.0)
    assert book.add_assignment("quiz", weight=0.5, max_points=1).weight == 0.5
    with pytest.raises(ValueError):
        book.add_assignment("hw")
    with pytest.raises(ValueError):
        book.add_assignment("zero", weight=0)
    with pytest.raises(ValueError):
        book.add_assignment("empty", max_points=0)
    assert book.weights() == {"hw": 1.0, "quiz": 0.5}


def test_assignment_record_defaults():
    """An Assignment created directly weighs 1 and is worth 100 points."""
    assignment = Assignment("essay")
    assert (assignment.weight, assignment.max_points) == (1.0, 100.0)


def test_students_are_unique_and_sorted():
    """Students are listed alphabetically and cannot be added twice."""
    book = Gradebook()
    for name in ["cat", "ann", "bob"]:
        book.add_student(name)
    assert book.students() == ["ann", "bob", "cat"]
    with pytest.raises(ValueError):
        book.add_student("bob")


def test_record_accepts_zero_and_maximum_points():
    """Points from 0 up to and including the maximum are accepted and turned into percentages."""
    book = Gradebook()
    book.add_assignment("hw", max_points=50)
    book.add_student("ann")
    book.record("ann", "hw", 50)
    assert book.percent("ann", "hw") == 100.0
    book.record("ann", "hw", 0)
    assert book.percent("ann", "hw") == 0.0
    book.record("ann", "hw", 45)
    assert book.percent("ann", "hw") == 90.0


def test_record_rejects_bad_input():
    """Unknown names raise KeyError and points outside 0..max raise ValueError."""
    book = Gradebook()
    book.add_assignment("hw", max_points=50)
    book.add_student("ann")
    with pytest.raises(KeyError):
        book.record("zed", "hw", 10)
    with pytest.raises(KeyError):
        book.record("ann", "exam", 10)
    with pytest.raises(ValueError):
        book.record("ann", "hw", -1)
    with pytest.raises(ValueError):
        book.record("ann", "hw", 50.5)


def test_scores_fill_missing_work_with_zero():
    """Unrecorded work has no percentage but counts as 0 in the score sheet."""
    book = Gradebook()
    book.add_assignment("hw")
    book.add_assignment("exam", max_points=200)
    book.add_student("ann")
    book.record("ann", "exam", 150)
    assert book.percent("ann", "hw") is None
    assert book.scores("ann") == {"hw": 0.0, "exam": 75.0}
