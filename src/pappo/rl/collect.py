"""Rollout collection for one update: the task draw, the episodes, the batch and the rollout stats.

Update u draws `tasks_per_update` train tasks from (seed, u), the same for every method of a
seed (matched budget), and plays `group_size` episodes of each with the current policy (batched
rollouts, real sandbox). Data parallel (`distributed.py`): each rank plays a contiguous shard of
the tasks (whole groups, so GRPO's group statistics stay on one rank) and numbers its episodes by
GLOBAL index. Infra-error episodes are counted and dropped before the batch is built.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from pappo.config import Params
from pappo.env.vec import VecEnv, task_env
from pappo.io import PappoError
from pappo.policy.adapters import POLICY
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, Trajectory
from pappo.rl.batch import RolloutBatch, from_trajectories
from pappo.rl.learner import Learner
from pappo.tasks.splits import read_split
from pappo.tasks.store import TaskStore


def hash_seed(seed: int, update: int, index: int) -> int:
    """A 31-bit seed from (run seed, update, index), stable across processes (no hash())."""
    return random.Random(f"{seed}/{update}/{index}").getrandbits(31)


def task_draw(params: Params, seed: int, u: int, train_ids: Sequence[str] | None = None) -> list[str]:
    """The train tasks of update `u`: the same for every method of a seed (matched budget)."""
    if train_ids is None:
        train_ids = read_split(params, seed)[1]  # the lock's split, as the run uses
    pool = sorted(train_ids)
    return random.Random(f"{seed}:{u}").sample(pool, min(params.rl.tasks_per_update, len(pool)))


def rollouts(
    learner: Learner, store: TaskStore, train_ids: Sequence[str], grade_fn: Callable[..., Any], u: int
) -> tuple[list[Trajectory], list[int], list[int]]:
    """`group_size` episodes of each of this rank's share of update `u`'s train tasks (`task_draw`
    from sorted `train_ids`); returns the trajectories, their group (task) and global episode index."""
    params, seed = learner.params, learner.seed
    ids = task_draw(params, seed, u, train_ids)
    k = params.rl.group_size
    mine = learner.dist.shard(len(ids))  # whole groups: GRPO statistics stay on one rank
    groups = [g for g in mine for _ in range(k)]
    index = [g * k + j for g in mine for j in range(k)]
    envs = [task_env(store, ids[g], params.env, hash_seed(seed, u, i)) for g, i in zip(groups, index)]
    with learner.ac.adapter(POLICY):
        decoder = Qwen2Decoder(
            learner.ac.peft, params.model.logits_fp32, not params.rollout.enforce_eager
        )  # the policy's snapshot
    engine = RolloutEngine(decoder, learner.codec, params.rollout, learner.trie)
    trajs: list[Trajectory] = []
    bs = params.rollout.batch_size
    for at in range(0, len(envs), bs):
        seeds = [hash_seed(seed, u, i) for i in index[at : at + bs]]
        trajs += engine.run(VecEnv(envs[at : at + bs], grade_fn), seed=0, episode_seeds=seeds)
    return trajs, groups, index


def to_batch(
    learner: Learner, trajs: list[Trajectory], groups: list[int], index: list[int], u: int
) -> tuple[RolloutBatch, dict[str, float]]:
    """The batch of update `u`'s episodes without an infra error, on the learner's device, and the
    update's `rollout` record (`rollout_stats` over every rank's episodes, `infra_dropped`)."""
    dist = learner.dist
    summaries = [s for part in dist.gather([episode_summary(t) for t in trajs]) for s in part]
    stats = rollout_stats(summaries)
    kept = [i for i, t in enumerate(trajs) if not t.metrics.get("infra_error")]
    stats["infra_dropped"] = sum(bool(s["infra_error"]) for s in summaries)
    if dist.sum(0 if kept else 1):
        raise PappoError(
            f"update {u}: every episode of a rank hit a sandbox infra error; check `pappo run-tests`"
        )
    batch = from_trajectories(
        [trajs[i] for i in kept],
        [groups[i] for i in kept],
        learner.codec.pad_id,
        [index[i] for i in kept],
        learner.choices,
    ).to(dist.device)
    return batch, stats


def episode_summary(t: Trajectory) -> dict[str, Any]:
    """What `rollout_stats` needs of one episode (small: gathered from every rank)."""
    keys = ("success", "tokens", "turns", "failed_edit", "parse_error", "infra_error")
    return {
        **{k: t.metrics.get(k, 0) for k in keys},
        "process_reward": sum(t.turn_rewards) - t.terminal_reward,
    }


def rollout_stats(episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Means over the episodes of an update (`episode_summary` of each; infra errors included)."""
    n = max(1, len(episodes))
    return {
        "episodes": len(episodes),
        "success": sum(bool(x["success"]) for x in episodes) / n,
        "tokens": sum(int(x["tokens"]) for x in episodes),
        "turns": sum(int(x["turns"]) for x in episodes) / n,
        "failed_edit": sum(int(x["failed_edit"]) for x in episodes) / n,
        "parse_error": sum(int(x["parse_error"]) for x in episodes) / n,
        "process_reward": sum(x["process_reward"] for x in episodes) / n,
    }
