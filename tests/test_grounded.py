"""The transcript-only scripted agent: its flips, its procedure on a hand-checked task, its books."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pappo.config.env import EnvParams
from pappo.env.agents import play
from pappo.env.episode import RepairEnv
from pappo.env.grounded import GroundedAgent, candidate_edits, title_symbol
from pappo.env.protocol import parse_tool_call
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

P = EnvParams()


@pytest.fixture
def store(fx_params) -> TaskStore:
    return TaskStore.from_params(fx_params, "repofix")


def env_for(store: TaskStore, instance_id: str, statement: str | None = None) -> RepairEnv:
    task = store.task(instance_id)
    if statement is not None:
        task = task.model_copy(update={"problem_statement": statement})
    return RepairEnv(task, store.clean(task), store.buggy(task), P, FakeGrader())


def calls(transcript: list[dict[str, object]]) -> list:
    return [parse_tool_call(str(m["content"])) for m in transcript if m["role"] == "assistant"]


def test_title_symbol_reads_the_backticked_name_of_the_first_line_only():
    assert title_symbol("`mean()` gives a wrong result\n\nmore") == "mean"
    assert title_symbol("`BitSet()` gives a wrong result") == "BitSet"
    assert title_symbol("Something is off\n\n`mean()` is wrong") is None
    assert title_symbol("`a.b()` fails") is None  # not a plain name


def test_candidate_edits_flip_one_token_and_skip_what_is_not_code():
    lines = [
        "def f(a, b):",
        '    """Doc."""',
        "    # a < b",
        "",
        "    if a < b and b:",
        "    for x in xs:",
        "    return g(a, b)  # keep a, b",
    ]
    cands = candidate_edits(lines)
    olds = {old for old, _ in cands}
    assert olds == {"    if a < b and b:", "    return g(a, b)  # keep a, b"}  # a loop's `in` is no test
    news = [new for old, new in cands if old == "    if a < b and b:"]
    assert news == ["    if a <= b and b:", "    if a < b or b:", "    if not a < b and b:"]
    assert ("    return g(a, b)  # keep a, b", "    return g(b, a)  # keep a, b") in cands  # comment kept
    assert all(old != new and old.count("\n") == new.count("\n") == 0 for old, new in cands)


def test_grounded_repairs_a_hand_checked_task_in_line_order(store: TaskStore):
    env = env_for(store, "tinycalc-001")
    metrics, transcript = play(env, GroundedAgent(order="line"))
    names = [c.name for c in calls(transcript)]
    # search, view; two wrong flips (each tried, tested, undone); the fix, tested; submit
    assert names == [
        "search",
        "view",
        "str_replace",
        "run_tests",
        "str_replace",
        "str_replace",
        "run_tests",
        "str_replace",
        "str_replace",
        "run_tests",
        "submit",
    ]
    search, view, *_ = calls(transcript)
    assert search.arguments == {"pattern": "def mean("}
    line = next(
        n
        for n, ln in enumerate(env.buggy_tree["tinycalc/core.py"].decode().splitlines(), 1)
        if ln.startswith("def mean(")
    )
    assert view.arguments == {"path": "tinycalc/core.py", "start": line}
    last_edit = calls(transcript)[-3].arguments
    assert (last_edit["old_str"], last_edit["new_str"]) == (
        "    return sum(values) * len(values)",
        "    return sum(values) / len(values)",
    )
    assert metrics.success and metrics.submitted and metrics.failed_edit == 0
    assert env.ws.files == env.clean_tree


def test_grounded_acts_on_the_transcript_alone(store: TaskStore):
    """Same messages, same action: the agent holds no task, tree or patch."""
    env = env_for(store, "tinycalc-001")
    _, transcript = play(env, GroundedAgent(order="line"))
    fresh = GroundedAgent(order="line")
    for k, m in enumerate(transcript):
        if m["role"] == "assistant":
            assert fresh.act(transcript[:k]) == m["content"]


def test_grounded_submits_when_there_is_nothing_to_go_on(store: TaskStore):
    metrics, transcript = play(env_for(store, "tinycalc-001", "Something is wrong\n"), GroundedAgent())
    assert [c.name for c in calls(transcript)] == ["submit"] and not metrics.success
    statement = "`no_such_function()` gives a wrong result\n"
    metrics, transcript = play(env_for(store, "tinycalc-001", statement), GroundedAgent())
    assert [c.name for c in calls(transcript)] == ["search", "submit"] and not metrics.success


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(0, 10_000), st.sampled_from(["tinycalc-001", "tinycalc-002", "tinytext-001", "tinytext-002"])
)
def test_grounded_episodes_are_well_formed_and_leave_no_failed_flip_behind(
    store: TaskStore, seed: int, iid: str
):
    env = env_for(store, iid)
    metrics, transcript = play(env, GroundedAgent(seed=seed, order="shuffle"))
    assert metrics.parse_error == 0 and 1 <= metrics.turns <= P.max_turns
    edits = [c.arguments for c in calls(transcript) if c.name == "str_replace"]
    pending = len(edits) % 2 == 1 and not metrics.success  # a last flip the turn limit cut before its undo
    if metrics.success:
        assert env.ws.files == env.clean_tree and (metrics.submitted or metrics.turns == P.max_turns)
    elif not pending:
        assert env.ws.files == env.buggy_tree  # every failed flip was undone
    for first, undo in zip(edits[::2], edits[1::2]):
        assert (undo["old_str"], undo["new_str"]) == (first["new_str"], first["old_str"])
    tried = [(e["old_str"], e["new_str"]) for e in edits[::2]]
    assert len(tried) == len(set(tried))  # no flip tried twice
    assert json.dumps(transcript)  # plain data


@pytest.mark.slow
def test_base_model_demonstrations_follow_the_chosen_demonstrator(fx_params):
    """`base_model.demo_agent` picks who plays the warm-up tasks (graded by the real sandbox)."""
    from pappo.policy.base_model import demonstrations
    from pappo.sandbox.pool import SandboxPool

    def first_calls(agent: str) -> set[str]:
        bm = fx_params.base_model.model_copy(update={"demo_agent": agent, "demos_per_task": 1})
        with SandboxPool(fx_params.sandbox) as pool:
            demos = demonstrations(fx_params.model_copy(update={"base_model": bm}), pool)
        assert len(demos) == len(TaskStore.from_params(fx_params, "warmup").tasks)
        return {getattr(calls(d["transcript"])[0], "name", "parse_error") for d in demos}

    assert first_calls("grounded") == {"search"}  # it starts from the title
    oracle = first_calls("oracle")
    assert "view" in oracle and oracle <= {"view", "parse_error"}  # it goes straight to the bug
