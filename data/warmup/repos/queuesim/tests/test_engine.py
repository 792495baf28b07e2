import pytest

from queuesim import Customer, Served, make_customers, simulate

TWO_SERVER = [(0, 5), (0, 3), (1, 4), (2, 2), (4, 1)]


def test_make_customers_sorts_by_arrival_keeping_input_order_on_ties():
    """Customers are numbered by input position and served by arrival, ties in input order."""
    assert [c.cid for c in make_customers([(2, 1), (0, 1), (2, 1), (1, 1)])] == [1, 3, 0, 2]


def test_make_customers_validation_boundaries():
    """Arrival 0 is fine, negative arrival and zero service are rejected."""
    assert make_customers([(0, 0.5)]) == [Customer(0, 0, 0.5)]
    with pytest.raises(ValueError):
        make_customers([(-1, 2)])
    with pytest.raises(ValueError):
        make_customers([(3, 0)])


def test_single_server_start_finish_and_wait():
    """With one server each customer starts when the previous one finishes or on arrival."""
    result = simulate([(0, 3), (1, 2), (2, 1), (10, 1)])
    assert [(r.start, r.finish, r.wait) for r in result] == [(0, 3, 0), (3, 5, 2), (5, 6, 3), (10, 11, 0)]


def test_customer_arriving_exactly_at_finish_does_not_wait():
    """An arrival at the moment the server frees up starts immediately."""
    result = simulate([(0, 4), (4, 1)])
    assert [(r.start, r.wait) for r in result] == [(0, 0), (4, 0)]


def test_two_servers_assignment():
    """Each customer goes to the server that can start soonest, lowest index on ties."""
    result = simulate(TWO_SERVER, servers=2)
    assert [(r.cid, r.server, r.start, r.finish) for r in result] == [
        (0, 0, 0, 5),
        (1, 1, 0, 3),
        (2, 1, 3, 7),
        (3, 0, 5, 7),
        (4, 0, 7, 8),
    ]


def test_idle_servers_prefer_lowest_index_not_earliest_freed():
    """When several servers are idle at an arrival, server 0 is chosen."""
    result = simulate([(0, 4), (0, 2), (5, 1)], servers=2)
    assert [r.server for r in result] == [0, 1, 0]


def test_more_servers_than_customers_means_no_waiting():
    """With enough servers everyone starts on arrival on a distinct server."""
    result = simulate([(0, 9), (0, 9), (1, 9)], servers=3)
    assert [(r.server, r.wait) for r in result] == [(0, 0), (1, 0), (2, 0)]


def test_simulate_accepts_customer_objects_and_empty_input():
    """Ready-made customers keep their ids; no customers gives no records."""
    result = simulate([Customer(5, 1, 2), Customer(3, 0, 1)])
    assert result == [Served(3, 0, 1, 0, 0, 1), Served(5, 1, 2, 0, 1, 3)]
    assert simulate([]) == []


def test_simulate_rejects_zero_servers():
    """At least one server is required."""
    with pytest.raises(ValueError):
        simulate([(0, 1)], servers=0)
