"""Assigning jobs to a fixed number of workers with list scheduling."""

from dataclasses import dataclass
from typing import Iterable

from .graph import topo_order
from .model import Job, ScheduleError, index_jobs


@dataclass(frozen=True)
class Assignment:
    """A job placed on a worker (numbered from 0) over [start, finish)."""

    job: str
    worker: int
    start: float
    finish: float


def list_schedule(jobs: Iterable[Job], workers: int) -> list[Assignment]:
    """Take jobs in priority topological order; give each to the worker that can start it earliest.

    Ties between workers go to the lowest worker number. A job never starts before
    all of its dependencies have finished.
    """
    if workers < 1:
        raise ScheduleError("need at least one worker")
    job_list = list(jobs)
    table = index_jobs(job_list)
    free_at = [0.0] * workers
    finish: dict[str, float] = {}
    plan: list[Assignment] = []
    for name in topo_order(job_list):
        job = table[name]
        ready = max((finish[d] for d in job.deps), default=0.0)
        worker = min(range(workers), key=lambda w: (max(free_at[w], ready), w))
        start = max(free_at[worker], ready)
        finish[name] = start + job.duration
        free_at[worker] = finish[name]
        plan.append(Assignment(name, worker, start, finish[name]))
    return plan


def makespan(plan: list[Assignment]) -> float:
    """Time at which the last job finishes (0 for an empty plan)."""
    return max((a.finish for a in plan), default=0.0)


def worker_loads(plan: list[Assignment], workers: int) -> list[float]:
    """Busy time per worker, indexed by worker number."""
    loads = [0.0] * workers
    for item in plan:
        if not 0 <= item.worker < workers:
            raise ScheduleError(f"assignment to unknown worker {item.worker}")
        loads[item.worker] += item.finish - item.start
    return loads


def utilization(plan: list[Assignment], workers: int) -> float:
    """Fraction of worker time spent busy up to the makespan (0.0 if nothing ran)."""
    span = makespan(plan)
    if span <= 0:
        return 0.0
    return sum(worker_loads(plan, workers)) / (workers * span)
