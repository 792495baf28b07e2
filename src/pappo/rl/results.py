"""Evaluation results: the per-task outcomes of a held-out evaluation, their aggregates, and the
evaluation settings at each point of a run (`at_point`: the last evaluation's, or eval.intermediate's).

No torch: run reports embed these models, and the summary and `pappo audit` read and recompute
them without loading the policy (rl/evaluate.py plays the episodes).

pass@1 is the mean success of the sampled episodes; pass@K the unbiased estimator of Chen et
al. 2021 with K = eval.samples (n = c = counts per task).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params
from pappo.stats import bootstrap_ci, mean_pass_at_k


class Interval(BaseModel):
    """A mean over tasks with its 95% percentile-bootstrap interval."""

    model_config = ConfigDict(extra="forbid")
    mean: float
    lo: float
    hi: float


class TaskOutcome(BaseModel):
    """One eval task: its greedy episodes (one per board) and its sampled episodes, summed; the
    greedy counts are summed over the boards, the greedy success and tool cost averaged."""

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    success: float = Field(
        ge=0,
        le=1,
        description="Share of the greedy boards solved (one board: 0 or 1; older reports: a bool).",
    )
    boards: int = Field(1, ge=1, description="Greedy episodes, each on its own board (eval.boards).")
    failed_edits: int = Field(description="Greedy episodes: str_replace calls that did not apply.")
    tool_cost: float = Field(description="Greedy episodes: weighted tool calls (env.tool_cost), mean.")
    repeated_tests: int = Field(description="Greedy episodes: run_tests with no edit since the last.")
    turns: int
    tokens: int = Field(description="Greedy episodes: sampled tokens.")
    samples: int = Field(description="Episodes sampled at the training temperature.")
    sample_successes: int
    infra_errors: int = Field(description="Episodes (greedy and sampled) hit by a sandbox infra error.")
    hack_attempts: int = Field(
        description="Episodes (greedy and sampled) with a grade rejected as a hack attempt."
    )
    plausible_wrong: int = Field(
        description="Episodes (greedy and sampled) ending on a patch that passes the "
        "visible tests but fails hidden checks."
    )
    # the rest make every aggregate recomputable from the task list (the audit re-derives them)
    edits: int = Field(description="Greedy episodes: str_replace calls that applied.")
    test_runs: int = Field(description="Greedy episodes: run_tests calls.")
    sample_tokens: int = Field(description="Sampled episodes: tokens, summed.")


class EvalResult(BaseModel):
    """Aggregates over the eval tasks (each with its interval) and the per-task outcomes."""

    model_config = ConfigDict(extra="forbid")
    n_tasks: int
    samples: int
    success: Interval = Field(description="Greedy success rate (per task: the share of its boards solved).")
    pass_at_1: Interval = Field(description="Mean success of the sampled episodes.")
    pass_at_k: Interval = Field(description="Unbiased pass@K, K = samples.")
    failed_edit_rate: Interval = Field(description="Greedy: share of edits that failed to apply.")
    tool_cost: Interval
    repeated_test_rate: Interval = Field(description="Greedy: share of test runs that were repeats.")
    tokens: int = Field(description="Tokens sampled by every eval episode.")
    tasks: list[TaskOutcome]


def aggregate(tasks: list[TaskOutcome], k: int, n_boot: int) -> EvalResult:
    """Interval of each metric over tasks (seeded, so reports are reproducible); a function of the
    task outcomes alone, so `pappo audit` recomputes every report's aggregates from them."""

    def ci(values: Sequence[float]) -> Interval:
        return Interval(**bootstrap_ci(values, n_boot=n_boot, seed=0).to_json())

    edits = [t.edits + t.failed_edits for t in tasks]
    tests = [t.test_runs for t in tasks]
    return EvalResult(
        n_tasks=len(tasks),
        samples=k,
        success=ci([float(t.success) for t in tasks]),
        pass_at_1=ci([t.sample_successes / k for t in tasks] if k else [float(t.success) for t in tasks]),
        pass_at_k=ci(
            [mean_pass_at_k([(k, t.sample_successes)], k) for t in tasks]
            if k
            else [float(t.success) for t in tasks]
        ),
        failed_edit_rate=ci([t.failed_edits / e if e else 0.0 for t, e in zip(tasks, edits)]),
        tool_cost=ci([t.tool_cost for t in tasks]),
        repeated_test_rate=ci([t.repeated_tests / r if r else 0.0 for t, r in zip(tasks, tests)]),
        tokens=sum(t.tokens + t.sample_tokens for t in tasks),
        tasks=tasks,
    )


def at_point(params: Params, final: bool) -> Params:
    """The params an evaluation runs with: as configured at the last update (and always with
    `eval.intermediate: full`); one greedy board and no samples before it with `greedy`."""
    if final or params.eval.intermediate == "full":
        return params
    return params.model_copy(update={"eval": params.eval.model_copy(update={"boards": 1, "samples": 0})})
