"""Dependency graph algorithms: cycle detection and priority topological order."""

import heapq
from typing import Iterable, Optional

from .model import CycleError, Job, index_jobs


def dependents(jobs: Iterable[Job]) -> dict[str, list[str]]:
    """For each job, the sorted names of jobs that directly depend on it."""
    table = index_jobs(jobs)
    result: dict[str, list[str]] = {name: [] for name in table}
    for job in table.values():
        for dep in job.deps:
            result[dep].append(job.name)
    return {name: sorted(users) for name, users in result.items()}


def _kahn(table: dict[str, Job]) -> tuple[list[str], set[str]]:
    """Priority-aware Kahn's algorithm; returns the order and the jobs left over."""
    waiting = {name: len(job.deps) for name, job in table.items()}
    users: dict[str, list[str]] = {name: [] for name in table}
    for job in table.values():
        for dep in job.deps:
            users[dep].append(job.name)
    heap = [(-table[n].priority, n) for n, count in waiting.items() if count == 0]
    heapq.heapify(heap)
    order: list[str] = []
    while heap:
        _, name = heapq.heappop(heap)
        order.append(name)
        for user in users[name]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(heap, (-table[user].priority, user))
    leftover = set(table) - set(order)
    return order, leftover


def find_cycle(jobs: Iterable[Job]) -> Optional[list[str]]:
    """Return one dependency cycle as [a, b, ..., a], or None if there is none."""
    table = index_jobs(jobs)
    _, leftover = _kahn(table)
    if not leftover:
        return None
    # Every leftover job depends on at least one other leftover job, so walking
    # those edges from any start must revisit a job within len(leftover) steps.
    path: list[str] = []
    seen: dict[str, int] = {}
    current = min(leftover)
    for _ in range(len(leftover) + 1):
        if current in seen:
            return path[seen[current]:] + [current]
        seen[current] = len(path)
        path.append(current)
        current = min(dep for dep in table[current].deps if dep in leftover)
    raise AssertionError("unreachable: cycle walk did not close")


def topo_order(jobs: Iterable[Job]) -> list[str]:
    """Dependencies first; among ready jobs, higher priority first, then by name."""
    job_list = list(jobs)
    table = index_jobs(job_list)
    order, leftover = _kahn(table)
    if leftover:
        raise CycleError(find_cycle(job_list) or [])
    return order
