"""Earliest/latest start and finish times and the critical path."""

from dataclasses import dataclass
from typing import Iterable

from .graph import topo_order
from .model import Job, index_jobs


@dataclass(frozen=True)
class Timing:
    """Schedule window of one job with unlimited workers."""

    earliest_start: float
    earliest_finish: float
    latest_start: float
    latest_finish: float

    @property
    def slack(self) -> float:
        """How long the job can slip without delaying the project."""
        return self.latest_start - self.earliest_start

    @property
    def is_critical(self) -> bool:
        """Critical jobs have no slack."""
        return self.slack == 0


def compute_timings(jobs: Iterable[Job]) -> dict[str, Timing]:
    """Forward and backward pass over the dependency graph."""
    job_list = list(jobs)
    table = index_jobs(job_list)
    order = topo_order(job_list)
    if not order:
        return {}
    finish: dict[str, float] = {}
    for name in order:
        job = table[name]
        start = max((finish[d] for d in job.deps), default=0)
        finish[name] = start + job.duration
    horizon = max(finish.values())
    latest_finish = {name: horizon for name in table}
    for name in reversed(order):
        job = table[name]
        late_start = latest_finish[name] - job.duration
        for dep in job.deps:
            latest_finish[dep] = min(latest_finish[dep], late_start)
    return {
        name: Timing(
            finish[name] - table[name].duration,
            finish[name],
            latest_finish[name] - table[name].duration,
            latest_finish[name],
        )
        for name in order
    }


def project_duration(jobs: Iterable[Job]) -> float:
    """Length of the whole project with unlimited workers (0 for no jobs)."""
    timings = compute_timings(jobs)
    return max((t.earliest_finish for t in timings.values()), default=0)


def critical_path(jobs: Iterable[Job]) -> list[str]:
    """One chain of zero-slack jobs from a start job to the project end."""
    job_list = list(jobs)
    table = index_jobs(job_list)
    timings = compute_timings(job_list)
    if not timings:
        return []
    horizon = max(t.earliest_finish for t in timings.values())
    ends = [n for n, t in timings.items() if t.is_critical and t.earliest_finish == horizon]
    path = [min(ends)]
    for _ in range(len(table)):
        job = table[path[-1]]
        start = timings[job.name].earliest_start
        feeders = sorted(
            d for d in job.deps if timings[d].is_critical and timings[d].earliest_finish == start
        )
        if not feeders:
            break
        path.append(feeders[0])
    return path[::-1]
