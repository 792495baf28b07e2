"""Customer records and input validation."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Customer:
    """A customer ``cid`` arriving at ``arrival`` who needs ``service`` time units."""

    cid: int
    arrival: float
    service: float


def make_customers(pairs: Iterable[tuple[float, float]]) -> list[Customer]:
    """Build customers from (arrival, service) pairs, sorted by arrival.

    Customers are numbered in input order; equal arrivals keep that order.
    Arrivals must be >= 0 and service times > 0.
    """
    customers: list[Customer] = []
    for cid, (arrival, service) in enumerate(pairs):
        if arrival < 0:
            raise ValueError(f"customer {cid}: negative arrival time")
        if service <= 0:
            raise ValueError(f"customer {cid}: service time must be positive")
        customers.append(Customer(cid, arrival, service))
    return sorted(customers, key=lambda c: (c.arrival, c.cid))
