"""Reorder-point alerts and a simple stock report."""

from dataclasses import dataclass
from typing import Optional

from .book import Ledger
from .lots import LedgerError, validate_sku


@dataclass(frozen=True)
class ReorderAlert:
    """A SKU at or below its reorder point and how much to order."""

    sku: str
    on_hand: int
    reorder_point: int
    suggested_qty: int


class ReorderPolicy:
    """Reorder points per SKU with an order-up-to target level."""

    def __init__(self) -> None:
        self._points: dict[str, tuple[int, int]] = {}

    def set_point(self, sku: str, point: int, target: Optional[int] = None) -> None:
        """Alert when stock falls to `point`; refill up to `target` (default 2 * point)."""
        sku = validate_sku(sku)
        if point < 0:
            raise LedgerError("reorder point must not be negative")
        level = 2 * point if target is None else target
        if level <= point:
            raise LedgerError("target level must exceed the reorder point")
        self._points[sku] = (point, level)

    def point_for(self, sku: str) -> Optional[int]:
        """The reorder point configured for a SKU, if any."""
        entry = self._points.get(validate_sku(sku))
        return None if entry is None else entry[0]

    def check(self, ledger: Ledger) -> list[ReorderAlert]:
        """Alerts for every SKU at or below its point, most urgent first."""
        alerts = []
        for sku, (point, level) in self._points.items():
            qty = ledger.on_hand(sku)
            if qty <= point:
                alerts.append(ReorderAlert(sku, qty, point, level - qty))
        alerts.sort(key=lambda a: (a.on_hand - a.reorder_point, a.sku))
        return alerts


def stock_report(ledger: Ledger, limit: Optional[int] = None) -> list[tuple[str, int, float]]:
    """(sku, on_hand, value) rows ordered by value, highest first, then by sku."""
    rows = [(sku, ledger.on_hand(sku), ledger.valuation(sku)) for sku in ledger.skus()]
    rows.sort(key=lambda row: (-row[2], row[0]))
    if limit is not None:
        if limit < 0:
            raise LedgerError("limit must not be negative")
        rows = rows[:limit]
    return rows
