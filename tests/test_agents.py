"""Scripted agents: the oracle repairs every task exactly; the noisy agent's mistakes show up as
the events and metrics they should; one end-to-end run against the real sandbox."""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from pappo.config import load_params
from pappo.config.env import EnvParams
from pappo.env.agents import NoisyAgent, OracleAgent, SubmitAgent, fix_edits, oracle_plan, play, play_all
from pappo.env.episode import RepairEnv
from pappo.env.protocol import ParseError, parse_tool_call
from pappo.env.vec import VecEnv
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

P = EnvParams()


@pytest.fixture
def store(fx_params) -> TaskStore:
    return TaskStore.from_params(fx_params, "repofix")


def env_for(store: TaskStore, instance_id: str, grader: FakeGrader, **params: int) -> RepairEnv:
    task = store.task(instance_id)
    return RepairEnv(task, store.clean(task), store.buggy(task), EnvParams(**params), grader)


def check_oracle(store: TaskStore, instance_id: str) -> None:
    env = env_for(store, instance_id, FakeGrader())
    metrics, transcript = play(env, OracleAgent(env.task, env.buggy_tree))
    n_edits = len(oracle_plan(env.task, env.buggy_tree, P.view_max_lines)) - 3
    assert env.ws.files == env.clean_tree, f"{instance_id}: the oracle's edits do not rebuild the clean tree"
    assert metrics.success and metrics.submitted and metrics.edits == n_edits, instance_id
    assert metrics.turns == 3 + n_edits and metrics.failed_edit == metrics.parse_error == 0, instance_id
    view = transcript[3]["content"]
    assert not view.startswith("Error") and f"{P.view_max_lines} lines at most" not in view, instance_id


def test_oracle_repairs_every_fixture_task(store: TaskStore):
    assert len(store.tasks) == 4
    for instance_id in store.tasks:
        check_oracle(store, instance_id)


@pytest.mark.slow
def test_oracle_repairs_every_real_task_byte_for_byte():
    store = TaskStore.from_params(load_params(ROOT / "params.yaml"), "repofix")
    assert len(store.tasks) == 100
    for instance_id in store.tasks:
        check_oracle(store, instance_id)


def test_oracle_views_the_function_holding_the_bug(store: TaskStore):
    task = store.task("tinycalc-001")
    view = oracle_plan(task, store.buggy(task), P.view_max_lines)[0]
    lines = store.buggy(task)["tinycalc/core.py"].decode().splitlines()
    shown = lines[view.arguments["start"] - 1 : view.arguments["end"]]
    assert any(ln.startswith("def mean(") for ln in shown) and "    return sum(values) * len(values)" in shown
    assert not any(ln.startswith("def running_total(") for ln in shown)


def test_fix_edits_grow_context_until_unique_and_split_far_apart_changes():
    body = "".join(f"def f{i}(x):\n    return x\n\n\n" for i in range(6))
    buggy = {"m.py": body.encode()}
    clean = {
        "m.py": body.replace("def f0(x):\n    return x", "def f0(x):\n    return -x")
        .replace("def f5(x):\n    return x", "def f5(x):\n    return x + 1")
        .encode()
    }
    edits = fix_edits(buggy, clean)
    assert len(edits) == 2 and edits[0].arguments["old_str"].startswith("def f5")  # bottom-up
    assert all("    return x\n" in e.arguments["old_str"] for e in edits)  # grown past the common line
    insertion = {"m.py": body.replace("def f2(x):\n", "def f2(x):\n    x += 1\n").encode()}
    [edit] = fix_edits(buggy, insertion)
    assert edit.arguments["old_str"] and edit.arguments["new_str"].count("x += 1") == 1


def test_submit_agent_fails(store: TaskStore):
    env = env_for(store, "tinytext-001", FakeGrader())
    metrics, _ = play(env, SubmitAgent())
    assert not metrics.success and metrics.turns == 1 and metrics.edits == 0


# -- the noisy agent
def noisy(store: TaskStore, instance_id: str = "tinycalc-001", **rates: float) -> NoisyAgent:
    task = store.task(instance_id)
    return NoisyAgent(task, store.buggy(task), **rates)


def test_noisy_without_noise_is_the_oracle(store: TaskStore):
    zero = dict(p_wrong_edit=0.0, p_failed_edit=0.0, p_repeated_test=0.0, p_parse_error=0.0)
    env = env_for(store, "tinycalc-002", FakeGrader())
    _, with_noisy = play(env, noisy(store, "tinycalc-002", **zero))
    _, with_oracle = play(env, OracleAgent(env.task, env.buggy_tree))
    assert with_noisy == with_oracle


