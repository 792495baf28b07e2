"""The run report (`reports/runs/seed_<s>/<method>/report.json`): one training or baseline run.

Timing fields (`timing.*` and `updates[*].wall_s`) are the only ones that differ between two
runs of the same stage on CPU; everything else is reproduced byte for byte.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pappo.config import Params
from pappo.policy.checkpoint import CheckpointRecord
from pappo.rl.results import EvalResult

RunMethod = Literal["base", "rft", "grpo", "ppo", "pappo"]
RUN_METHODS: tuple[str, ...] = ("base", "rft", "grpo", "ppo", "pappo")
PARAM_SECTIONS = ("model", "lora", "rollout", "env", "rl", "eval", "sandbox", "numerics")


def run_stage(seed: int, method: str) -> str:
    """The dvc.yaml stage that makes run (seed, method): `train@<seed>`, every method on the seed
    (`pappo train-seed`). Locks before 2026-12-07 name `train@<seed>-<method>` and `base_run@<seed>`
    (evidence/history.py reads both)."""
    return f"train@{seed}"


def params_subset(params: Params, method: str) -> dict[str, Any]:
    """The params sections a run of `method` reads (its report's `params`): the untrained `base`
    runs read no `rl`, so their reports do not change with a hyperparameter try."""
    dumped = params.model_dump(mode="json", by_alias=True)
    return {k: dumped[k] for k in PARAM_SECTIONS if not (method == "base" and k == "rl")}


TIMING_FIELDS = ("timing", "updates[*].wall_s")


class Budget(BaseModel):
    """The training rollout budget every method of a seed gets, and what this run used."""

    model_config = ConfigDict(extra="forbid")
    episodes_limit: int = Field(description="updates x tasks_per_update x group_size (0 for base).")
    generated_tokens_limit: int = Field(
        description="episodes_limit x the most tokens one episode may sample."
    )
    episodes_used: int
    generated_tokens_used: int
    task_draws_sha256: str = Field(
        description="Hash of the train tasks drawn per update (same for every method of a seed)."
    )
    eval_episodes: int = Field(description="Evaluation episodes (not part of the training budget).")
    eval_tokens: int

    @model_validator(mode="after")
    def _within(self) -> Budget:
        if (
            self.episodes_used > self.episodes_limit
            or self.generated_tokens_used > self.generated_tokens_limit
        ):
            raise ValueError(
                f"budget exceeded: {self.episodes_used}/{self.episodes_limit} episodes, "
                f"{self.generated_tokens_used}/{self.generated_tokens_limit} generated tokens"
            )
        return self


class UpdateEval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    update: int = Field(description="Updates done before this evaluation (0: the starting policy).")
    result: EvalResult


class Timing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    started: str = Field(description="UTC, ISO 8601.")
    ended: str
    wall_s: float
    cpu_s: float | None = Field(
        None,
        description="CPU seconds of the run's process tree (the model's process, the sandbox workers "
        "and their test processes; experiment/usage.py). None in reports of older versions.",
    )
    peak_rss_mib: float | None = Field(
        None, description="Peak resident memory of the run's own process, MiB (None in older reports)."
    )


class RunReport(BaseModel):
    """One run of one method on one seed, validated before it is written."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    method: RunMethod
    seed: int
    profile: Literal["tiny", "hub"]
    device: str = Field(description="cpu or cuda; CPU runs are labelled as such.")
    params: dict[str, Any] = Field(description="The params sections this run depends on.")
    params_sha256: str = Field(description="sha256 of the canonical JSON of `params`.")
    source_sha256: str = Field(description="Hash of the src/pappo tree that ran.")
    manifest_lock_sha256: str
    train_tasks: int
    eval_instance_ids: list[str]
    checkpoint: CheckpointRecord
    budget: Budget
    updates: list[dict[str, Any]] = Field(
        description="Per update: rollout means, freeze stats, every minibatch step's diagnostics. `freeze` holds the "
        "sampler/trainer mismatch (rl/mismatch.py): rollout/logprob_gap_mean, _p99, _max and _frac_large (share of "
        "tokens with |old_log_prob - sampler_log_prob| > 0.1), and with rl.rollout_is_level set "
        "rollout/rollout_is_mean, _fraction_high and _fraction_low (share of tokens or sequences cut)."
    )
    evals: list[UpdateEval] = Field(description="Held-out evaluation after every update (or only the last).")
    final_eval: EvalResult
    adapters_sha256: dict[str, str] = Field(
        description="sha256 of each file of the final adapters (base: untrained)."
    )
    timing: Timing


def budget_limits(params: Any, method: str) -> tuple[int, int]:
    """(episodes, generated tokens) a run of `method` may use: one budget for every trained method."""
    rl, rp = params.rl, params.rollout
    episodes = 0 if method == "base" else rl.updates * rl.tasks_per_update * rl.group_size
    per_episode = min(params.env.max_turns * rp.max_new_tokens_per_turn, rp.max_tokens_per_episode)
    return episodes, episodes * per_episode


def budget_used(updates: list[dict[str, Any]], evals: list[UpdateEval]) -> dict[str, int]:
    """What a run used, from its per-update records and evaluations (the audit recomputes it)."""
    return {
        "episodes_used": sum(int(h["rollout"]["episodes"]) for h in updates),
        "generated_tokens_used": sum(int(h["rollout"]["tokens"]) for h in updates),
        "eval_episodes": sum(t.boards + t.samples for e in evals for t in e.result.tasks),
        "eval_tokens": sum(e.result.tokens for e in evals),
    }


HEADLINE = (
    "success",
    "pass_at_k",
    "failed_edit_rate",
    "tool_cost",
    "repeated_test_rate",
)  # what dvc exp show compares


def flat_metrics(report: RunReport) -> dict[str, float]:
    """The numbers `dvc metrics show` / `dvc exp show` display for a run."""
    e = report.final_eval
    out: dict[str, float] = {}
    for name in ("success", "pass_at_1", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate"):
        interval = getattr(e, name)
        out[name], out[f"{name}_lo"], out[f"{name}_hi"] = interval.mean, interval.lo, interval.hi
    out["episodes_used"] = report.budget.episodes_used
    out["generated_tokens_used"] = report.budget.generated_tokens_used
    return out
