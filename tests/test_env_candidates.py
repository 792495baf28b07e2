"""The candidates action mode: protocol, board, episode events and rewards, the scripted agents,
and the oracle through the real grader."""

from __future__ import annotations

import functools

import pytest

from conftest import ROOT
from pappo.config import load_params
from pappo.config.env import EnvParams
from pappo.env.agents import play
from pappo.env.candidate_agents import (
    CandidateOracle,
    NoisyCandidateAgent,
    RandomCandidateAgent,
    SystematicAgent,
    board_of,
    call,
)
from pappo.env.candidate_board import render
from pappo.env.episode import RepairEnv
from pappo.env.protocol import (
    CANDIDATE_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    TOOLS,
    ParseError,
    ToolCall,
    parse_tool_call,
    system_prompt,
    tool_names,
    tools_for,
)
from pappo.io import PappoError
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.candidates import CandidateEdit
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

CP = EnvParams(actions="candidates", max_turns=8)


@pytest.fixture
def store(fx_params) -> TaskStore:
    return TaskStore.from_params(fx_params, "repofix")


def make_env(store: TaskStore, grader, tid: str = "tinycalc-002", seed: int = 0, **params) -> RepairEnv:
    task = store.task(tid)
    env_params = CP.model_copy(update=params) if params else CP
    return RepairEnv(
        task,
        store.clean(task),
        store.buggy(task),
        env_params,
        grader,
        candidates=store.candidates[tid],
        seed=seed,
    )


def test_each_mode_lists_and_parses_only_its_own_tools():
    assert (
        tool_names("free") == ("view", "search", "str_replace", "run_tests", "submit")
        and tools_for("free") is TOOLS
    )
    assert tool_names("candidates") == ("apply", "revert", "view", "run_tests", "submit")
    assert system_prompt("free") == SYSTEM_PROMPT and system_prompt("candidates") == CANDIDATE_SYSTEM_PROMPT
    assert parse_tool_call(call("apply", {"id": 3}), "candidates") == ToolCall("apply", {"id": 3})
    assert isinstance(parse_tool_call(call("apply", {"id": 3})), ParseError)  # free mode has no apply
    wrong_type = parse_tool_call(
        '<tool_call>\n{"name": "apply", "arguments": {"id": "3"}}\n</tool_call>', "candidates"
    )
    assert isinstance(wrong_type, ParseError) and "must be a JSON integer" in wrong_type.message
    free_tool = parse_tool_call(
        '<tool_call>\n{"name": "str_replace", "arguments": {}}\n</tool_call>', "candidates"
    )
    assert isinstance(free_tool, ParseError) and "apply, revert, view, run_tests, submit" in free_tool.message


def test_render_is_one_line_for_one_line_edits_and_dedented_otherwise():
    one = CandidateEdit(
        path="p/a.py", line=4, before=["    if a < b:"], after=["    if a <= b:"], origin="x", n_failing=1
    )
    assert render(3, one) == "[3] p/a.py:4  - if a < b:  + if a <= b:"
    two = CandidateEdit(
        path="p/a.py",
        line=7,
        before=[],
        after=["    if not x:", '        return ""'],
        origin="x",
        n_failing=0,
    )
    assert render(1, two) == '[1] p/a.py:7\n  + if not x:\n  +     return ""'


def test_first_observation_shows_the_failing_tests_and_the_shuffled_candidates(store: TaskStore):
    env = make_env(store, FakeGrader(), seed=0)
    messages = env.reset()
    assert [m["role"] for m in messages] == ["system", "user"] and messages[0][
        "content"
    ] == CANDIDATE_SYSTEM_PROMPT
    user = messages[1]["content"]
    assert user.startswith("Tests: ") and "failed" in user and "Candidate edits:\n[1] " in user
    shown = store.candidates["tinycalc-002"].shown(CP.candidates.k)
    assert len(env.board) == len(shown) == 8 and sorted(map(id, env.board.edits)) == sorted(map(id, shown))
    assert env.board.edits[env.board.correct_id - 1] is shown[0]
    again = make_env(store, FakeGrader(), seed=0)
    again.reset()
    assert again.transcript == env.transcript  # the same seed, the same order
    orders = set()
    for seed in range(8):
        other = make_env(store, FakeGrader(), seed=seed)
        other.reset()
        orders.add(tuple(e.origin for e in other.board.edits))
    assert len(orders) > 4  # seeds shuffle