def test_noisy_always_unparsable_is_cut_at_max_turns(store: TaskStore):
    env = env_for(store, "tinycalc-001", FakeGrader())
    metrics, transcript = play(env, noisy(store, p_parse_error=1.0))
    assert (
        metrics.parse_error == metrics.turns == P.max_turns and not metrics.submitted and not metrics.success
    )
    assert env.per_turn_rewards == [P.rewards.parse_error] * P.max_turns
    assert sum(1 for m in transcript if m["role"] == "user") == 1 + P.max_turns


def test_noisy_mistakes_each_once_then_the_fix(store: TaskStore):
    env = env_for(store, "tinycalc-001", FakeGrader())
    metrics, _ = play(
        env, noisy(store, p_wrong_edit=1.0, p_failed_edit=1.0, p_repeated_test=1.0, p_parse_error=0.0)
    )
    # view, failed edit, wrong edit, run_tests, undo, fix, run_tests, run_tests again, submit
    assert metrics.turns == 9 and metrics.success and metrics.submitted
    assert (metrics.failed_edit, metrics.edits, metrics.test_runs, metrics.repeated_test) == (1, 3, 3, 1)
    kinds = [(e.turn, e.kind) for e in env.events]
    assert kinds == [
        (2, "failed_edit"),
        (3, "edit_progress"),
        (5, "edit_progress"),
        (6, "edit_progress"),
        (8, "repeated_test"),
    ]
    assert env.ws.files == env.clean_tree


def test_noisy_is_deterministic_given_the_seed(store: TaskStore):
    def transcript(seed: int) -> list[dict[str, object]]:
        env = env_for(store, "tinytext-002", FakeGrader())
        return play(
            env,
            noisy(
                store,
                "tinytext-002",
                seed=seed,
                p_wrong_edit=0.5,
                p_failed_edit=0.5,
                p_repeated_test=0.5,
                p_parse_error=0.3,
            ),
        )[1]

    assert transcript(3) == transcript(3)
    assert len({str(transcript(s)) for s in range(6)}) > 1


def test_noisy_unparsable_turns_are_parse_errors(store: TaskStore):
    agent = noisy(store, p_parse_error=1.0)
    texts = {agent.act([]) for _ in range(40)}
    assert len(texts) == 4 and all(isinstance(parse_tool_call(t), ParseError) for t in texts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(0, 10_000),
    st.sampled_from(["tinycalc-001", "tinycalc-002", "tinytext-001", "tinytext-002"]),
    st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
)
def test_noisy_episodes_keep_the_books_straight(
    store: TaskStore, seed: int, instance_id: str, rates: list[float]
):
    env = env_for(store, instance_id, FakeGrader())
    names = ("p_wrong_edit", "p_failed_edit", "p_repeated_test", "p_parse_error")
    metrics, transcript = play(env, noisy(store, instance_id, seed=seed, **dict(zip(names, rates))))
    assert env.done and 1 <= metrics.turns <= P.max_turns and len(env.per_turn_rewards) == metrics.turns
    assert metrics.submitted or metrics.turns == P.max_turns
    total = sum(e.reward for e in env.events) + env.terminal_reward
    assert sum(env.per_turn_rewards) == pytest.approx(total)
    assert metrics.parse_error == sum(1 for e in env.events if e.kind == "parse_error")
    assert metrics.failed_edit == sum(1 for e in env.events if e.kind == "failed_edit")
    assert metrics.edits == sum(1 for e in env.events if e.kind == "edit_progress")
    assert metrics.success == (env.ws.files == env.clean_tree)  # the fake passes exactly the clean tree
    assert len(transcript) == 2 + 2 * metrics.turns


# -- the real sandbox
@pytest.mark.slow
def test_oracle_real_sandbox(fx_params):
    """Oracle and submit-at-once episodes on the fixture tasks, graded by the sandbox pool."""
    from pappo.sandbox.grading import grade_many
    from pappo.sandbox.pool import SandboxPool

    store = TaskStore.from_params(fx_params, "repofix")
    ids = sorted(store.tasks)
    envs = [
        RepairEnv(store.task(i), store.clean(store.task(i)), store.buggy(store.task(i)), fx_params.env)
        for i in ids * 2
    ]
    agents = [
        OracleAgent(e.task, e.buggy_tree) if k < len(ids) else SubmitAgent() for k, e in enumerate(envs)
    ]
    with SandboxPool(fx_params.sandbox) as pool:
        play_all(VecEnv(envs, functools.partial(grade_many, pool, hidden=store.hidden)), agents)
    for k, env in enumerate(envs):
        assert not env.metrics.infra_error and not env.metrics.hack_attempt, env.final_grade
        assert env.metrics.success == (k < len(ids)), (env.task.instance_id, env.final_grade)
        assert env.initial_failing == len(env.task.FAIL_TO_PASS)
    oracle = envs[0]
    assert oracle.events[0].detail["delta_failing"] == len(oracle.task.FAIL_TO_PASS)
    assert "All tests pass" in oracle.transcript[7]["content"]
