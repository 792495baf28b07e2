"""A small library circulation desk: loans, holds, due dates and fines."""
from .desk import Desk
from .fines import FINE_CAP, FINE_PER_DAY, LOAN_DAYS, days_late, due_day, late_fine
from .records import Book, LibraryError, Loan, Member

__all__ = [
    "FINE_CAP",
    "FINE_PER_DAY",
    "LOAN_DAYS",
    "Book",
    "Desk",
    "LibraryError",
    "Loan",
    "Member",
    "days_late",
    "due_day",
    "late_fine",
]
