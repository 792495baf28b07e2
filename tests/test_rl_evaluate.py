"""Held-out evaluation on several boards per task: episode indices, and a task's outcome over its boards."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pappo.config.rl import EvalParams
from pappo.rl.evaluate import BOARDS, SAMPLED, _outcome, board_index
from pappo.rl.results import TaskOutcome, aggregate


def episode(success: bool, tokens: int = 10, tool_cost: float = 1.0, **extra: int) -> SimpleNamespace:
    metrics = dict(
        success=success,
        failed_edit=extra.get("failed_edit", 0),
        tool_cost=tool_cost,
        repeated_test=extra.get("repeated_test", 0),
        turns=extra.get("turns", 3),
        tokens=tokens,
        infra_error=False,
        edits=extra.get("edits", 1),
        test_runs=extra.get("test_runs", 1),
    )
    return SimpleNamespace(metrics=metrics)


def test_board_zero_is_the_task_itself_and_every_index_is_distinct():
    n_tasks, k, n_boards = 30, 4, 5
    greedy = [board_index(n, b, n_tasks, k) for n in range(n_tasks) for b in range(n_boards)]
    sampled = [SAMPLED + s for s in range(n_tasks * k)]
    assert [board_index(n, 0, n_tasks, k) for n in range(n_tasks)] == list(range(n_tasks))  # as before boards
    assert len(set(greedy) | set(sampled)) == len(greedy) + len(sampled)
    with pytest.raises(ValueError, match="overlap the boards"):
        board_index(0, 1, BOARDS, 1)


def test_a_task_outcome_averages_success_over_its_boards_and_sums_the_counts():
    boards = [
        episode(True, tokens=10, tool_cost=2.0, failed_edit=1, edits=2),
        episode(False, tokens=20, tool_cost=4.0),
        episode(True, tokens=30, tool_cost=3.0),
        episode(False, tokens=40, tool_cost=3.0, repeated_test=2, test_runs=3),
    ]
    sampled = [episode(True, tokens=5), episode(False, tokens=7)]
    out = _outcome("t-001", boards, sampled, 2)
    assert (out.success, out.boards, out.tool_cost) == (0.5, 4, 3.0)
    assert (out.tokens, out.failed_edits, out.edits, out.repeated_tests, out.test_runs) == (100, 1, 5, 2, 6)
    assert (out.sample_successes, out.sample_tokens, out.samples) == (1, 12, 2)
    one = _outcome("t-001", boards[:1], sampled, 2)
    assert (one.success, one.boards, one.tokens) == (1.0, 1, 10)  # one board: as it always was


def test_more_boards_shrink_the_evaluation_noise_of_the_success_rate():
    """Tasks whose boards are solved half the time: with one board a task scores 0 or 1, with 8
    boards its share; the bootstrap interval over the same tasks narrows."""

    def tasks(n_boards: int) -> list[TaskOutcome]:
        return [
            _outcome(f"t-{i}", [episode((i + b) % 2 == 0) for b in range(n_boards)], [], 0) for i in range(20)
        ]

    one, eight = aggregate(tasks(1), 0, 500).success, aggregate(tasks(8), 0, 500).success
    assert one.mean == eight.mean == 0.5
    assert (eight.hi - eight.lo) < (one.hi - one.lo) / 4


def test_older_reports_with_a_boolean_success_still_read():
    raw = dict(
        instance_id="t",
        success=True,
        failed_edits=0,
        tool_cost=1.0,
        repeated_tests=0,
        turns=2,
        tokens=3,
        samples=0,
        sample_successes=0,
        infra_errors=0,
        hack_attempts=0,
        plausible_wrong=0,
        edits=1,
        test_runs=1,
        sample_tokens=0,
    )
    t = TaskOutcome.model_validate(raw)
    assert (t.success, t.boards) == (1.0, 1)
    with pytest.raises(ValueError):
        TaskOutcome.model_validate({**raw, "success": 1.5})
    assert EvalParams().boards == 1


def test_intermediate_evaluations_can_be_greedy_and_the_last_is_always_full(fx_params):
    from pappo.rl.results import at_point

    full = fx_params.model_copy(
        update={"eval": fx_params.eval.model_copy(update={"boards": 4, "samples": 2, "intermediate": "full"})}
    )
    greedy = full.model_copy(update={"eval": full.eval.model_copy(update={"intermediate": "greedy"})})
    assert at_point(full, final=False) is full and at_point(greedy, final=True) is greedy
    mid = at_point(greedy, final=False)
    assert (mid.eval.boards, mid.eval.samples) == (1, 0) and mid.rl == greedy.rl  # nothing else changes
    assert EvalParams().intermediate == "full"  # the default evaluates every point as before
