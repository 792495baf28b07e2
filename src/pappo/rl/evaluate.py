"""Held-out evaluation: every eval task greedy once and `eval.samples` times at the training
temperature; per-task outcomes kept, aggregates with 95% bootstrap intervals over tasks
(rl/results.py: the models and `aggregate`, torch-free for the evidence layer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pappo.config import Params
from pappo.env.vec import VecEnv, board_seed, task_env
from pappo.policy.constrained import call_trie
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, Trajectory
from pappo.rl.collect import hash_seed
from pappo.rl.distributed import Dist
from pappo.rl.results import EvalResult, TaskOutcome, aggregate
from pappo.tasks.store import TaskStore


def evaluate(
    decoder: Qwen2Decoder,
    codec: Any,
    params: Params,
    store: TaskStore,
    eval_ids: Sequence[str],
    grade_fn: Callable[..., Any],
    seed: int,
    tag: int,
    dist: Dist | None = None,
) -> EvalResult:
    """Greedy and sampled episodes of every eval task; `tag` (e.g. the update) varies the samples.
    With several ranks each plays a contiguous shard of the tasks (episode seeds are global) and
    every rank returns the same aggregate."""
    dist = dist or Dist()
    ids = sorted(eval_ids)
    k = params.eval.samples
    mine = list(dist.shard(len(ids)))
    greedy = _play(
        decoder,
        codec,
        params,
        store,
        [ids[n] for n in mine],
        grade_fn,
        True,
        [hash_seed(seed, tag, n) for n in mine],
        [board_seed(seed, n) for n in mine],
    )
    sampled_n = [n * k + j for n in mine for j in range(k)]  # global sample index, as in one process
    sampled = (
        _play(
            decoder,
            codec,
            params,
            store,
            [ids[s // k] for s in sampled_n],
            grade_fn,
            False,
            [hash_seed(seed, tag, 10_000 + s) for s in sampled_n],
            [board_seed(seed, 10_000 + s) for s in sampled_n],
        )
        if k
        else []
    )
    local = []
    for m, n in enumerate(mine):
        g = greedy[m].metrics
        runs = [t.metrics for t in sampled[m * k : (m + 1) * k]]
        local.append(
            TaskOutcome(
                instance_id=ids[n],
                success=bool(g["success"]),
                failed_edits=int(g["failed_edit"]),
                tool_cost=float(g["tool_cost"]),
                repeated_tests=int(g["repeated_test"]),
                turns=int(g["turns"]),
                tokens=int(g["tokens"]),
                samples=k,
                sample_successes=sum(bool(x["success"]) for x in runs),
                infra_errors=int(bool(g["infra_error"])) + sum(bool(x["infra_error"]) for x in runs),
                hack_attempts=sum(bool(x.get("hack_attempt")) for x in [g, *runs]),
                plausible_wrong=sum(bool(x.get("plausible_wrong")) for x in [g, *runs]),
                edits=int(g["edits"]),
                test_runs=int(g["test_runs"]),
                sample_tokens=sum(int(x["tokens"]) for x in runs),
            )
        )
    rows = [row for part in dist.gather(local) for row in part]  # rank order = task order
    return aggregate(rows, k, params.eval.n_boot)


def _play(
    decoder: Qwen2Decoder,
    codec: Any,
    params: Params,
    store: TaskStore,
    ids: Sequence[str],
    grade_fn: Callable[..., Any],
    greedy: bool,
    seeds: Sequence[int],
    boards: Sequence[int],
) -> list[Trajectory]:
    engine = RolloutEngine(decoder, codec, params.rollout, call_trie(codec, params))
    out: list[Trajectory] = []
    bs = params.rollout.batch_size
    for at in range(0, len(ids), bs):
        envs = [task_env(store, i, params.env, b) for i, b in zip(ids[at : at + bs], boards[at : at + bs])]
        out += engine.run(VecEnv(envs, grade_fn), seed=0, greedy=greedy, episode_seeds=seeds[at : at + bs])
    return out
