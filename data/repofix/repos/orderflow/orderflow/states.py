"""Order states, the transition table and error types."""
from __future__ import annotations

from enum import Enum


class State(str, Enum):
    """Lifecycle states of an order."""

    NEW = "new"
    PAID = "paid"
    PACKED = "packed"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


class OrderError(ValueError):
    """Base error for invalid order operations."""


class TransitionError(OrderError):
    """Raised when a transition is not allowed from the current state."""


class GuardError(OrderError):
    """Raised when a transition is allowed in principle but a guard fails."""


TRANSITIONS: dict[State, frozenset[State]] = {
    State.NEW: frozenset({State.PAID, State.PACKED, State.CANCELLED}),
    State.PAID: frozenset({State.PACKED, State.CANCELLED}),
    State.PACKED: frozenset({State.SHIPPED, State.CANCELLED}),
    State.SHIPPED: frozenset({State.DELIVERED}),
    State.DELIVERED: frozenset({State.REFUNDED}),
    State.CANCELLED: frozenset(),
    State.REFUNDED: frozenset(),
}

# States in which the customer may still send money.
PAYABLE_STATES = frozenset({State.NEW, State.PACKED})


def can_transition(source: State, target: State) -> bool:
    """Return True when the table allows moving from ``source`` to ``target``."""
    return target in TRANSITIONS[source]


def is_terminal(state: State) -> bool:
    """Return True for states with no outgoing transitions."""
    return len(TRANSITIONS[state]) == 0
