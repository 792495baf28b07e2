"""GradeCache: each distinct (task, clean tree, candidate tree) is graded once; infra errors are
graded again; episodes played through it end exactly as with the plain grader."""

from __future__ import annotations

import pytest

from pappo.config import Params
from pappo.env.agents import OracleAgent
from pappo.env.vec import GradeCache, VecEnv
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader, make_env


@pytest.fixture
def store(fx_params: Params) -> TaskStore:
    return TaskStore.from_params(fx_params, "repofix")


def _items(store: TaskStore, *trees: str):
    task = store.task("tinycalc-001")
    clean, buggy = store.clean(task), store.buggy(task)
    return [(task, clean, clean if t == "clean" else buggy) for t in trees]


def test_a_repeated_tree_is_graded_once_and_answers_keep_their_order(store: TaskStore) -> None:
    inner = FakeGrader()
    cache = GradeCache(inner)
    first = cache(_items(store, "buggy", "clean", "buggy"))
    assert inner.calls == [2]  # the duplicate within the call went once
    assert [g.success for g in first] == [False, True, False]
    again = cache(_items(store, "clean", "buggy"))
    assert inner.calls == [2] and cache.graded == 2 and cache.calls == 5  # nothing new: no call at all
    assert again == [first[1], first[0]]


def test_an_infra_error_is_not_kept(store: TaskStore) -> None:
    inner = FakeGrader(infra=[0])  # the first call's grades are infra errors
    cache = GradeCache(inner)
    assert cache(_items(store, "buggy"))[0].infra_error
    retried = cache(_items(store, "buggy"))[0]
    assert inner.calls == [1, 1] and retried.infra_error is None
    cache(_items(store, "buggy"))
    assert inner.calls == [1, 1]  # kept once it came back clean


def test_episodes_through_the_cache_end_as_with_the_plain_grader(store: TaskStore) -> None:
    def played(grade_fn):
        envs = [make_env(store, FakeGrader(), i) for i in sorted(store.tasks) for _ in range(2)]
        agents = [OracleAgent(e.task, e.buggy_tree) for e in envs]
        vec = VecEnv(envs, grade_fn)
        vec.reset()
        while not all(vec.done):
            vec.step([None if e.done else a.act(e.transcript) for e, a in zip(envs, agents)])
        return [(e.metrics, e.per_turn_rewards, e.transcript) for e in envs]

    plain, inner = FakeGrader(), FakeGrader()
    cache = GradeCache(inner)
    through_cache = played(cache)
    assert through_cache == played(plain)
    assert all(metrics.success for metrics, _, _ in through_cache)  # the oracle's grades were read
    # the second episode of each task reused the first's grades (calls: trees per call)
    assert sum(inner.calls) == cache.graded < sum(plain.calls)
