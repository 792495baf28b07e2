"""A small course gradebook."""
from .model import Assignment, Gradebook
from .grading import DEFAULT_THRESHOLDS, letter_grade, student_average, weighted_average
from .report import assignment_stats, class_rank, median, report_card

__all__ = [
    "Assignment",
    "Gradebook",
    "DEFAULT_THRESHOLDS",
    "weighted_average",
    "letter_grade",
    "student_average",
    "class_rank",
    "assignment_stats",
    "median",
    "report_card",
]
