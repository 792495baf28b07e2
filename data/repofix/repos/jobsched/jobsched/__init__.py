"""Dependency-aware job scheduling: ordering, critical path and worker assignment."""

from .critical import Timing, compute_timings, critical_path, project_duration
from .graph import dependents, find_cycle, topo_order
from .model import CycleError, Job, ScheduleError, index_jobs
from .workers import Assignment, list_schedule, makespan, utilization, worker_loads

__all__ = [
    "Job",
    "ScheduleError",
    "CycleError",
    "index_jobs",
    "find_cycle",
    "topo_order",
    "dependents",
    "Timing",
    "compute_timings",
    "project_duration",
    "critical_path",
    "Assignment",
    "list_schedule",
    "makespan",
    "worker_loads",
    "utilization",
]
