"""The ledger: receiving, FIFO shipping, on-hand and valuation queries."""

from dataclasses import dataclass
from typing import Optional

from .lots import InsufficientStock, LedgerError, Lot, validate_qty, validate_sku


@dataclass(frozen=True)
class Shipment:
    """A completed shipment and the lots it drew from as (lot_id, qty, unit_cost)."""

    sku: str
    qty: int
    cost: float
    draws: tuple[tuple[int, int, float], ...]

    @property
    def unit_cost(self) -> float:
        """Average cost per shipped unit."""
        return self.cost / self.qty


class Ledger:
    """Tracks lots per SKU and consumes them first-in, first-out."""

    def __init__(self) -> None:
        self._lots: dict[str, list[Lot]] = {}
        self._next_id = 1
        self._cogs: dict[str, float] = {}
        self.shipments: list[Shipment] = []

    def receive(self, sku: str, qty: int, unit_cost: float) -> int:
        """Add a lot and return its id (ids start at 1 and increase)."""
        sku = validate_sku(sku)
        validate_qty(qty)
        if unit_cost < 0:
            raise LedgerError("unit cost must not be negative")
        lot = Lot(self._next_id, sku, qty, unit_cost)
        self._next_id += 1
        self._lots.setdefault(sku, []).append(lot)
        return lot.lot_id

    def open_lots(self, sku: str) -> list[Lot]:
        """Lots of a SKU that still hold units, oldest first."""
        return [lot for lot in self._lots.get(validate_sku(sku), []) if lot.is_open]

    def on_hand(self, sku: str) -> int:
        """Units of a SKU currently in stock."""
        return sum(lot.remaining for lot in self.open_lots(sku))

    def skus(self) -> list[str]:
        """Every SKU ever received, sorted."""
        return sorted(self._lots)

    def _plan(self, sku: str, qty: int) -> list[tuple[Lot, int]]:
        """Work out which lots a shipment would use, without changing anything."""
        available = self.on_hand(sku)
        if qty > available:
            raise InsufficientStock(sku, qty, available)
        plan: list[tuple[Lot, int]] = []
        needed = qty
        for lot in self.open_lots(sku):
            if needed == 0:
                break
            use = min(needed, lot.remaining)
            plan.append((lot, use))
            needed -= use
        return plan

    def preview_cost(self, sku: str, qty: int) -> float:
        """Cost that shipping `qty` units would book, leaving the ledger untouched."""
        sku = validate_sku(sku)
        validate_qty(qty)
        return sum(lot.unit_cost * use for lot, use in self._plan(sku, qty))

    def ship(self, sku: str, qty: int) -> Shipment:
        """Ship units FIFO; refuse (changing nothing) if there are too few."""
        sku = validate_sku(sku)
        validate_qty(qty)
        draws = []
        cost = 0.0
        for lot, use in self._plan(sku, qty):
            lot.take(use)
            draws.append((lot.lot_id, use, lot.unit_cost))
            cost += use * lot.unit_cost
        self._cogs[sku] = self._cogs.get(sku, 0.0) + cost
        shipment = Shipment(sku, qty, cost, tuple(draws))
        self.shipments.append(shipment)
        return shipment

    def cogs(self, sku: Optional[str] = None) -> float:
        """Cost of goods sold for one SKU, or for all SKUs when none is given."""
        if sku is None:
            return sum(self._cogs.values())
        return self._cogs.get(validate_sku(sku), 0.0)

    def valuation(self, sku: Optional[str] = None) -> float:
        """Cost value of stock on hand for one SKU or the whole ledger."""
        names = self.skus() if sku is None else [validate_sku(sku)]
        return sum(lot.value for name in names for lot in self.open_lots(name))

    def average_cost(self, sku: str) -> float:
        """Weighted average unit cost of stock on hand, 0.0 when out of stock."""
        qty = self.on_hand(sku)
        if qty == 0:
            return 0.0
        return self.valuation(sku) / qty
