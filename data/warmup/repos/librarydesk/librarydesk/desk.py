"""The circulation desk: checkout, return, holds and overdue reports."""
from __future__ import annotations

from collections import deque

from .fines import FINE_CAP, FINE_PER_DAY, LOAN_DAYS, days_late, due_day, late_fine
from .records import Book, LibraryError, Loan, Member


class Desk:
    """Tracks books, members, loans and the holds queue of each title."""

    def __init__(
        self,
        loan_days: int = LOAN_DAYS,
        per_day: int = FINE_PER_DAY,
        cap: int = FINE_CAP,
        block_at: int = 1000,
    ) -> None:
        self.loan_days = loan_days
        self.per_day = per_day
        self.cap = cap
        self.block_at = block_at
        self.books: dict[str, Book] = {}
        self.members: dict[str, Member] = {}
        self.loans: list[Loan] = []
        self._holds: dict[str, deque[str]] = {}

    def add_book(self, book: Book) -> None:
        """Register a title; adding a known ISBN adds its copies."""
        if book.isbn in self.books:
            self.books[book.isbn].copies += book.copies
        else:
            self.books[book.isbn] = book
            self._holds[book.isbn] = deque()

    def add_member(self, member: Member) -> None:
        """Register a member; ids must be unique."""
        if member.member_id in self.members:
            raise LibraryError(f"duplicate member {member.member_id}")
        self.members[member.member_id] = member

    def _book(self, isbn: str) -> Book:
        if isbn not in self.books:
            raise LibraryError(f"unknown book {isbn}")
        return self.books[isbn]

    def _member(self, member_id: str) -> Member:
        if member_id not in self.members:
            raise LibraryError(f"unknown member {member_id}")
        return self.members[member_id]

    def loans_of(self, member_id: str) -> list[Loan]:
        """Active loans of a member, oldest first."""
        return [loan for loan in self.loans if loan.active and loan.member_id == member_id]

    def available(self, isbn: str) -> int:
        """Copies of a title currently on the shelf."""
        out = sum(1 for loan in self.loans if loan.active and loan.isbn == isbn)
        return self._book(isbn).copies - out

    def can_borrow(self, member_id: str) -> bool:
        """True when the member is under the loan limit and not blocked by fines."""
        member = self._member(member_id)
        return len(self.loans_of(member_id)) < member.limit and member.balance < self.block_at

    def checkout(self, member_id: str, isbn: str, day: int) -> Loan:
        """Lend a copy to a member; returns the new loan."""
        self._book(isbn)
        if not self.can_borrow(member_id):
            raise LibraryError(f"{member_id} may not borrow now")
        if self.available(isbn) <= 0:
            raise LibraryError(f"no copy of {isbn} available")
        loan = Loan(isbn, member_id, day, due_day(day, self.loan_days))
        self.loans.append(loan)
        return loan

    def place_hold(self, member_id: str, isbn: str) -> int:
        """Queue a member for a title with no copy on the shelf; returns the queue position (1-based)."""
        self._member(member_id)
        self._book(isbn)
        queue = self._holds[isbn]
        if self.available(isbn) > 0:
            raise LibraryError("a copy is available, check it out instead")
        if member_id in queue:
            raise LibraryError("hold already placed")
        if any(loan.isbn == isbn for loan in self.loans_of(member_id)):
            raise LibraryError("member already has this title")
        queue.append(member_id)
        return len(queue)

    def holds(self, isbn: str) -> list[str]:
        """Members waiting for a title, in service order."""
        self._book(isbn)
        return list(self._holds[isbn])

    def return_book(self, member_id: str, isbn: str, day: int) -> tuple[int, str | None]:
        """Take a copy back; returns (fine charged, member the copy went to via holds)."""
        for loan in self.loans_of(member_id):
            if loan.isbn == isbn:
                break
        else:
            raise LibraryError(f"{member_id} has no loan of {isbn}")
        if day < loan.day:
            raise LibraryError("cannot return before checkout")
        loan.returned = day
        fine = late_fine(loan.due, day, self.per_day, self.cap)
        self.members[member_id].balance += fine
        return fine, self._serve_hold(isbn, day)

    def _serve_hold(self, isbn: str, day: int) -> str | None:
        """Lend the returned copy to the first waiting member who may borrow."""
        queue = self._holds[isbn]
        for index, waiting in enumerate(queue):
            if self.can_borrow(waiting):
                del queue[index]
                self.checkout(waiting, isbn, day)
                return waiting
        return None

    def pay(self, member_id: str, amount: int) -> int:
        """Pay towards a member's fines; returns the remaining balance."""
        member = self._member(member_id)
        if amount <= 0 or amount > member.balance:
            raise ValueError("payment must be positive and not exceed the balance")
        member.balance -= amount
        return member.balance

    def overdue_report(self, today: int) -> list[tuple[str, str, int]]:
        """(member_id, isbn, days overdue) for active late loans, most overdue first."""
        rows = [
            (loan.member_id, loan.isbn, days_late(loan.due, today))
            for loan in self.loans
            if loan.active and today > loan.due
        ]
        return sorted(rows, key=lambda row: (-row[2], row[0], row[1]))
