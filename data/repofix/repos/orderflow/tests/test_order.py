import pytest

from orderflow import GuardError, Order, OrderError, State, Transition, TransitionError


def delivered_order(order_id="o1", total=1000, created=0, delivered=5, window=14):
    order = Order(order_id, total, created_day=created, refund_window=window)
    order.pay(total, created + 1)
    order.pack(created + 2)
    order.ship(created + 3)
    order.deliver(delivered)
    return order


def test_new_order_starts_in_new_state():
    """A fresh order is new, owes its full total and records its creation."""
    order = Order("a", 2500, created_day=3)
    assert order.state == State.NEW
    assert order.balance == 2500
    assert order.refund_window == 14
    assert order.history == [Transition(None, State.NEW, 3)]


def test_construction_validation():
    """Non-positive totals and negative days are rejected; zeros at the edge are fine."""
    with pytest.raises(OrderError):
        Order("a", 0)
    with pytest.raises(OrderError):
        Order("a", 10, created_day=-1)
    with pytest.raises(OrderError):
        Order("a", 10, refund_window=-1)
    assert Order("a", 1, created_day=0, refund_window=0).total == 1


def test_full_payment_marks_order_paid():
    """Paying the whole total moves a new order to paid on that day."""
    order = Order("a", 1000)
    order.pay(1000, 2)
    assert order.state == State.PAID
    assert order.balance == 0
    assert order.day_entered(State.PAID) == 2


def test_partial_payments_accumulate():
    """A partial payment keeps the order new until the balance reaches zero."""
    order = Order("a", 1000)
    order.pay(400, 1)
    assert order.state == State.NEW
    assert order.balance == 600
    order.pay(600, 1)
    assert order.state == State.PAID
    assert len(order.history) == 2


def test_payment_amount_guards():
    """Zero, negative and over-balance payments raise GuardError; exact balance is fine."""
    order = Order("a", 100)
    with pytest.raises(GuardError):
        order.pay(0, 1)
    with pytest.raises(GuardError):
        order.pay(-5, 1)
    with pytest.raises(GuardError):
        order.pay(101, 1)
    order.pay(1, 1)
    assert order.balance == 99
    order.pay(99, 1)
    assert order.paid == 100


def test_payment_not_allowed_once_paid_or_shipped():
    """Paying a paid or shipped order is an invalid transition."""
    order = Order("a", 100)
    order.pay(100, 1)
    with pytest.raises(TransitionError):
        order.pay(1, 2)
    order.pack(2)
    order.ship(3)
    with pytest.raises(TransitionError):
        order.pay(1, 4)


def test_pack_before_payment_then_pay_and_ship():
    """An order may be packed unpaid; paying later keeps it packed and lets it ship."""
    order = Order("a", 300)
    order.pack(1)
    order.pay(300, 2)
    assert order.state == State.PACKED
    order.ship(3)
    assert order.state == State.SHIPPED


def test_cannot_ship_unpaid_or_partly_paid_order():
    """Shipping with any outstanding balance raises GuardError."""
    order = Order("a", 300)
    order.pack(1)
    with pytest.raises(GuardError):
        order.ship(2)
    order.pay(299, 2)
    with pytest.raises(GuardError):
        order.ship(2)
    assert order.state == State.PACKED


def test_shipping_requires_packing():
    """Shipping a new or merely paid order is an invalid transition."""
    with pytest.raises(TransitionError):
        Order("a", 10).ship(1)
    order = Order("b", 10)
    order.pay(10, 1)
    with pytest.raises(TransitionError):
        order.ship(2)


def test_deliver_only_after_shipping():
    """Delivering a packed order is invalid; a shipped one becomes delivered."""
    order = Order("a", 10)
    order.pay(10, 1)
    order.pack(1)
    with pytest.raises(TransitionError):
        order.deliver(2)
    order.ship(2)
    order.deliver(4)
    assert order.day_entered(State.DELIVERED) == 4


def test_days_must_not_go_backwards():
    """Transitions and payments dated before the last transition raise OrderError; same day is fine."""
    order = Order("a", 10, created_day=5)
    with pytest.raises(OrderError):
        order.pay(10, 4)
    with pytest.raises(OrderError):
        order.pack(4)
    order.pack(5)
    assert order.last_day == 5


def test_partial_payment_cannot_be_backdated():
    """A partial payment dated before the last transition raises and changes nothing."""
    order = Order("a", 10, created_day=5)
    with pytest.raises(OrderError):
        order.pay(3, 4)
    assert order.balance == 10
    order.pay(3, 5)
    assert order.balance == 7


def test_cancel_returns_payment():
    """Cancelling a paid or packed order refunds what was paid."""
    paid = Order("a", 100)
    paid.pay(100, 1)
    paid.cancel(2)
    assert (paid.state, paid.refunded) == (State.CANCELLED, 100)
    packed = Order("b", 100)
    packed.pack(1)
    packed.pay(30, 1)
    packed.cancel(3)
    assert (packed.state, packed.refunded) == (State.CANCELLED, 30)
    fresh = Order("c", 100)
    fresh.cancel(0)
    assert fresh.refunded == 0


def test_cannot_cancel_after_shipping_or_twice():
    """Shipped and already-cancelled orders cannot be cancelled."""
    order = delivered_order()
    with pytest.raises(TransitionError):
        order.cancel(6)
    cancelled = Order("b", 10)
    cancelled.cancel(1)
    with pytest.raises(TransitionError):
        cancelled.cancel(2)


def test_refund_window_is_inclusive():
    """A refund on the last day of the window succeeds; one day later fails."""
    order = delivered_order(delivered=5, window=14)
    assert order.refund_deadline() == 19
    late = delivered_order(delivered=5, window=14)
    with pytest.raises(GuardError):
        late.refund(20)
    order.refund(19)
    assert (order.state, order.refunded) == (State.REFUNDED, 1000)


def test_zero_refund_window_allows_delivery_day_only():
    """With a zero window only a same-day refund is allowed."""
    order = delivered_order(delivered=8, window=0)
    with pytest.raises(GuardError):
        order.refund(9)
    order.refund(8)
    assert order.state == State.REFUNDED


def test_refund_requires_delivery():
    """Refunding an undelivered order is an invalid transition and has no deadline."""
    order = Order("a", 10)
    order.pay(10, 1)
    assert order.refund_deadline() is None
    with pytest.raises(TransitionError):
        order.refund(2)


def test_history_records_every_step():
    """The history lists each transition with its source, target and day."""
    order = delivered_order(created=1, delivered=9)
    order.refund(10)
    assert order.history == [
        Transition(None, State.NEW, 1),
        Transition(State.NEW, State.PAID, 2),
        Transition(State.PAID, State.PACKED, 3),
        Transition(State.PACKED, State.SHIPPED, 4),
        Transition(State.SHIPPED, State.DELIVERED, 9),
        Transition(State.DELIVERED, State.REFUNDED, 10),
    ]
    assert order.day_entered(State.CANCELLED) is None
