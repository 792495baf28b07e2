from orderflow import (
    Order,
    average_fulfilment_days,
    cancellation_rate,
    count_by_state,
    net_revenue,
    refundable_orders,
    stale_orders,
)


def make(order_id, total=100, created=0, steps=(), window=14):
    """Build an order and apply (action, day) steps; 'pay' pays the full balance."""
    order = Order(order_id, total, created_day=created, refund_window=window)
    for action, day in steps:
        if action == "pay":
            order.pay(order.balance, day)
        else:
            getattr(order, action)(day)
    return order


FULL = (("pay", 1), ("pack", 2), ("ship", 3), ("deliver", 5))


def test_count_by_state():
    """Counts group orders by state name and omit empty states."""
    orders = [make("a"), make("b", steps=[("pay", 1)]), make("c", steps=[("pay", 1)]), make("d", steps=[("cancel", 1)])]
    assert count_by_state(orders) == {"new": 1, "paid": 2, "cancelled": 1}
    assert count_by_state([]) == {}


def test_net_revenue_subtracts_refunds():
    """Revenue counts payments (including partial ones) minus refunds."""
    partial = Order("p", 500)
    partial.pay(120, 1)
    orders = [
        make("a", total=300, steps=FULL),
        make("b", total=200, steps=FULL + (("refund", 6),)),
        make("c", total=50, steps=[("pay", 1), ("cancel", 2)]),
        partial,
    ]
    assert net_revenue(orders) == 420
    assert net_revenue([]) == 0


def test_average_fulfilment_days():
    """Average runs from creation to delivery over delivered (even later refunded) orders."""
    late = make("b", created=2, steps=(("pay", 3), ("pack", 4), ("ship", 5), ("deliver", 10), ("refund", 11)))
    orders = [make("a", steps=FULL), late, make("c", steps=[("pay", 1)])]
    assert average_fulfilment_days(orders) == 6.5
    assert average_fulfilment_days([make("c")]) is None
    assert average_fulfilment_days([]) is None


def test_stale_orders_boundary_and_exclusions():
    """Open orders idle more than 7 days are stale; terminal and delivered ones never are."""
    orders = [
        make("exact", steps=[("pay", 3)]),
        make("over", steps=[("pay", 2)]),
        make("fresh", created=9),
        make("done", steps=(("pay", 0), ("pack", 0), ("ship", 0), ("deliver", 1))),
        make("gone", steps=[("cancel", 0)]),
        make("aaa"),
    ]
    assert stale_orders(orders, today=10) == ["aaa", "over"]


def test_stale_orders_custom_limit():
    """A smaller idle limit flags more orders, sorted by id."""
    orders = [make("z", steps=[("pay", 8)]), make("y", steps=[("pay", 7)]), make("x", created=10)]
    assert stale_orders(orders, today=10, max_idle=2) == ["y"]
    assert stale_orders(orders, today=10, max_idle=1) == ["y", "z"]
    assert stale_orders(orders, today=10, max_idle=0) == ["y", "z"]


def test_refundable_orders_window_edges():
    """Delivered orders are refundable up to and including their deadline."""
    orders = [
        make("a", steps=FULL),
        make("b", steps=FULL, window=3),
        make("c", steps=FULL + (("refund", 6),)),
        make("d", steps=[("pay", 1)]),
    ]
    assert refundable_orders(orders, today=8) == ["a", "b"]
    assert refundable_orders(orders, today=9) == ["a"]
    assert refundable_orders(orders, today=19) == ["a"]
    assert refundable_orders(orders, today=20) == []


def test_cancellation_rate():
    """The rate is cancelled orders over all orders, 0.0 when there are none."""
    orders = [make("a", steps=[("cancel", 1)]), make("b"), make("c", steps=FULL), make("d", steps=[("pay", 1)])]
    assert cancellation_rate(orders) == 0.25
    assert cancellation_rate([]) == 0.0
    assert cancellation_rate(orders[:1]) == 1.0
