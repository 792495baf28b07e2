"""The event-free simulation core: assign each customer to a server."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .customers import Customer, make_customers


@dataclass(frozen=True)
class Served:
    """The outcome for one customer."""

    cid: int
    arrival: float
    service: float
    server: int
    start: float
    finish: float

    @property
    def wait(self) -> float:
        """Time spent queueing before service began."""
        return self.start - self.arrival


def pick_server(free_at: list[float], arrival: float) -> int:
    """Index of the server that can start soonest; ties go to the lowest index."""
    best = 0
    best_start = max(free_at[0], arrival)
    for index in range(1, len(free_at)):
        start = max(free_at[index], arrival)
        if start < best_start:
            best, best_start = index, start
    return best


def simulate(customers: Iterable[tuple[float, float]] | list[Customer], servers: int = 1) -> list[Served]:
    """Serve customers first come first served on ``servers`` identical servers.

    Accepts (arrival, service) pairs or ready-made customers; the result is
    in service order (arrival order, ties by customer number).
    """
    if servers < 1:
        raise ValueError("need at least one server")
    items = list(customers)
    if items and isinstance(items[0], Customer):
        queue = sorted(items, key=lambda c: (c.arrival, c.cid))
    else:
        queue = make_customers(items)
    free_at = [0.0] * servers
    served: list[Served] = []
    for customer in queue:
        index = pick_server(free_at, customer.arrival)
        start = max(free_at[index], customer.arrival)
        finish = start + customer.service
        free_at[index] = finish
        served.append(Served(customer.cid, customer.arrival, customer.service, index, start, finish))
    return served