def test_oracle_episode_rewards_and_metrics(store: TaskStore):
    env = make_env(store, FakeGrader(), seed=5)
    env.reset()
    metrics, _ = play(env, CandidateOracle(board_of(env)[1]))
    assert metrics.success and metrics.submitted and metrics.turns == 3 and metrics.edits == 1
    assert env.per_turn_rewards == [pytest.approx(0.2), 0.0, 1.0]  # edit_progress, run_tests, submit
    assert metrics.tool_cost == CP.tool_cost.apply + CP.tool_cost.run_tests + CP.tool_cost.submit


def test_apply_revert_view_events_and_tool_errors(store: TaskStore):
    env = make_env(store, FakeGrader(), seed=1, max_turns=12)
    env.reset()
    k, fix = board_of(env)
    wrong = 1 if fix != 1 else 2
    steps = [
        (call("view", {"id": wrong}), None),
        (call("view", {"id": 99}), None),  # a bad id: an error text, not an edit
        (call("apply", {"id": 0}), "failed_edit"),
        (call("apply", {"id": wrong}), "edit_progress"),
        (call("apply", {"id": fix}), "failed_edit"),  # another is applied: revert first
        (call("run_tests"), None),
        (call("run_tests"), "repeated_test"),
        (call("revert"), "edit_progress"),
        (call("revert"), "failed_edit"),  # nothing to revert
        ("apply 3", "parse_error"),
    ]
    for text, kind in steps:
        result = env.step(text)
        assert [e.kind for e in result.events] == ([kind] if kind else []), text
    texts = [m["content"] for m in env.transcript if m["role"] in ("tool", "user")][1:]
    edit = env.board.edits[wrong - 1]
    assert texts[0].startswith(f"{edit.path} (lines ") and edit.before[0] in texts[0]
    assert texts[1] == f"Error: no candidate [99]; the candidates are [1] to [{k}]."
    assert texts[2].startswith("Error: no candidate [0]") and texts[3] == f"Applied [{wrong}]."
    assert texts[4] == f"Error: [{wrong}] is applied; revert it before applying another."
    assert texts[7] == f"Reverted [{wrong}]." and texts[8].startswith("Error: no candidate is applied")
    assert env.ws.files == env.buggy_tree
    m = env.metrics
    assert (m.failed_edit, m.edits, m.repeated_test, m.parse_error, m.test_runs) == (3, 2, 1, 1, 2)
    assert (
        env.per_turn_rewards[2] == CP.rewards.failed_edit
        and env.per_turn_rewards[9] == CP.rewards.parse_error
    )


def test_view_shows_the_applied_edit(store: TaskStore):
    env = make_env(store, FakeGrader(), seed=2)
    env.reset()
    fix = board_of(env)[1]
    env.step(call("apply", {"id": fix}))
    shown = env.step(call("view", {"id": fix})).observation["content"]
    assert env.board.edits[fix - 1].after[0] in shown


def test_candidates_mode_needs_the_tasks_candidates(store: TaskStore):
    task = store.task("tinycalc-002")
    with pytest.raises(PappoError, match="pass TaskStore.candidates"):
        RepairEnv(task, store.clean(task), store.buggy(task), CP, FakeGrader())
    with pytest.raises(PappoError, match="no candidate edits were given for tinycalc-002"):
        RepairEnv(
            task,
            store.clean(task),
            store.buggy(task),
            CP,
            FakeGrader(),
            candidates=store.candidates["tinycalc-001"],
        )


def test_systematic_agent_finds_the_fix_only_within_its_turn_budget(store: TaskStore):
    by_position: dict[int, bool] = {}
    for seed in range(40):
        env = make_env(store, FakeGrader(), seed=seed)
        env.reset()
        k, fix = board_of(env)
        metrics, _ = play(env, SystematicAgent(k))
        by_position[fix] = metrics.success
        assert metrics.failed_edit == 0 and metrics.parse_error == 0
    # apply, run_tests, revert per candidate: in 8 turns the 3rd is applied when the cut comes
    assert by_position[1] and by_position[2] and by_position[3]
    assert not any(ok for pos, ok in by_position.items() if pos > 3)


