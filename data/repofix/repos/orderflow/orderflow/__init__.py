"""Order lifecycle state machine with reporting helpers."""
from .order import DEFAULT_REFUND_WINDOW, Order, Transition
from .reports import (
    average_fulfilment_days,
    cancellation_rate,
    count_by_state,
    net_revenue,
    refundable_orders,
    stale_orders,
)
from .states import TRANSITIONS, GuardError, OrderError, State, TransitionError, can_transition, is_terminal

__all__ = [
    "DEFAULT_REFUND_WINDOW", "GuardError", "Order", "OrderError", "State", "TRANSITIONS", "Transition",
    "TransitionError", "average_fulfilment_days", "can_transition", "cancellation_rate", "count_by_state",
    "is_terminal", "net_revenue", "refundable_orders", "stale_orders",
]
