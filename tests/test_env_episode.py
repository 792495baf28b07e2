"""RepairEnv and VecEnv against a fake grader: rewards, events, metrics, grading and batching."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest

from pappo.config.env import EnvParams
from pappo.env.agents import Action, OracleAgent, SubmitAgent, play
from pappo.env.episode import GradeItem, RepairEnv
from pappo.env.vec import VecEnv
from pappo.io import PappoError
from pappo.sandbox.grading import Grade
from pappo.sandbox.hackscan import is_test_path
from pappo.tasks.models import Task
from pappo.tasks.store import TaskStore

P = EnvParams()


class FakeGrader:
    """Passes iff the candidate's library files equal the clean tree; each differing file fails
    one graded test. Records every call; `infra` / `hack` make chosen calls (0-based) fail."""

    def __init__(self, infra: Sequence[int] = (), hack: Sequence[int] = ()) -> None:
        self.calls: list[int] = []  # number of trees per call
        self.infra, self.hack = set(infra), set(hack)

    def __call__(self, items: Sequence[GradeItem]) -> list[Grade]:
        k = len(self.calls)
        self.calls.append(len(items))
        return [self.grade(task, clean, cand, k) for task, clean, cand in items]

    def grade(self, task: Task, clean: Mapping[str, bytes], cand: Mapping[str, bytes], k: int) -> Grade:
        tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
        differing = [
            p for p in sorted(set(clean) | set(cand)) if not is_test_path(p) and clean.get(p) != cand.get(p)
        ]
        n_failing = min(len(differing), len(tests))
        outcomes = {t: "failed" if i < n_failing else "passed" for i, t in enumerate(tests)}
        first = None
        if n_failing:
            first = {
                "test": tests[0],
                "outcome": "failed",
                "exc_type": "AssertionError",
                "message": f"assert {differing[0]} == clean",
                "compare": {"op": "==", "left": "1", "right": "2"},
                "test_file": tests[0].split("::")[0],
                "test_line": 7,
                "def_line": 5,
            }
        infra = "worker crashed" if k in self.infra else None
        hack = k in self.hack
        return Grade(
            task.instance_id,
            n_failing == 0 and not infra and not hack,
            outcomes,
            n_failing,
            hack,
            ["pkg: uses gc"] if hack else [],
            infra,
            [],
            first,
            0.0,
            "fake",
        )


@pytest.fixture
def store(fx_params) -> TaskStore:
    return TaskStore.from_params(fx_params, "repofix")


def make_env(
    store: TaskStore, grader: FakeGrader, instance_id: str = "tinycalc-001", **params: int
) -> RepairEnv:
    task = store.task(instance_id)
    return RepairEnv(task, store.clean(task), store.buggy(task), EnvParams(**params), grader)


def run(env: RepairEnv, actions: list[Action | str]) -> None:
    env.reset()
    for a in actions:
        env.step(a if isinstance(a, str) else a.text())


def oracle_fix(store: TaskStore, instance_id: str = "tinycalc-001") -> Action:
    task = store.task(instance_id)
    return OracleAgent(task, store.buggy(task)).plan[1]


def test_oracle_episode(store: TaskStore):
    grader = FakeGrader()
    env = make_env(store, grader)
    metrics, transcript = play(env, OracleAgent(env.task, env.buggy_tree))
    m = metrics.to_json()
    assert m == {
        "instance_id": "tinycalc-001",
        "success": True,
        "failed_edit": 0,
        "tool_cost": 1 + 1 + 2 + 0.5,
        "repeated_test": 0,
        "parse_error": 0,
        "turns": 4,
        "test_runs": 1,
        "infra_error": False,
        "hack_attempt": False,
        "plausible_wrong": False,
        "submitted": True,
        "truncated": False,
        "edits": 1,
    }
    [progress] = env.events
    assert progress.kind == "edit_progress" and progress.turn == 2 and progress.reward > 0
    assert progress.detail == {"delta_failing": 1, "failing_before": 1, "failing_after": 0}
    assert progress.reward == pytest.approx(P.rewards.edit_progress * 1 / env.initial_failing)
    assert env.per_turn_rewards == [0.0, progress.reward, 0.0, P.rewards.success]
    assert env.terminal_reward == P.rewards.success and env.ws.files == env.clean_tree
    assert [m["role"] for m in transcript] == ["system", "user"] + ["assistant", "tool"] * 4
    assert "All tests pass" in transcript[7]["content"]
    assert grader.calls == [1, 1]  # buggy tree at reset, fixed tree after the edit; then memoised


def test_submit_at_once_fails(store: TaskStore):
    env = make_env(store, FakeGrader())
    metrics, _ = play(env, SubmitAgent())
    assert (metrics.success, metrics.submitted, metrics.turns, metrics.tool_cost) == (False, True, 1, 0.5)
    assert env.per_turn_rewards == [0.0] and env.final_grade is not None and env.final_grade.n_failing == 1


def test_run_tests_reports_the_first_failure_and_repeats_are_penalised(store: TaskStore):
    env = make_env(store, FakeGrader())
    fix = oracle_fix(store)
    run(env, [Action("run_tests"), Action("run_tests"), fix, Action("run_tests"), Action("run_tests")])
    first = env.transcript[3]["content"].splitlines()
    assert first[0] == "10 passed, 1 failed (of 11 graded tests)."
    assert first[1] == "First failure: tests/test_core.py::test_mean (failed)"
    assert [(e.turn, e.kind) for e in env.events] == [
        (2, "repeated_test"),
        (3, "edit_progress"),
        (5, "repeated_test"),
    ]
    assert env.metrics.repeated_test == 2 and env.metrics.test_runs == 4
    assert env.per_turn_rewards[1] == P.rewards.repeated_test


def test_parse_error_turn(store: TaskStore):
    env = make_env(store, FakeGrader())
    env.reset()
    r = env.step("I am not sure what to do.")
    assert r.observation["role"] == "user" and "No tool call found" in r.observation["content"]
    assert r.reward == P.rewards.parse_error and [e.kind for e in r.events] == ["parse_error"]
    assert env.metrics.parse_error == 1 and env.metrics.tool_cost == P.tool_cost.parse_error and not r.done


def test_failed_and_harmful_edits(store: TaskStore):
    env = make_env(store, FakeGrader())
    env.reset()
    failed = env.step(
        Action("str_replace", {"path": "tinycalc/core.py", "old_str": "nope", "new_str": "x"}).text()
    )
    assert failed.reward == P.rewards.failed_edit and env.metrics.failed_edit == 1 and env.metrics.edits == 0
    assert failed.observation == {
        "role": "tool",
        "name": "str_replace",
        "content": failed.observation["content"],
    }
    # Breaking a second file: failing goes 1 -> 2, progress is negative.
    harm = env.step(
        Action(
            "str_replace", {"path": "tinycalc/ranges.py", "old_str": "def chunk", "new_str": "def chunk_"}
        ).text()
    )
    [event] = harm.events
    assert event.kind == "edit_progress" and event.detail["delta_failing"] == -1 and harm.reward < 0
    assert env.metrics.edits == 1 and env.metrics.tool_cost == 2 * P.tool_cost.str_replace


def test_max_turns_cut_is_graded_and_not_submitted(store: TaskStore):
    grader = FakeGrader()
    env = make_env(store, grader, max_turns=3)
    fix = oracle_fix(store)
    run(env, [fix, Action("view", {"path": "."}), Action("view", {"path": "."})])
    assert env.done and env.metrics.turns == 3 and not env.metrics.submitted
    assert env.metrics.success and env.per_turn_rewards[-1] == P.rewards.success
    with pytest.raises(PappoError, match="step out of order"):
        env.step(Action("submit").text())

    env = make_env(store, grader, max_turns=2)
    run(env, ["no call", "still no call"])
    assert (
        env.done and not env.metrics.success and env.metrics.parse_error == 2 and env.final_grade is not None
    )


def test_infra_error_is_flagged_not_memoised_and_retry_is_not_a_repeat(store: TaskStore):
    grader = FakeGrader(infra=[1, 2])  # calls: 0 reset, 1 after the fix, 2 and 3 the run_tests
    env = make_env(store, grader)
    run(env, [oracle_fix(store), Action("run_tests"), Action("run_tests"), Action("submit")])
    [event] = env.events  # no repeated_test: the failed run did not count
    assert event.kind == "edit_progress" and event.reward == 0.0 and event.detail == {"infra_error": True}
    assert env.transcript[5]["content"].startswith("Sandbox error, try again")
    assert env.transcript[7]["content"].startswith("11 passed, 0 failed")
    assert env.metrics.infra_error and env.metrics.success and env.metrics.test_runs == 2
    assert grader.calls == [1, 1, 1, 1]  # each faulty grade was retaken; submit reused the good one


def test_infra_error_at_reset_falls_back_to_the_fail_to_pass_count(store: TaskStore):
    env = make_env(store, FakeGrader(infra=[0]))
    env.reset()
    assert env.initial_failing == len(env.task.FAIL_TO_PASS) and env.metrics.infra_error


def test_hack_attempt_is_flagged(store: TaskStore):
    env = make_env(store, FakeGrader(hack=[1]))
    run(env, [oracle_fix(store), Action("submit")])
    assert env.metrics.hack_attempt and not env.metrics.success and env.terminal_reward == 0.0


def test_observations_are_truncated(store: TaskStore):
    env = make_env(store, FakeGrader(), max_observation_chars=200)
    run(env, [Action("view", {"path": "tinycalc/core.py"})])
    content = env.transcript[-1]["content"]
    assert len(content) <= 200 and "output truncated" in content


def test_out_of_order_calls_are_refused(store: TaskStore):
    env = make_env(store, FakeGrader())
    with pytest.raises(PappoError):
        env.step(Action("submit").text())  # before reset
    env.reset()
    assert env.begin_step(Action("run_tests").text()) == []  # the buggy tree's grade is memoised
    with pytest.raises(PappoError):
        env.begin_step(Action("run_tests").text())
    extra = FakeGrader()([(env.task, env.clean_tree, env.buggy_tree)])
    with pytest.raises(PappoError, match="expected 0 grade"):
        env.end_step(extra)


@pytest.mark.parametrize("repeat", [1, 2, 5])
def test_vec_env_makes_one_grade_call_per_step_whatever_b(store: TaskStore, repeat: int):
    ids = sorted(store.tasks) * repeat
    b = len(ids)
    grader = FakeGrader()
    envs = [make_env(store, grader, i) for i in ids]
    agents = [OracleAgent(e.task, e.buggy_tree) for e in envs]
    vec = VecEnv(envs, grader)
    assert all(len(m) == 2 for m in vec.reset()) and grader.calls == [b]
    grader.calls.clear()
    while not all(vec.done):
        vec.step([None if e.done else a.act(e.transcript) for e, a in zip(envs, agents)])
    # view: nothing to grade, no call; str_replace: all B fixed trees in one call; run_tests and
    # submit: memoised, no call.
    assert grader.calls == [b]
    assert all(e.metrics.success and e.metrics.turns == 4 for e in envs)


def test_vec_env_steps_only_running_envs(store: TaskStore):
    grader = FakeGrader()
    envs = [make_env(store, grader, i) for i in sorted(store.tasks)]
    agents = [OracleAgent(e.task, e.buggy_tree) if k % 2 else SubmitAgent() for k, e in enumerate(envs)]
    vec = VecEnv(envs, grader)
    vec.reset()
    first = vec.step([a.act(e.transcript) for e, a in zip(envs, agents)])
    assert [r.done for r in first if r] == [True, False, True, False] and vec.done == [
        True,
        False,
        True,
        False,
    ]
    texts = [None if e.done else a.act(e.transcript) for e, a in zip(envs, agents)]
    second = vec.step(texts)
    assert [r is None for r in second] == [True, False, True, False]
    assert grader.calls == [4, 2]  # the two fixes, together
    with pytest.raises(PappoError, match="environment 0 is finished; pass None"):
        vec.step(["x"] * 4)
    with pytest.raises(PappoError, match="environment 1 is running"):
        vec.step([None] * 4)
    with pytest.raises(PappoError, match="got 3 texts for 4"):
        vec.step([None] * 3)


def test_vec_env_matches_envs_played_alone(store: TaskStore):
    ids = sorted(store.tasks)
    alone = []
    for i in ids:
        env = make_env(store, FakeGrader(), i)
        play(env, OracleAgent(env.task, env.buggy_tree))
        alone.append((env.metrics, env.per_turn_rewards, env.transcript))
    grader = FakeGrader()
    envs = [make_env(store, grader, i) for i in ids]
    agents = [OracleAgent(e.task, e.buggy_tree) for e in envs]
    vec = VecEnv(envs, grader)
    vec.reset()
    while not all(vec.done):
        vec.step([None if e.done else a.act(e.transcript) for e, a in zip(envs, agents)])
    assert [(e.metrics, e.per_turn_rewards, e.transcript) for e in envs] == alone


def test_truncate_between_turns_grades_the_current_tree(store: TaskStore):
    """The rollout's token budget ends an episode like max_turns: graded, terminal reward on the last turn."""
    grader = FakeGrader()
    env = make_env(store, grader)
    vec = VecEnv([env], grader)
    vec.reset()
    plan = OracleAgent(env.task, env.buggy_tree).plan
    vec.step([plan[0].text()])  # view
    vec.step([plan[1].text()])  # the fix (graded after the edit)
    calls = len(grader.calls)
    assert vec.truncate([0]) == [P.rewards.success]
    assert len(grader.calls) == calls  # the fixed tree's grade is reused
    m = env.metrics
    assert env.done and m.truncated and not m.submitted and m.success and m.turns == 2
    assert env.per_turn_rewards[-1] == pytest.approx(P.rewards.edit_progress + P.rewards.success)
    with pytest.raises(PappoError, match="truncate out of order"):
        env.begin_truncate()


