import pytest

from ledger import InsufficientStock, Ledger, LedgerError, Shipment


def stocked() -> Ledger:
    ledger = Ledger()
    ledger.receive("widget", 10, 2.0)
    ledger.receive("widget", 5, 3.0)
    ledger.receive("gadget", 4, 10.0)
    return ledger


def test_receive_returns_increasing_lot_ids():
    """Lot ids start at 1 and increase across all SKUs."""
    ledger = Ledger()
    assert [ledger.receive("a", 1, 1.0), ledger.receive("b", 1, 1.0), ledger.receive("a", 2, 0)] == [1, 2, 3]


def test_receive_normalises_sku_and_sums_on_hand():
    """SKUs are case-insensitive and trimmed; on-hand sums every lot."""
    ledger = stocked()
    assert ledger.on_hand(" WIDGET ") == 15
    assert ledger.on_hand("unknown") == 0
    assert ledger.skus() == ["GADGET", "WIDGET"]


def test_receive_rejects_bad_input():
    """Empty SKU, zero quantity, fractional quantity and negative cost are refused."""
    ledger = Ledger()
    with pytest.raises(LedgerError):
        ledger.receive("  ", 1, 1.0)
    with pytest.raises(LedgerError):
        ledger.receive("a", 0, 1.0)
    with pytest.raises(LedgerError):
        ledger.receive("a", 1.5, 1.0)
    with pytest.raises(LedgerError):
        ledger.receive("a", True, 1.0)
    with pytest.raises(LedgerError):
        ledger.receive("a", 1, -0.5)
    assert ledger.skus() == []


def test_ship_within_first_lot():
    """A shipment smaller than the oldest lot draws only from it."""
    ledger = stocked()
    shipment = ledger.ship("widget", 4)
    assert shipment == Shipment("WIDGET", 4, 8.0, ((1, 4, 2.0),))
    assert ledger.on_hand("widget") == 11


def test_ship_spans_lots_fifo():
    """A shipment larger than the oldest lot finishes it and continues with the next."""
    ledger = stocked()
    shipment = ledger.ship("widget", 12)
    assert shipment.draws == ((1, 10, 2.0), (2, 2, 3.0))
    assert shipment.cost == 26.0
    assert shipment.unit_cost == 26.0 / 12
    assert [(lot.lot_id, lot.remaining) for lot in ledger.open_lots("widget")] == [(2, 3)]


def test_ship_exactly_one_lot_does_not_touch_next():
    """Shipping exactly a lot's size closes it and leaves the next lot intact."""
    ledger = stocked()
    shipment = ledger.ship("widget", 10)
    assert shipment.draws == ((1, 10, 2.0),)
    assert [lot.remaining for lot in ledger.open_lots("widget")] == [5]


def test_ship_all_stock_is_allowed():
    """Shipping exactly the on-hand quantity empties the SKU."""
    ledger = stocked()
    ledger.ship("gadget", 4)
    assert ledger.on_hand("gadget") == 0
    assert ledger.open_lots("gadget") == []
    assert ledger.average_cost("gadget") == 0.0


def test_overshipping_is_refused_without_changes():
    """Asking for one unit more than on hand raises and changes nothing."""
    ledger = stocked()
    with pytest.raises(InsufficientStock) as info:
        ledger.ship("widget", 16)
    err = info.value
    assert (err.sku, err.requested, err.available) == ("WIDGET", 16, 15)
    assert str(err) == "cannot ship 16 of 'WIDGET': only 15 on hand"
    assert ledger.on_hand("widget") == 15
    assert ledger.cogs() == 0.0
    assert ledger.shipments == []


def test_ship_rejects_non_positive_quantity():
    """Shipping zero or negative units is an error."""
    ledger = stocked()
    with pytest.raises(LedgerError):
        ledger.ship("widget", 0)
    with pytest.raises(LedgerError):
        ledger.ship("widget", -3)


def test_cogs_accumulates_per_sku_and_total():
    """Cost of goods sold adds up per SKU and over all SKUs."""
    ledger = stocked()
    ledger.ship("widget", 11)
    ledger.ship("widget", 1)
    ledger.ship("gadget", 1)
    assert ledger.cogs("widget") == 26.0
    assert ledger.cogs("gadget") == 10.0
    assert ledger.cogs() == 36.0
    assert ledger.cogs("nothing") == 0.0
    assert len(ledger.shipments) == 3


def test_valuation_and_average_cost():
    """Stock value uses each remaining lot's own cost."""
    ledger = stocked()
    assert ledger.valuation("widget") == 35.0
    assert ledger.valuation() == 75.0
    ledger.ship("widget", 9)
    assert ledger.valuation("widget") == 17.0
    assert ledger.average_cost("widget") == 17.0 / 6


def test_preview_cost_does_not_mutate():
    """Previewing a shipment prices it FIFO but leaves stock alone."""
    ledger = stocked()
    assert ledger.preview_cost("widget", 11) == 23.0
    assert ledger.preview_cost("widget", 1) == 2.0
    assert ledger.on_hand("widget") == 15
    with pytest.raises(InsufficientStock):
        ledger.preview_cost("gadget", 5)
