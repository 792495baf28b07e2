"""One process of the data-parallel checks in test_rl_distributed.py (not a test module).

    python tests/ddp_worker.py --mode batch --out DIR                  # the single-process reference
    accelerate launch --multi_gpu --num_processes 2 ... tests/ddp_worker.py --mode batch --out DIR

`batch`: every method's freeze + optimisation on one synthetic batch of 4 groups x 2 episodes,
each rank taking its shard of the groups. `update`: one whole trainer update (sharded rollouts
through the fixture tasks, a grader that depends on the task only). Each rank writes
DIR/rank<r>.json: its rows, the per-step statistics and the final adapter weights.
With PAPPO_TEST_NO_SYNC set, gradients are not summed across ranks (a control the test must catch).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import zlib
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import fixture_params
from pappo.policy.rollout import Trajectory
from pappo.rl.batch import from_trajectories
from pappo.rl.distributed import Dist
from pappo.rl.trainer import Trainer
from pappo.rl.update import optimise
from pappo.sandbox.grading import Grade
from pappo.tasks.store import TaskStore
from test_policy_rollout import ByteCodec
from test_rl_trainer import actor_critic, small_params

GROUPS, K = 4, 2
RENAME = {"critic_warmup": "warmup", "epochs_used": "epochs"}  # update.optimise's keys -> the rank JSON's


def synthetic(seed: int = 0) -> list[Trajectory]:
    """GROUPS x K episodes of 1-3 turns with random tokens, process rewards and outcomes."""
    g = torch.Generator().manual_seed(seed)

    def ints(lo: int, hi: int, n: int = 1) -> list[int]:
        return torch.randint(lo, hi, (n,), generator=g).tolist()

    out = []
    for e in range(GROUPS * K):
        t = Trajectory(f"t{e // K}", [], [], [], [], prompt_len=0)
        t.append(ints(8, 264, ints(5, 12)[0]), policy=False)
        t.prompt_len = len(t.token_ids)
        n_turns = ints(1, 4)[0]
        for turn in range(n_turns):
            start = len(t.token_ids)
            t.append(ints(8, 264, ints(2, 7)[0]), policy=True, logprobs=None)
            t.turn_spans.append((start, len(t.token_ids)))
            if turn < n_turns - 1:
                t.append(ints(8, 264, ints(1, 5)[0]), policy=False)
        t.terminal_reward = float(ints(0, 2)[0])
        t.turn_rewards = [(-0.05, 0.0, 0.2)[ints(0, 3)[0]] for _ in range(n_turns)]
        t.turn_rewards[-1] += t.terminal_reward
        out.append(t)
    return out


def task_grader(items):
    """Passes a task iff its id hashes even: the same on every rank, whatever the call order."""
    grades = []
    for task, _, _ in items:
        ok = zlib.crc32(task.instance_id.encode()) % 2 == 0
        tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
        outcomes = {t: "passed" if ok or i else "failed" for i, t in enumerate(tests)}
        grades.append(
            Grade(task.instance_id, ok, outcomes, 0 if ok else 1, False, [], None, [], None, 0.0, "fake")
        )
    return grades


def weights(params: list[torch.nn.Parameter]) -> list[float]:
    return torch.cat([p.detach().reshape(-1) for p in params]).tolist()


def run_batch(dist: Dist, work: Path) -> dict:
    params = small_params(
        fixture_params(work),
        ppo_epochs=2,
        minibatches=2,
        micro_batch_size=2,
        actor_lr=0.05,
        critic_lr=0.05,
        tasks_per_update=GROUPS,
        group_size=K,
        critic_warmup_steps=1,
    )
    trajs = synthetic()
    mine = [i for i in range(len(trajs)) if i // K in dist.shard(GROUPS)]
    result: dict = {"rows": mine}
    for method in ("rft", "grpo", "ppo", "pappo"):
        ac = actor_critic(0)
        t = Trainer(method, params, ac, ByteCodec(), None, [], None, work / method, 0, dist)
        batch = from_trajectories([trajs[i] for i in mine], [i // K for i in mine], 0, mine)
        # warm-up (ppo, pappo), freeze and steps, as Trainer.update does them
        rec: dict = {RENAME.get(k, k): v for k, v in optimise(t.learner, batch, 0).items()}
        rec["policy"], rec["critic"] = weights(ac.policy_parameters()), weights(ac.critic_parameters())
        result[method] = rec
    return result


def run_update(dist: Dist, work: Path) -> dict:
    params = small_params(
        fixture_params(work),
        ppo_epochs=2,
        minibatches=2,
        actor_lr=0.05,
        critic_lr=0.05,
        tasks_per_update=GROUPS,
        group_size=K,
    )
    store = TaskStore.from_params(params, "repofix")
    ac = actor_critic(0)
    t = Trainer(
        "ppo", params, ac, ByteCodec(), store, sorted(store.tasks), task_grader, work / "ppo", 0, dist
    )
    record = t.update(0)
    record.pop("wall_s")
    return {
        "record": record,
        "policy": weights(ac.policy_parameters()),
        "critic": weights(ac.critic_parameters()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["batch", "update"], required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if os.environ.get("PAPPO_TEST_NO_SYNC"):  # the control: a trainer that forgets the all-reduce
        Dist.sync_grads = lambda self, params: None
    dist = Dist.from_env("cpu")
    with tempfile.TemporaryDirectory(prefix=f"pappo-ddp-{dist.rank}-") as tmp:
        result = (run_batch if args.mode == "batch" else run_update)(dist, Path(tmp))
    result["world_size"] = dist.world_size
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rank{dist.rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
