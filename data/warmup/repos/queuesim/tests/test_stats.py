import pytest

from queuesim import (
    average_wait,
    max_queue_length,
    max_wait,
    queue_length_at,
    simulate,
    summary,
    utilisation,
)

SINGLE = [(0, 3), (1, 2), (2, 1), (10, 1)]
TWO_SERVER = [(0, 5), (0, 3), (1, 4), (2, 2), (4, 1)]


def test_average_and_max_wait_single_server():
    """Waits 0, 2, 3, 0 average to 1.25 with a maximum of 3."""
    records = simulate(SINGLE)
    assert (average_wait(records), max_wait(records)) == (1.25, 3)


def test_waits_of_empty_run_are_zero():
    """An empty run has zero average and maximum wait and no queue."""
    assert (average_wait([]), max_wait([]), max_queue_length([])) == (0.0, 0.0, 0)


def test_queue_length_at_boundaries():
    """A customer counts as queued from arrival up to, but not including, the start."""
    records = simulate(SINGLE)
    assert [queue_length_at(records, t) for t in (0, 1, 2, 3, 4.5, 5, 10)] == [0, 1, 2, 1, 1, 0, 0]


def test_max_queue_length():
    """The longest queue is 2 in both sample runs and 0 when nobody waits."""
    assert max_queue_length(simulate(SINGLE)) == 2
    assert max_queue_length(simulate(TWO_SERVER, servers=2)) == 2
    assert max_queue_length(simulate([(0, 1), (1, 1), (2, 1)])) == 0


def test_max_queue_length_counts_simultaneous_arrivals():
    """Three customers arriving together at a busy single server make a queue of 3."""
    records = simulate([(0, 2), (1, 1), (1, 1), (1, 1)])
    assert max_queue_length(records) == 3


def test_utilisation_two_servers_default_horizon():
    """Over 0..8, server 0 is always busy and server 1 busy 7 of 8 units."""
    records = simulate(TWO_SERVER, servers=2)
    assert utilisation(records, 2) == [1.0, 0.875]


@pytest.mark.parametrize("until, expected", [(4, [1.0]), (8, [0.75]), (10, [0.6]), (0, [0.0])])
def test_utilisation_clipped_to_horizon(until, expected):
    """Busy time after the horizon is ignored; a service starting at it does not count."""
    assert utilisation(simulate(SINGLE), 1, until=until) == expected


def test_utilisation_empty_and_invalid():
    """An empty run gives zero for every server; zero servers is an error."""
    assert utilisation([], 3) == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        utilisation([], 0)


def test_summary_of_two_server_run():
    """The summary collects counts, waits, queue, makespan and mean utilisation."""
    assert summary(simulate(TWO_SERVER, servers=2), 2) == {
        "customers": 5,
        "average_wait": 1.6,
        "max_wait": 3,
        "max_queue": 2,
        "waited": 3,
        "makespan": 8,
        "utilisation": 0.9375,
    }


def test_summary_of_empty_run():
    """An empty run summarises to zeros."""
    assert summary([], 1) == {
        "customers": 0,
        "average_wait": 0.0,
        "max_wait": 0.0,
        "max_queue": 0,
        "waited": 0,
        "makespan": 0.0,
        "utilisation": 0.0,
    }


def test_summary_of_short_single_server_run():
    """A one-unit wait counts as waiting; one server busy the whole time is fully utilised."""
    assert summary(simulate([(0, 2), (1, 1)]), 1) == {
        "customers": 2,
        "average_wait": 0.5,
        "max_wait": 1,
        "max_queue": 1,
        "waited": 1,
        "makespan": 3,
        "utilisation": 1.0,
    }
