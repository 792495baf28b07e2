import pytest

from jobsched import (
    Assignment,
    Job,
    ScheduleError,
    Timing,
    compute_timings,
    critical_path,
    list_schedule,
    makespan,
    project_duration,
    utilization,
    worker_loads,
)


def diamond() -> list[Job]:
    return [
        Job("d", 1, ("b", "c")),
        Job("c", 4, ("a",)),
        Job("b", 2, ("a",)),
        Job("a", 3),
    ]


def test_compute_timings_forward_and_backward_pass():
    """Earliest and latest windows follow the longest path through dependencies."""
    assert compute_timings(diamond()) == {
        "a": Timing(0, 3, 0, 3),
        "b": Timing(3, 5, 5, 7),
        "c": Timing(3, 7, 3, 7),
        "d": Timing(7, 8, 7, 8),
    }


def test_slack_and_critical_flags():
    """Only the job off the longest path has slack."""
    timings = compute_timings(diamond())
    assert {name: t.slack for name, t in timings.items()} == {"a": 0, "b": 2, "c": 0, "d": 0}
    assert [name for name, t in timings.items() if t.is_critical] == ["a", "c", "d"]


def test_independent_jobs_get_slack_up_to_horizon():
    """A short independent job may slip until the project ends."""
    timings = compute_timings([Job("long", 5), Job("short", 2)])
    assert timings["short"] == Timing(0, 2, 3, 5)
    assert timings["long"].is_critical is True


def test_project_duration():
    """Duration is the latest earliest-finish; zero for no jobs."""
    assert project_duration(diamond()) == 8
    assert project_duration([]) == 0
    assert project_duration([Job("a", 0), Job("b", 0, ("a",))]) == 0


def test_critical_path_follows_zero_slack_chain():
    """The critical path runs from the first to the last critical job."""
    assert critical_path(diamond()) == ["a", "c", "d"]
    assert critical_path([]) == []


def test_critical_path_ties_pick_alphabetical():
    """With two equally long chains or ends, the alphabetically first is chosen."""
    assert critical_path([Job("b", 2), Job("a", 2), Job("c", 1, ("a", "b"))]) == ["a", "c"]
    assert critical_path([Job("y", 5), Job("x", 5), Job("s", 1)]) == ["x"]


def test_critical_path_skips_critical_dep_that_finishes_early():
    """A dependency that is critical for another chain but finishes early is not followed."""
    jobs = [Job("a", 1), Job("y", 5, ("a",)), Job("w", 2, ("a",)), Job("b", 3, ("a", "w"))]
    assert critical_path(jobs) == ["a", "w", "b"]


def test_list_schedule_two_workers_diamond():
    """Each job goes to the worker that can start it earliest, lowest number on ties."""
    assert list_schedule(diamond(), 2) == [
        Assignment("a", 0, 0.0, 3.0),
        Assignment("b", 0, 3.0, 5.0),
        Assignment("c", 1, 3.0, 7.0),
        Assignment("d", 0, 7.0, 8.0),
    ]


def test_list_schedule_single_worker_runs_sequentially():
    """One worker runs jobs back to back in topological order."""
    plan = list_schedule(diamond(), 1)
    assert [(a.job, a.start, a.finish) for a in plan] == [("a", 0, 3), ("b", 3, 5), ("c", 5, 9), ("d", 9, 10)]
    assert makespan(plan) == 10


def test_list_schedule_independent_jobs_by_priority():
    """Independent jobs are handed out by priority and fill the earliest free worker."""
    jobs = [Job("q", 2), Job("r", 3), Job("p", 4, priority=2)]
    plan = list_schedule(jobs, 2)
    assert [(a.job, a.worker, a.start) for a in plan] == [("p", 0, 0), ("q", 1, 0), ("r", 1, 2)]
    assert makespan(plan) == 5


def test_list_schedule_more_workers_than_jobs():
    """Extra workers stay idle and the makespan equals the project duration."""
    plan = list_schedule(diamond(), 5)
    assert makespan(plan) == 8
    assert worker_loads(plan, 5) == [6.0, 4.0, 0.0, 0.0, 0.0]


def test_list_schedule_requires_a_worker():
    """Zero workers is an error."""
    with pytest.raises(ScheduleError):
        list_schedule(diamond(), 0)


def test_worker_loads_and_utilization():
    """Loads sum busy time per worker; utilization divides by workers times makespan."""
    plan = list_schedule(diamond(), 2)
    assert worker_loads(plan, 2) == [6.0, 4.0]
    assert utilization(plan, 2) == 0.625
    assert utilization(list_schedule(diamond(), 1), 1) == 1.0


def test_utilization_of_empty_or_instant_plans_is_zero():
    """Without any elapsed time utilization is 0.0; a one-unit plan is measured normally."""
    assert makespan([]) == 0.0
    assert utilization([], 3) == 0.0
    assert utilization(list_schedule([Job("a", 0)], 1), 1) == 0.0
    assert utilization(list_schedule([Job("a", 1), Job("b", 1)], 3), 3) == 2 / 3


def test_worker_loads_rejects_unknown_worker():
    """Assignments must refer to worker numbers 0..workers-1."""
    with pytest.raises(ScheduleError):
        worker_loads([Assignment("a", 2, 0, 1)], 2)
    with pytest.raises(ScheduleError):
        worker_loads([Assignment("a", -1, 0, 1)], 2)
    assert worker_loads([Assignment("a", 1, 0, 1)], 2) == [0.0, 1.0]
