import pytest

from ledger import Ledger, LedgerError, Lot, ReorderAlert, ReorderPolicy, stock_report


def test_lot_defaults_remaining_to_qty():
    """A new lot starts with all units remaining unless told otherwise."""
    lot = Lot(1, "A", 5, 2.0)
    assert (lot.remaining, lot.is_open, lot.value) == (5, True, 10.0)
    empty = Lot(2, "A", 5, 2.0, remaining=0)
    assert (empty.remaining, empty.is_open, empty.value) == (0, False, 0.0)


def test_lot_take_caps_at_remaining():
    """Taking more than remains takes only what is there."""
    lot = Lot(1, "A", 3, 1.0)
    assert lot.take(2) == 2
    assert lot.take(5) == 1
    assert lot.take(0) == 0
    assert lot.remaining == 0
    with pytest.raises(LedgerError):
        lot.take(-1)


def test_reorder_alert_at_exactly_the_point():
    """Stock equal to the reorder point alerts; one above does not."""
    ledger = Ledger()
    ledger.receive("a", 5, 1.0)
    ledger.receive("b", 6, 1.0)
    policy = ReorderPolicy()
    policy.set_point("a", 5)
    policy.set_point("b", 5)
    assert policy.check(ledger) == [ReorderAlert("A", 5, 5, 5)]


def test_reorder_alerts_sorted_by_urgency_then_sku():
    """Alerts list the deepest shortfall first, ties by SKU name."""
    ledger = Ledger()
    ledger.receive("x", 1, 1.0)
    ledger.receive("y", 3, 1.0)
    policy = ReorderPolicy()
    policy.set_point("y", 4, target=10)
    policy.set_point("x", 2)
    policy.set_point("z", 3)
    assert policy.check(ledger) == [
        ReorderAlert("Z", 0, 3, 6),
        ReorderAlert("X", 1, 2, 3),
        ReorderAlert("Y", 3, 4, 7),
    ]


def test_reorder_triggered_by_shipping():
    """Shipping below the point produces an alert that suggests refilling to target."""
    ledger = Ledger()
    ledger.receive("a", 10, 1.0)
    policy = ReorderPolicy()
    policy.set_point("a", 3, target=12)
    assert policy.check(ledger) == []
    ledger.ship("a", 8)
    assert policy.check(ledger) == [ReorderAlert("A", 2, 3, 10)]


def test_reorder_policy_validation():
    """Negative points and targets not above the point are refused."""
    policy = ReorderPolicy()
    with pytest.raises(LedgerError):
        policy.set_point("a", -1, target=5)
    with pytest.raises(LedgerError):
        policy.set_point("a", 4, target=4)
    with pytest.raises(LedgerError):
        policy.set_point("a", 0)
    policy.set_point("zero", 0, target=3)
    assert policy.point_for("zero") == 0
    policy.set_point("a", 4, target=5)
    assert policy.point_for("a") == 4
    assert policy.point_for("b") is None


def test_stock_report_orders_by_value_then_sku():
    """Rows are sorted by value descending and by SKU for equal values."""
    ledger = Ledger()
    ledger.receive("b", 2, 5.0)
    ledger.receive("a", 10, 1.0)
    ledger.receive("c", 1, 20.0)
    assert stock_report(ledger) == [("C", 1, 20.0), ("A", 10, 10.0), ("B", 2, 10.0)]


def test_stock_report_limit():
    """A limit keeps only the first rows; zero keeps none and negative is refused."""
    ledger = Ledger()
    ledger.receive("a", 1, 3.0)
    ledger.receive("b", 1, 2.0)
    ledger.receive("c", 1, 1.0)
    assert stock_report(ledger, limit=2) == [("A", 1, 3.0), ("B", 1, 2.0)]
    assert stock_report(ledger, limit=0) == []
    with pytest.raises(LedgerError):
        stock_report(ledger, limit=-1)
