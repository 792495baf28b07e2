"""Jobs and input validation."""

from dataclasses import dataclass
from typing import Iterable


class ScheduleError(ValueError):
    """The set of jobs cannot be scheduled as given."""


class CycleError(ScheduleError):
    """The dependencies contain a cycle; `cycle` lists it, first name repeated at the end."""

    def __init__(self, cycle: list[str]) -> None:
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


@dataclass(frozen=True)
class Job:
    """A unit of work that may start only after all of its dependencies finish."""

    name: str
    duration: float
    deps: tuple[str, ...] = ()
    priority: int = 0

    def __post_init__(self) -> None:
        if not self.name:
            raise ScheduleError("job name must not be empty")
        if self.duration < 0:
            raise ScheduleError(f"job {self.name!r} has negative duration")
        if len(set(self.deps)) != len(self.deps):
            raise ScheduleError(f"job {self.name!r} lists a dependency twice")
        if self.name in self.deps:
            raise CycleError([self.name, self.name])


def index_jobs(jobs: Iterable[Job]) -> dict[str, Job]:
    """Map names to jobs, rejecting duplicate names and unknown dependencies."""
    table: dict[str, Job] = {}
    for job in jobs:
        if job.name in table:
            raise ScheduleError(f"duplicate job {job.name!r}")
        table[job.name] = job
    for job in table.values():
        for dep in job.deps:
            if dep not in table:
                raise ScheduleError(f"job {job.name!r} depends on unknown {dep!r}")
    return table
