"""Plain records kept by the desk."""
from __future__ import annotations

from dataclasses import dataclass


class LibraryError(Exception):
    """Raised when a desk operation is not allowed."""


@dataclass
class Book:
    """A title held in ``copies`` physical copies."""

    isbn: str
    title: str
    copies: int = 1

    def __post_init__(self) -> None:
        if self.copies < 1:
            raise ValueError("a book needs at least one copy")


@dataclass
class Member:
    """A library member who may hold at most ``limit`` loans at once."""

    member_id: str
    name: str
    limit: int = 3
    balance: int = 0

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("loan limit must be at least 1")


@dataclass
class Loan:
    """One copy lent to a member on ``day``, due back on ``due``."""

    isbn: str
    member_id: str
    day: int
    due: int
    returned: int | None = None

    @property
    def active(self) -> bool:
        """True while the copy has not come back."""
        return self.returned is None
