import pytest

from librarydesk import Book, Desk, LibraryError, Loan, Member


def make_desk(copies=1, limit=2):
    desk = Desk()
    desk.add_book(Book("111", "Dune", copies))
    desk.add_book(Book("222", "Emma"))
    for mid in ("ann", "bob", "cat"):
        desk.add_member(Member(mid, mid.title(), limit))
    return desk


def test_records_validate_and_default():
    """Books need a copy, members a limit of at least one; defaults are 1 copy and 3 loans."""
    assert (Book("1", "A").copies, Member("m", "M").limit, Member("m", "M").balance) == (1, 3, 0)
    with pytest.raises(ValueError):
        Book("1", "A", copies=0)
    with pytest.raises(ValueError):
        Member("m", "M", limit=0)


def test_adding_same_isbn_adds_copies_and_duplicate_member_fails():
    """A known ISBN gains copies; a known member id is rejected."""
    desk = make_desk(copies=2)
    desk.add_book(Book("111", "Dune", 3))
    assert desk.available("111") == 5
    with pytest.raises(LibraryError):
        desk.add_member(Member("ann", "Again"))


def test_checkout_sets_due_day_and_reduces_availability():
    """Checking out on day 3 makes the copy due on day 17 and leaves one fewer on the shelf."""
    desk = make_desk(copies=2)
    loan = desk.checkout("ann", "111", 3)
    assert loan == Loan("111", "ann", 3, 17)
    assert (desk.available("111"), loan.active) == (1, True)


def test_checkout_fails_without_copies_or_unknown_ids():
    """No copy on the shelf, unknown books and unknown members are errors."""
    desk = make_desk(copies=1)
    desk.checkout("ann", "111", 0)
    with pytest.raises(LibraryError):
        desk.checkout("bob", "111", 0)
    with pytest.raises(LibraryError):
        desk.checkout("bob", "999", 0)
    with pytest.raises(LibraryError):
        desk.checkout("zed", "222", 0)


def test_loan_limit_is_inclusive():
    """A member with limit 2 can hold exactly two loans, not three."""
    desk = make_desk(copies=3, limit=2)
    desk.checkout("ann", "111", 0)
    desk.checkout("ann", "222", 0)
    assert desk.can_borrow("ann") is False
    with pytest.raises(LibraryError):
        desk.checkout("ann", "111", 0)
    assert [loan.isbn for loan in desk.loans_of("ann")] == ["111", "222"]


def test_return_on_time_and_late_charges_balance():
    """An on-time return costs nothing; a return 3 days late costs 75 and adds to the balance."""
    desk = make_desk(copies=2)
    desk.checkout("ann", "111", 0)
    desk.checkout("bob", "111", 0)
    assert desk.return_book("ann", "111", 14) == (0, None)
    assert desk.return_book("bob", "111", 17) == (75, None)
    assert (desk.members["ann"].balance, desk.members["bob"].balance, desk.available("111")) == (0, 75, 2)


def test_return_errors():
    """Returning something not borrowed, or before the checkout day, is an error."""
    desk = make_desk()
    desk.checkout("ann", "111", 5)
    with pytest.raises(LibraryError):
        desk.return_book("bob", "111", 6)
    with pytest.raises(LibraryError):
        desk.return_book("ann", "111", 4)
    desk.return_book("ann", "111", 5)
    with pytest.raises(LibraryError):
        desk.return_book("ann", "111", 6)


def test_holds_queue_in_order_and_served_on_return():
    """Holds are served first come first served when a copy comes back."""
    desk = make_desk(copies=1)
    desk.checkout("ann", "111", 0)
    assert desk.place_hold("bob", "111") == 1
    assert desk.place_hold("cat", "111") == 2
    assert desk.return_book("ann", "111", 10) == (0, "bob")
    assert desk.holds("111") == ["cat"]
    assert [(loan.member_id, loan.day, loan.due) for loan in desk.loans_of("bob")] == [("bob", 10, 24)]


def test_hold_skips_member_at_limit_but_keeps_them_queued():
    """A waiting member at the loan limit is skipped; the next one gets the copy."""
    desk = make_desk(copies=1, limit=1)
    desk.checkout("ann", "111", 0)
    desk.checkout("bob", "222", 0)
    desk.place_hold("bob", "111")
    desk.place_hold("cat", "111")
    assert desk.return_book("ann", "111", 2) == (0, "cat")
    assert desk.holds("111") == ["bob"]


def test_return_with_no_eligible_hold_leaves_copy_on_shelf():
    """If nobody waiting may borrow, the copy stays on the shelf."""
    desk = make_desk(copies=1, limit=1)
    desk.checkout("ann", "111", 0)
    desk.checkout("bob", "222", 0)
    desk.place_hold("bob", "111")
    assert desk.return_book("ann", "111", 1) == (0, None)
    assert (desk.available("111"), desk.holds("111")) == (1, ["bob"])


def test_place_hold_errors():
    """Holds need an unavailable title, no duplicate hold and no own loan of it."""
    desk = make_desk(copies=1)
    with pytest.raises(LibraryError):
        desk.place_hold("ann", "111")
    desk.checkout("ann", "111", 0)
    with pytest.raises(LibraryError):
        desk.place_hold("ann", "111")
    desk.place_hold("bob", "111")
    with pytest.raises(LibraryError):
        desk.place_hold("bob", "111")
    with pytest.raises(LibraryError):
        desk.holds("999")


def test_fines_block_borrowing_until_paid():
    """A balance reaching block_at blocks checkout; paying below it unblocks."""
    desk = Desk(per_day=100, cap=1000, block_at=1000)
    desk.add_book(Book("111", "Dune", 2))
    desk.add_member(Member("ann", "Ann"))
    desk.checkout("ann", "111", 0)
    assert desk.return_book("ann", "111", 24) == (1000, None)
    assert desk.can_borrow("ann") is False
    assert desk.pay("ann", 1) == 999
    assert desk.can_borrow("ann") is True


def test_pay_validates_amount():
    """Payments must be positive and at most the balance; paying it all leaves zero."""
    desk = make_desk()
    desk.members["ann"].balance = 50
    with pytest.raises(ValueError):
        desk.pay("ann", 0)
    with pytest.raises(ValueError):
        desk.pay("ann", 51)
    assert desk.pay("ann", 50) == 0


def test_overdue_report_sorted_and_excludes_due_today():
    """Only loans past their due day appear, most overdue first, ties by member."""
    desk = make_desk(copies=3, limit=3)
    desk.checkout("cat", "111", 0)
    desk.checkout("ann", "111", 0)
    desk.checkout("bob", "111", 5)
    desk.checkout("bob", "222", 6)
    assert desk.overdue_report(20) == [("ann", "111", 6), ("cat", "111", 6), ("bob", "111", 1)]
    assert desk.overdue_report(14) == []


def test_overdue_report_skips_returned_loans():
    """Returned loans are never reported as overdue."""
    desk = make_desk(copies=2)
    desk.checkout("ann", "111", 0)
    desk.checkout("bob", "111", 0)
    desk.return_book("ann", "111", 30)
    assert desk.overdue_report(30) == [("bob", "111", 16)]


def test_overdue_report_ties_ordered_by_isbn():
    """Equal lateness for one member is listed by ISBN."""
    desk = make_desk(copies=1, limit=3)
    desk.checkout("bob", "222", 0)
    desk.checkout("bob", "111", 0)
    assert desk.overdue_report(15) == [("bob", "111", 1), ("bob", "222", 1)]
