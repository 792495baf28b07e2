"""FIFO inventory ledger with cost of goods sold and reorder alerts."""

from .alerts import ReorderAlert, ReorderPolicy, stock_report
from .book import Ledger, Shipment
from .lots import InsufficientStock, LedgerError, Lot

__all__ = [
    "Ledger",
    "Shipment",
    "Lot",
    "LedgerError",
    "InsufficientStock",
    "ReorderAlert",
    "ReorderPolicy",
    "stock_report",
]
