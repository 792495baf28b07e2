"""Lots of received stock and the errors raised by the ledger."""

from dataclasses import dataclass
from typing import Optional


class LedgerError(ValueError):
    """Invalid ledger operation (bad sku, quantity or cost)."""


class InsufficientStock(LedgerError):
    """Raised when a shipment asks for more units than are on hand."""

    def __init__(self, sku: str, requested: int, available: int) -> None:
        super().__init__(f"cannot ship {requested} of {sku!r}: only {available} on hand")
        self.sku = sku
        self.requested = requested
        self.available = available


@dataclass
class Lot:
    """Units of one SKU received together at a single unit cost."""

    lot_id: int
    sku: str
    qty: int
    unit_cost: float
    remaining: Optional[int] = None

    def __post_init__(self) -> None:
        if self.remaining is None:
            self.remaining = self.qty

    @property
    def is_open(self) -> bool:
        """A lot is open while it still has units left."""
        return self.remaining > 0

    @property
    def value(self) -> float:
        """Cost value of the units still in this lot."""
        return self.remaining * self.unit_cost

    def take(self, wanted: int) -> int:
        """Remove up to `wanted` units and return how many were taken."""
        if wanted < 0:
            raise LedgerError("cannot take a negative quantity")
        taken = min(wanted, self.remaining)
        self.remaining -= taken
        return taken


def validate_sku(sku: str) -> str:
    """Normalise a SKU (strip, upper-case) and reject empty ones."""
    cleaned = sku.strip().upper()
    if not cleaned:
        raise LedgerError("sku must not be empty")
    return cleaned


def validate_qty(qty: int) -> int:
    """Quantities are positive whole numbers."""
    if isinstance(qty, bool) or not isinstance(qty, int):
        raise LedgerError("quantity must be an integer")
    if qty <= 0:
        raise LedgerError("quantity must be positive")
    return qty
