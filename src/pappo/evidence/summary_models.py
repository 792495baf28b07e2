"""The published summary's data contract: the fields of `reports/summary.json`, one model each.

Apart from summary.py, which computes them, so that the markdown, the plots, the JSON Schema export
and the release read the summary's shape without the code that derives its numbers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pappo.evidence.costs import MethodCost
from pappo.evidence.labels import TASK_METRICS
from pappo.evidence.mismatch_table import MethodGap
from pappo.evidence.power import Power
from pappo.evidence.variance import VarianceSplit
from pappo.rl.results import Interval


class MethodSeedRow(BaseModel):
    """One run's final held-out metrics, exactly as its report's `final_eval` gives them."""

    model_config = ConfigDict(extra="forbid")
    method: str
    seed: int
    n_tasks: int = Field(description="Eval tasks of the seed's split.")
    success: Interval = Field(description="Greedy success rate (run's final_eval).")
    pass_at_k: Interval = Field(description="Unbiased pass@K over the sampled episodes (run's final_eval).")
    failed_edit_rate: Interval = Field(
        description="Run's definition: share of greedy edits that failed to apply."
    )
    tool_cost: Interval = Field(description="Greedy weighted tool calls per task (run's final_eval).")
    repeated_test_rate: Interval = Field(
        description="Run's definition: share of greedy test runs that were repeats."
    )


class MethodSummary(BaseModel):
    """A method over seeds: mean of per-seed task means, with its 95% t interval over seeds
    (`over_seeds`) and the stratified bootstrap over tasks within fixed seeds (the metric fields:
    evaluation noise only)."""

    model_config = ConfigDict(extra="forbid")
    method: str
    n_seeds: int
    success: Interval = Field(description="Per task: 1 if the greedy episode solved it, else 0.")
    pass_at_k: Interval = Field(
        description="Per task: unbiased pass@K of its K samples (K = 0: greedy success)."
    )
    failed_edit_rate: Interval = Field(
        description="Per task: greedy failed str_replace calls / max(1, greedy turns) (TaskOutcome has no "
        "edit total, so this is per turn, not the run's share of edits)."
    )
    tool_cost: Interval = Field(description="Per task: greedy weighted tool calls.")
    repeated_test_rate: Interval = Field(
        description="Per task: greedy repeated run_tests calls / max(1, greedy turns) (per turn, not the run's "
        "share of test runs)."
    )
    per_seed: list[MethodSeedRow] = Field(description="The runs' own final_eval rows, by seed.")
    over_seeds: dict[str, Interval] = Field(
        default_factory=dict,
        description="Metric -> mean over seeds of per-seed task means, 95% t interval over seeds "
        "(seeds - 1 degrees of freedom: the seed is what was randomised); empty with one seed.",
    )
    hack_attempt_rate: Interval | None = Field(
        None, description="Per task: share of its episodes (greedy and sampled) with a hack attempt."
    )
    plausible_wrong_rate: Interval | None = Field(
        None,
        description="Per task: share of its episodes (greedy and sampled) that ended on a patch passing "
        "the visible tests but failing hidden checks (docs/sandbox.md).",
    )


class Comparison(BaseModel):
    """A method against the baseline on paired eval tasks, the seed as the unit."""

    model_config = ConfigDict(extra="forbid")
    method: str
    baseline: str
    metric: Literal["success"] = "success"
    difference: Interval | None = Field(
        description="Mean over seeds of the per-seed mean difference method - baseline, 95% t interval with "
        "n_seeds - 1 degrees of freedom (the seed is the unit); None with one seed (no interval exists)."
    )
    per_seed_difference: list[float] = Field(
        description="Mean per-task difference of each seed, in seed order."
    )
    seed_wins: int = Field(
        description="Seeds where the method's mean beats the baseline's by more than a rounding residue (`stats.wins`)."
    )
    n_seeds: int
    seed_bootstrap: Interval | None = Field(
        None,
        description="Whole-seed percentile bootstrap of the per-seed differences (seeds resampled; "
        "coarse with few seeds).",
    )
    within_seed_noise: Interval | None = Field(
        None,
        description="Evaluation noise within a seed, not evidence about the method: tasks resampled "
        "within fixed seeds.",
    )
    power: Power | None = Field(None, description="MDE at 80% power and seeds needed, from the per-seed SD.")
    variance: VarianceSplit | None = Field(
        None, description="The per-seed differences' variance, between seeds and within (evaluation)."
    )
    note: str = Field("", description="t interval, its degrees of freedom, or why there is none.")


class ClaimPower(BaseModel):
    """A pre-registered claim's seed-level numbers and power (the verdict is the audit's)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    method: str
    baseline: str = Field(description="best_non_ppo resolved.")
    metric: str
    min_delta: float
    difference: Interval | None = Field(
        description="Improvement (positive: the method is better), mean over "
        "seeds, 95% t interval; None with one seed."
    )
    per_seed: list[float] = Field(description="Each seed's mean paired improvement, in seed order.")
    power: Power
    variance: VarianceSplit | None = Field(
        None, description="The per-seed differences' variance, between seeds and within (evaluation)."
    )


class BudgetRow(BaseModel):
    """The training rollout budget of one run and what it used."""

    model_config = ConfigDict(extra="forbid")
    seed: int
    method: str
    episodes_limit: int = Field(description="Training episodes allowed (0 for base).")
    episodes_used: int
    generated_tokens_limit: int = Field(description="Generated training tokens allowed.")
    generated_tokens_used: int


class Summary(BaseModel):
    """`reports/summary.json`: the evidence over every seed and method of the matrix."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    profile: Literal["tiny", "hub"] = Field(
        description="Model profile of every run (tiny: CPU pipeline check)."
    )
    device: str = Field(description="Device of the runs; several are joined by ', '.")
    seeds: list[int]
    methods: list[str]
    n_eval_tasks: dict[int, int] = Field(description="Eval tasks per seed.")
    eval_samples: int = Field(description="K: sampled episodes per eval task (pass@K).")
    n_boot: int = Field(description="Bootstrap replicates of every interval (95%, percentile, seed 0).")
    task_metrics: str = Field(TASK_METRICS, description="Per-task metric definitions behind the intervals.")
    summaries: list[MethodSummary] = Field(description="One per method, in `methods` order.")
    best_baseline: str | None = Field(
        description="Highest mean success over seeds among base, rft, grpo; ties go to the first of grpo, rft, "
        "base. None when none of them ran."
    )
    comparisons: list[Comparison] = Field(description="pappo and ppo against best_baseline (those that ran).")
    claims: list[ClaimPower] = Field(default_factory=list, description="params.yaml's claims, seed level.")
    budget: list[BudgetRow] = Field(description="Every run, by seed then method.")
    costs: list[MethodCost] = Field(
        default_factory=list, description="Per method: seconds, memory, tokens and the success spread."
    )
    mismatch: list[MethodGap] = Field(
        default_factory=list, description="Per method: the sampler/trainer log-prob gap over updates."
    )
    plots: list[str] = Field(
        default_factory=list, description="Plot files, relative to the markdown's folder."
    )
    sources: dict[str, str] = Field(
        description="Report path relative to the runs folder -> sha256 of the file."
    )
