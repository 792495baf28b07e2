"""Summary queries over collections of orders."""
from __future__ import annotations

from typing import Iterable, Optional

from .order import Order
from .states import State, is_terminal


def count_by_state(orders: Iterable[Order]) -> dict[str, int]:
    """Count orders per state name, omitting states with no orders."""
    counts: dict[str, int] = {}
    for order in orders:
        counts[order.state.value] = counts.get(order.state.value, 0) + 1
    return counts


def net_revenue(orders: Iterable[Order]) -> int:
    """Total money received minus money returned."""
    return sum(order.paid - order.refunded for order in orders)


def average_fulfilment_days(orders: Iterable[Order]) -> Optional[float]:
    """Mean days from creation to delivery over orders that were delivered."""
    spans = []
    for order in orders:
        delivered = order.day_entered(State.DELIVERED)
        if delivered is not None:
            spans.append(delivered - order.created_day)
    if not spans:
        return None
    return sum(spans) / len(spans)


def stale_orders(orders: Iterable[Order], today: int, max_idle: int = 7) -> list[str]:
    """Ids of open orders (not delivered, not terminal) idle for more than ``max_idle`` days."""
    stale = []
    for order in orders:
        if is_terminal(order.state) or order.state == State.DELIVERED:
            continue
        if today - order.last_day > max_idle:
            stale.append(order.order_id)
    return sorted(stale)


def refundable_orders(orders: Iterable[Order], today: int) -> list[str]:
    """Ids of delivered orders whose refund window is still open on ``today``."""
    result = []
    for order in orders:
        deadline = order.refund_deadline()
        if order.state == State.DELIVERED and deadline is not None and today <= deadline:
            result.append(order.order_id)
    return sorted(result)


def cancellation_rate(orders: Iterable[Order]) -> float:
    """Fraction of orders that ended cancelled (0.0 for no orders)."""
    items = list(orders)
    if not items:
        return 0.0
    cancelled = sum(1 for order in items if order.state == State.CANCELLED)
    return cancelled / len(items)