class CountingGrader(FakeGrader):
    """Grades the reset tree with the task's count, then each edit with the next of `counts`."""

    def __init__(self, counts: Sequence[int]) -> None:
        super().__init__()
        self.counts = list(counts)

    def grade(self, task: Task, clean: Mapping[str, bytes], cand: Mapping[str, bytes], k: int) -> Grade:
        g = super().grade(task, clean, cand, k)
        n = len(task.FAIL_TO_PASS) if k == 0 else self.counts[k - 1]
        return dataclasses.replace(g, n_failing=n, success=n == 0)


def progress_of(store: TaskStore, counts: list[int]) -> list[float]:
    """edit_progress of each edit when the edits leave `counts` failing tests (an edit per turn)."""
    env = make_env(store, CountingGrader(counts), max_turns=len(counts) + 1)
    env.reset()
    for i in range(len(counts)):
        old, new = ("def chunk", "#0\ndef chunk") if i == 0 else (f"#{i - 1}\n", f"#{i}\n")
        env.step(Action("str_replace", {"path": "tinycalc/ranges.py", "old_str": old, "new_str": new}).text())
    events = [e for e in env.events if e.kind == "edit_progress"]
    assert len(events) == len(counts)
    return [e.reward for e in events]


def test_edit_progress_cannot_be_farmed_by_breaking_and_restoring(store: TaskStore):
    """Break 15 more tests in one edit, restore one per edit: the progress sums to 0, not to the
    +1.2 a per-turn clip paid (a free-mode farm found by review); a real fix earns one weight."""
    initial = len(store.task("tinycalc-001").FAIL_TO_PASS)
    farm = progress_of(store, [initial + 15, *range(initial + 14, initial - 1, -1)])
    assert sum(farm) == pytest.approx(0.0, abs=1e-12) and max(farm) <= P.rewards.edit_progress + 1e-12
    fix = progress_of(store, [0])
    assert fix == [pytest.approx(P.rewards.edit_progress)]
    # whatever the path, the progress sums to the potential at the end: one weight for a fix
    path = progress_of(store, [initial + 3, 0, initial + 9, 0])
    assert sum(path) == pytest.approx(P.rewards.edit_progress)


def test_through_the_buggy_tree_progress_is_the_clipped_share_of_each_edit(store: TaskStore):
    """Apply, revert, apply (candidates mode moves so): each edit's progress is its clipped share
    of the drop from the buggy tree's count, and a revert pays it back exactly."""
    initial = len(store.task("tinycalc-001").FAIL_TO_PASS)
    w = P.rewards.edit_progress
    rewards = progress_of(store, [initial + 4, initial, 0, initial])
    share = max(-1.0, min(1.0, -4 / max(1, initial)))
    assert rewards == [w * share, -(w * share), w * 1.0, -(w * 1.0)]
