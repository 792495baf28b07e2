"""Held-out evaluation: every eval task greedy once and `eval.samples` times at the training
temperature; per-task outcomes kept, aggregates with 95% bootstrap intervals over tasks.

pass@1 is the mean success of the sampled episodes; pass@K the unbiased estimator of Chen et
al. 2021 with K = eval.samples (n = c = counts per task).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params
from pappo.env.vec import VecEnv, board_seed, task_env
from pappo.stats import bootstrap_ci, mean_pass_at_k
from pappo.policy.constrained import call_trie
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, Trajectory
from pappo.rl.distributed import Dist
from pappo.rl.trainer import hash_seed
from pappo.tasks.store import TaskStore


class Interval(BaseModel):
    """A mean over tasks with its 95% percentile-bootstrap interval."""

    model_config = ConfigDict(extra="forbid")
    mean: float
    lo: float
    hi: float


class TaskOutcome(BaseModel):
    """One eval task: the greedy episode, and the sampled episodes summed."""

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    success: bool = Field(description="Greedy episode solved the task.")
    failed_edits: int = Field(description="Greedy episode: str_replace calls that did not apply.")
    tool_cost: float = Field(description="Greedy episode: weighted tool calls (env.tool_cost).")
    repeated_tests: int = Field(description="Greedy episode: run_tests with no edit since the last.")
    turns: int
    tokens: int = Field(description="Greedy episode: sampled tokens.")
    samples: int = Field(description="Episodes sampled at the training temperature.")
    sample_successes: int
    infra_errors: int = Field(description="Episodes (greedy and sampled) hit by a sandbox infra error.")
    hack_attempts: int = Field(description="Episodes (greedy and sampled) with a grade rejected as a hack attempt.")
    plausible_wrong: int = Field(description="Episodes (greedy and sampled) ending on a patch that passes the "
                                 "visible tests but fails hidden checks.")  # fmt: skip
    # the rest make every aggregate recomputable from the task list (the audit re-derives them)
    edits: int = Field(description="Greedy episode: str_replace calls that applied.")
    test_runs: int = Field(description="Greedy episode: run_tests calls.")
    sample_tokens: int = Field(description="Sampled episodes: tokens, summed.")


class EvalResult(BaseModel):
    """Aggregates over the eval tasks (each with its interval) and the per-task outcomes."""

    model_config = ConfigDict(extra="forbid")
    n_tasks: int
    samples: int
    success: Interval = Field(description="Greedy success rate.")
    pass_at_1: Interval = Field(description="Mean success of the sampled episodes.")
    pass_at_k: Interval = Field(description="Unbiased pass@K, K = samples.")
    failed_edit_rate: Interval = Field(description="Greedy: share of edits that failed to apply.")
    tool_cost: Interval
    repeated_test_rate: Interval = Field(description="Greedy: share of test runs that were repeats.")
    tokens: int = Field(description="Tokens sampled by every eval episode.")
    tasks: list[TaskOutcome]


def evaluate(decoder: Qwen2Decoder, codec: Any, params: Params, store: TaskStore, eval_ids: Sequence[str],
             grade_fn: Callable[..., Any], seed: int, tag: int, dist: Dist | None = None) -> EvalResult:  # fmt: skip
    """Greedy and sampled episodes of every eval task; `tag` (e.g. the update) varies the samples.
    With several ranks each plays a contiguous shard of the tasks (episode seeds are global) and
    every rank returns the same aggregate."""
    dist = dist or Dist()
    ids = sorted(eval_ids)
    k = params.eval.samples
    mine = list(dist.shard(len(ids)))
    greedy = _play(decoder, codec, params, store, [ids[n] for n in mine], grade_fn, True,
                   [hash_seed(seed, tag, n) for n in mine], [board_seed(seed, n) for n in mine])  # fmt: skip
    sampled_n = [n * k + j for n in mine for j in range(k)]  # global sample index, as in one process
    sampled = _play(decoder, codec, params, store, [ids[s // k] for s in sampled_n], grade_fn, False,
                    [hash_seed(seed, tag, 10_000 + s) for s in sampled_n],
                    [board_seed(seed, 10_000 + s) for s in sampled_n]) if k else []  # fmt: skip
    local = []
    for m, n in enumerate(mine):
        g = greedy[m].metrics
        runs = [t.metrics for t in sampled[m * k : (m + 1) * k]]
        local.append(TaskOutcome(
            instance_id=ids[n], success=bool(g["success"]), failed_edits=int(g["failed_edit"]),
            tool_cost=float(g["tool_cost"]), repeated_tests=int(g["repeated_test"]), turns=int(g["turns"]),
            tokens=int(g["tokens"]), samples=k, sample_successes=sum(bool(x["success"]) for x in runs),
            infra_errors=int(bool(g["infra_error"])) + sum(bool(x["infra_error"]) for x in runs),
            hack_attempts=sum(bool(x.get("hack_attempt")) for x in [g, *runs]),
            plausible_wrong=sum(bool(x.get("plausible_wrong")) for x in [g, *runs]),
            edits=int(g["edits"]), test_runs=int(g["test_runs"]), sample_tokens=sum(int(x["tokens"]) for x in runs),
        ))  # fmt: skip
    rows = [row for part in dist.gather(local) for row in part]  # rank order = task order
    return aggregate(rows, k, params.eval.n_boot)


def aggregate(tasks: list[TaskOutcome], k: int, n_boot: int) -> EvalResult:
    """Interval of each metric over tasks (seeded, so reports are reproducible); a function of the
    task outcomes alone, so `pappo audit` recomputes every report's aggregates from them."""

    def ci(values: Sequence[float]) -> Interval:
        return Interval(**bootstrap_ci(values, n_boot=n_boot, seed=0).to_json())

    edits = [t.edits + t.failed_edits for t in tasks]
    tests = [t.test_runs for t in tasks]
    return EvalResult(
        n_tasks=len(tasks), samples=k,
        success=ci([float(t.success) for t in tasks]),
        pass_at_1=ci([t.sample_successes / k for t in tasks] if k else [float(t.success) for t in tasks]),
        pass_at_k=ci([mean_pass_at_k([(k, t.sample_successes)], k) for t in tasks] if k
                     else [float(t.success) for t in tasks]),
        failed_edit_rate=ci([t.failed_edits / e if e else 0.0 for t, e in zip(tasks, edits)]),
        tool_cost=ci([t.tool_cost for t in tasks]),
        repeated_test_rate=ci([t.repeated_tests / r if r else 0.0 for t, r in zip(tasks, tests)]),
        tokens=sum(t.tokens + t.sample_tokens for t in tasks), tasks=tasks,
    )  # fmt: skip


def _play(decoder: Qwen2Decoder, codec: Any, params: Params, store: TaskStore, ids: Sequence[str],
          grade_fn: Callable[..., Any], greedy: bool, seeds: Sequence[int], boards: Sequence[int]) -> list[Trajectory]:  # fmt: skip
    engine = RolloutEngine(decoder, codec, params.rollout, call_trie(codec, params))
    out: list[Trajectory] = []
    bs = params.rollout.batch_size
    for at in range(0, len(ids), bs):
        envs = [task_env(store, i, params.env, b) for i, b in zip(ids[at : at + bs], boards[at : at + bs])]
        out += engine.run(VecEnv(envs, grade_fn), seed=0, greedy=greedy, episode_seeds=seeds[at : at + bs])
    return out
