import pytest

from jobsched import CycleError, Job, ScheduleError, dependents, find_cycle, index_jobs, topo_order


def diamond() -> list[Job]:
    return [
        Job("d", 1, ("b", "c")),
        Job("c", 4, ("a",)),
        Job("b", 2, ("a",)),
        Job("a", 3),
    ]


def test_job_validation():
    """Empty names, negative durations and repeated deps are refused; zero duration is fine."""
    with pytest.raises(ScheduleError):
        Job("", 1)
    with pytest.raises(ScheduleError):
        Job("a", -1)
    with pytest.raises(ScheduleError):
        Job("a", 1, ("b", "b"))
    assert Job("a", 0).duration == 0
    assert Job("a", 1).priority == 0


def test_self_dependency_is_a_cycle():
    """A job depending on itself raises CycleError naming it twice."""
    with pytest.raises(CycleError) as info:
        Job("a", 1, ("a",))
    assert info.value.cycle == ["a", "a"]


def test_index_jobs_rejects_duplicates_and_unknown_deps():
    """Names must be unique and every dependency must exist."""
    with pytest.raises(ScheduleError):
        index_jobs([Job("a", 1), Job("a", 2)])
    with pytest.raises(ScheduleError):
        index_jobs([Job("a", 1, ("ghost",))])
    assert list(index_jobs([Job("b", 1), Job("a", 1, ("b",))])) == ["b", "a"]


def test_dependents_lists_direct_users_sorted():
    """Each job maps to the sorted jobs that need it directly."""
    assert dependents(diamond()) == {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}


def test_topo_order_breaks_ties_by_name():
    """With equal priorities, ready jobs come out alphabetically."""
    assert topo_order(diamond()) == ["a", "b", "c", "d"]
    assert topo_order([]) == []


def test_topo_order_prefers_higher_priority_among_ready_jobs():
    """A high-priority job still waits for its dependencies."""
    jobs = [Job("x", 1, ("y",), priority=10), Job("y", 1), Job("z", 1, priority=1), Job("w", 1, priority=-1)]
    assert topo_order(jobs) == ["z", "y", "x", "w"]


def test_topo_order_priority_reorders_siblings():
    """Raising a sibling's priority moves it ahead of an alphabetically earlier one."""
    jobs = diamond()
    jobs[1] = Job("c", 4, ("a",), priority=5)
    assert topo_order(jobs) == ["a", "c", "b", "d"]


def test_find_cycle_none_for_acyclic_graph():
    """An acyclic set of jobs has no cycle."""
    assert find_cycle(diamond()) is None
    assert find_cycle([]) is None


def test_find_cycle_returns_closed_walk():
    """The cycle starts at its alphabetically first job and repeats it at the end."""
    jobs = [Job("a", 1, ("c",)), Job("b", 1, ("a",)), Job("c", 1, ("b",)), Job("d", 1), Job("e", 1, ("a",))]
    assert find_cycle(jobs) == ["a", "c", "b", "a"]


def test_find_cycle_skips_jobs_that_only_lead_into_it():
    """A job hanging off a cycle is not part of the reported cycle."""
    jobs = [Job("a", 1, ("x",)), Job("x", 1, ("y",)), Job("y", 1, ("x",))]
    assert find_cycle(jobs) == ["x", "y", "x"]


def test_topo_order_raises_cycle_error():
    """Ordering a cyclic graph raises CycleError with the cycle and a readable message."""
    jobs = [Job("p", 1, ("q",)), Job("q", 1, ("p",)), Job("r", 1)]
    with pytest.raises(CycleError) as info:
        topo_order(jobs)
    assert info.value.cycle == ["p", "q", "p"]
    assert str(info.value) == "dependency cycle: p -> q -> p"
