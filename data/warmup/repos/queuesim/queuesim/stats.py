"""Summary statistics over a simulation result."""
from __future__ import annotations

from typing import Sequence

from .engine import Served


def average_wait(records: Sequence[Served]) -> float:
    """Mean waiting time; 0.0 when nobody came."""
    if not records:
        return 0.0
    return sum(r.wait for r in records) / len(records)


def max_wait(records: Sequence[Served]) -> float:
    """Longest waiting time; 0.0 when nobody came."""
    return max((r.wait for r in records), default=0.0)


def queue_length_at(records: Sequence[Served], t: float) -> int:
    """Customers waiting (arrived, not yet in service) at time ``t``."""
    return sum(1 for r in records if r.arrival <= t < r.start)


def max_queue_length(records: Sequence[Served]) -> int:
    """Largest queue length over the run; it can only grow at arrival times."""
    return max((queue_length_at(records, r.arrival) for r in records), default=0)


def utilisation(records: Sequence[Served], servers: int, until: float | None = None) -> list[float]:
    """Fraction of time each server was busy between 0 and ``until`` (default: last finish)."""
    if servers < 1:
        raise ValueError("need at least one server")
    horizon = max((r.finish for r in records), default=0.0) if until is None else until
    if horizon <= 0:
        return [0.0] * servers
    busy = [0.0] * servers
    for r in records:
        if r.start < horizon:
            busy[r.server] += min(r.finish, horizon) - r.start
    return [b / horizon for b in busy]


def summary(records: Sequence[Served], servers: int) -> dict[str, float]:
    """Key figures of a run in one dictionary."""
    return {
        "customers": len(records),
        "average_wait": average_wait(records),
        "max_wait": max_wait(records),
        "max_queue": max_queue_length(records),
        "waited": sum(1 for r in records if r.wait > 0),
        "makespan": max((r.finish for r in records), default=0.0),
        "utilisation": sum(utilisation(records, servers)) / servers,
    }