def test_random_agent_makes_only_valid_calls(store: TaskStore):
    for seed in range(12):
        env = make_env(store, FakeGrader(), seed=seed)
        env.reset()
        metrics, _ = play(env, RandomCandidateAgent(board_of(env)[0], seed))
        assert metrics.failed_edit == 0 and metrics.parse_error == 0


def test_noisy_agent_makes_mistakes_and_still_fixes(store: TaskStore):
    kinds, solved = set(), 0
    for seed in range(12):
        env = make_env(store, FakeGrader(), seed=seed, max_turns=30)
        env.reset()
        k, fix = board_of(env)
        agent = NoisyCandidateAgent(
            fix, k, seed, p_wrong_edit=0.5, p_failed_edit=0.5, p_repeated_test=0.5, p_parse_error=0.1
        )
        metrics, _ = play(env, agent)
        solved += metrics.success
        kinds |= {e.kind for e in env.events}
    assert solved == 12 and kinds == {"edit_progress", "failed_edit", "repeated_test", "parse_error"}


def test_oracle_succeeds_on_real_tasks_through_the_real_grader(fx_params):
    params = load_params(ROOT / "params.yaml")
    real = TaskStore.from_params(params, "repofix")
    fixture = TaskStore.from_params(fx_params, "repofix")
    picks = [(real, t) for t in ("bitbloom-001", "lrucache-005", "unitconv-002")] + [
        (fixture, "tinytext-001")
    ]
    with SandboxPool(fx_params.sandbox) as pool:
        for store, tid in picks:
            task = store.task(tid)
            grade_fn = functools.partial(grade_many, pool, hidden=store.hidden)
            env = RepairEnv(
                task,
                store.clean(task),
                store.buggy(task),
                CP,
                grade_fn,
                candidates=store.candidates[tid],
                seed=7,
            )
            env.reset()
            metrics, _ = play(env, CandidateOracle(board_of(env)[1]))
            assert metrics.success and not metrics.infra_error, tid
            assert env.final_grade is not None and env.final_grade.hidden_pass


def test_headroom_measures_the_agents_on_the_eval_split(fx_params):
    """Through the real grader: the oracle solves everything, systematic search exactly the
    episodes whose fix is shown among the first three (what 8 turns can test)."""
    from pappo.env.candidate_board import shuffled
    from pappo.env.headroom import headroom

    out = headroom(fx_params, CP, seed=0, episodes=3)
    store = TaskStore.from_params(fx_params, "repofix")
    eval_ids = sorted(out["agents"]["oracle"]["per_task_success"])
    assert out["eval_tasks"] == len(eval_ids) == 2 and out["k"] == 8 and out["max_turns"] == 8
    assert out["agents"]["oracle"]["success"] == 1.0
    expected = {tid: sum(shuffled(8, tid, e).index(0) < 3 for e in range(3)) / 3 for tid in eval_ids}
    assert out["agents"]["systematic"]["per_task_success"] == pytest.approx(expected)
    assert all(len(store.candidates[t].shown(8)) == 8 for t in eval_ids)
    assert all(a["infra_errors"] == 0 for a in out["agents"].values())


def test_headroom_overrides_replace_only_what_is_given_and_are_checked_again():
    from pappo.env.headroom import env_with
    from pappo.io import PappoError

    assert env_with(CP) == CP
    changed = env_with(CP, k=3, max_turns=5)
    assert (changed.candidates.k, changed.max_turns) == (3, 5)
    assert changed.model_dump(exclude={"candidates", "max_turns"}) == CP.model_dump(
        exclude={"candidates", "max_turns"}
    )
    with pytest.raises(PappoError, match="^--k 13: Input should be less than or equal to 12"):
        env_with(CP, k=13)  # model_copy alone would not check: 12 edits are stored per task
    with pytest.raises(PappoError, match="^--max-turns 0: "):  # the flag, not the params field
        env_with(CP, max_turns=0)
