"""Held-out evaluation: every eval task greedy on `eval.boards` boards (each its own candidate order)
and `eval.samples` times at the training temperature; per-task outcomes kept, aggregates with 95% bootstrap intervals over tasks
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

SAMPLED, BOARDS = (
    10_000,
    1_000_000,
)  # episode indices: sampled episodes from SAMPLED, boards b >= 1 from BOARDS * b


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
    k, n_boards = params.eval.samples, params.eval.boards
    mine = list(dist.shard(len(ids)))
    boards = [board_index(n, b, len(ids), k) for n in mine for b in range(n_boards)]
    greedy = _play(
        decoder,
        codec,
        params,
        store,
        [ids[n] for n in mine for _ in range(n_boards)],
        grade_fn,
        True,
        [hash_seed(seed, tag, x) for x in boards],
        [board_seed(seed, x) for x in boards],
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
            [hash_seed(seed, tag, SAMPLED + s) for s in sampled_n],
            [board_seed(seed, SAMPLED + s) for s in sampled_n],
        )
        if k
        else []
    )
    local = [
        _outcome(ids[n], greedy[m * n_boards : (m + 1) * n_boards], sampled[m * k : (m + 1) * k], k)
        for m, n in enumerate(mine)
    ]
    rows = [row for part in dist.gather(local) for row in part]  # rank order = task order
    return aggregate(rows, k, params.eval.n_boot)


def board_index(n: int, b: int, n_tasks: int, k: int) -> int:
    """The episode index of task `n`'s greedy board `b`: board 0 is task n's own index (so one board
    is the evaluation as it always was), later boards lie past every sampled index (SAMPLED + s)."""
    if SAMPLED + n_tasks * k > BOARDS:
        raise ValueError(f"{n_tasks} eval tasks x {k} samples overlap the boards' episode indices")
    return n if b == 0 else BOARDS * b + n


def _outcome(
    instance_id: str, greedy: Sequence[Trajectory], sampled: Sequence[Trajectory], k: int
) -> TaskOutcome:
    """One task's outcome: greedy counts summed over its boards, success and tool cost averaged."""
    gs, runs = [t.metrics for t in greedy], [t.metrics for t in sampled]

    def total(key: str) -> int:
        return sum(int(g[key]) for g in gs)

    return TaskOutcome(
        instance_id=instance_id,
        success=sum(bool(g["success"]) for g in gs) / len(gs),
        boards=len(gs),
        failed_edits=total("failed_edit"),
        tool_cost=sum(float(g["tool_cost"]) for g in gs) / len(gs),
        repeated_tests=total("repeated_test"),
        turns=total("turns"),
        tokens=total("tokens"),
        samples=k,
        sample_successes=sum(bool(x["success"]) for x in runs),
        infra_errors=sum(bool(x["infra_error"]) for x in [*gs, *runs]),
        hack_attempts=sum(bool(x.get("hack_attempt")) for x in [*gs, *runs]),
        plausible_wrong=sum(bool(x.get("plausible_wrong")) for x in [*gs, *runs]),
        edits=total("edits"),
        test_runs=total("test_runs"),
        sample_tokens=sum(int(x["tokens"]) for x in runs),
    )


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
