"""The Order aggregate: guarded transitions and history."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .states import PAYABLE_STATES, GuardError, OrderError, State, TransitionError, can_transition

DEFAULT_REFUND_WINDOW = 14


@dataclass(frozen=True)
class Transition:
    """One recorded state change."""

    source: Optional[State]
    target: State
    day: int


@dataclass
class Order:
    """An order for ``total`` cents, tracked by explicit integer day numbers."""

    order_id: str
    total: int
    created_day: int = 0
    refund_window: int = DEFAULT_REFUND_WINDOW
    state: State = State.NEW
    paid: int = 0
    refunded: int = 0
    history: list[Transition] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.total <= 0:
            raise OrderError("order total must be positive")
        if self.created_day < 0 or self.refund_window < 0:
            raise OrderError("days must not be negative")
        self.history.append(Transition(None, State.NEW, self.created_day))

    @property
    def balance(self) -> int:
        """Amount still owed by the customer."""
        return self.total - self.paid

    @property
    def last_day(self) -> int:
        """Day of the most recent transition."""
        return self.history[-1].day

    def day_entered(self, state: State) -> Optional[int]:
        """Return the day the order entered ``state``, or None if it never did."""
        for step in self.history:
            if step.target == state:
                return step.day
        return None

    def _move(self, target: State, day: int) -> None:
        if not can_transition(self.state, target):
            raise TransitionError(f"cannot go from {self.state.value} to {target.value}")
        if day < self.last_day:
            raise OrderError(f"day {day} is before day {self.last_day}")
        self.history.append(Transition(self.state, target, day))
        self.state = target

    def pay(self, amount: int, day: int) -> None:
        """Record a payment; a new order becomes paid once fully paid."""
        if self.state not in PAYABLE_STATES:
            raise TransitionError(f"cannot pay an order that is {self.state.value}")
        if amount <= 0:
            raise GuardError("payment must be positive")
        if amount > self.balance:
            raise GuardError(f"payment {amount} exceeds balance {self.balance}")
        if day < self.last_day:
            raise OrderError(f"day {day} is before day {self.last_day}")
        self.paid += amount
        if self.balance == 0 and self.state == State.NEW:
            self._move(State.PAID, day)

    def pack(self, day: int) -> None:
        """Pack the order (allowed before payment is complete)."""
        self._move(State.PACKED, day)

    def ship(self, day: int) -> None:
        """Ship a packed order; unpaid orders cannot ship."""
        if self.state == State.PACKED and self.balance > 0:
            raise GuardError("cannot ship an unpaid order")
        self._move(State.SHIPPED, day)

    def deliver(self, day: int) -> None:
        """Mark a shipped order as delivered."""
        self._move(State.DELIVERED, day)

    def cancel(self, day: int) -> None:
        """Cancel before shipping; any payment is returned."""
        self._move(State.CANCELLED, day)
        self.refunded = self.paid

    def refund_deadline(self) -> Optional[int]:
        """Last day (inclusive) on which a delivered order may be refunded."""
        delivered = self.day_entered(State.DELIVERED)
        if delivered is None:
            return None
        return delivered + self.refund_window

    def refund(self, day: int) -> None:
        """Refund a delivered order within the refund window."""
        deadline = self.refund_deadline()
        if deadline is not None and day > deadline:
            raise GuardError(f"refund window closed on day {deadline}")
        self._move(State.REFUNDED, day)
        self.refunded = self.paid
