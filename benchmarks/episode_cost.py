"""CPU and wall seconds per training episode (rollout / critic warm-up / freeze / optimise) and per
held-out evaluation episode, on the default tier.

    python benchmarks/episode_cost.py [--methods ppo grpo] [--updates 2] [--eval-tasks 30]
        [--checkpoint models/base] [--params params.yaml] [--seed 0] [--json OUT]
    python benchmarks/episode_cost.py --random-weights --stand-in-grader --smallest --methods ppo

Runs the real `Trainer` (one run per method from the same base, the seed's split) for `--updates`
updates, then one `evaluate` of the last policy on `--eval-tasks` held-out tasks (greedy once and
`eval.samples` sampled episodes per task, as a run's evaluation), graded as a run grades
(`run.run_grader`, one per method; the evaluation uses the last method's). CPU seconds are this process's
user + system time plus that of every live descendant (the sandbox's fork-server workers and the
test runs they reaped), read from /proc around each phase (pappo.experiment.usage.tree_cpu_s); a descendant that exits between two
reads is missed, so CPU seconds are a lower bound when the sandbox grades. Per training episode:
a phase's seconds summed over the updates, over the episodes those updates played; the critic
warm-up (update 0 of ppo and pappo, `rl.critic_warmup_steps` critic steps) is its own row, as a
run pays it once whatever its length.

`--random-weights` builds the tiny profile from params with a fresh tokenizer (no `dvc repro`
outputs needed); `--stand-in-grader` grades without the sandbox (every tree fails one test);
`--smallest` cuts sizes (1 update of 2 tasks x 2 episodes, one step, 2 eval tasks, 2 turns, short
turns, a one-layer model with --random-weights), not the code path. Without the manifest lock the split is the task store's ids, the first half train.
`--levers off` runs the trainer forwards row by row, the critic on its own adapter
(`rl.critic_trunk: adapter`) and grades every tree in the sandbox (as before `ActorCritic._hidden`
shared prefixes, the policy-trunk critic and `run.run_grader`'s cache and grade table). The
rollout engine's levers (a forced token without a forward, prompt runs, split feeds) have no
switch: the full baseline is the code before them, `PYTHONPATH=<worktree of 8ef13cf>/src python
benchmarks/episode_cost.py --levers off`.
CPU seconds at more than one thread on a machine whose cores are busy include OpenMP's spin-waits
(`benchmarks/omp_wait.py`); `--threads 1` measures the work alone.
Measured 2026-12-05 (defaults, quiet 2 cores, 3 repeats; docs/receipts/episode-cost-2026-12-05/):
8ef13cf with --levers off -> 4622bbd: ppo 2.43 -> 0.58 CPU s per training episode (4.2x), grpo
0.76 -> 0.60 (1.26x: its optimiser steps are untouched), evaluation 0.249 -> 0.081 (3.1x).
The last line is `per episode cpu_s: train X.XXX eval X.XXX`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from pappo.config import Params, load_params
from pappo.env.protocol import tools_for
from pappo.env.vec import GradeCache
from pappo.experiment.run import run_grader
from pappo.experiment.usage import tree_cpu_s
from pappo.numerics import pin
from pappo.policy import adapters
from pappo.policy.adapters import POLICY, ActorCritic
from pappo.policy.chat import ChatCodec
from pappo.policy.decoder import Qwen2Decoder
from pappo.rl.evaluate import evaluate
from pappo.rl.learner import CRITIC_METHODS, METHODS
from pappo.rl.trainer import Trainer
from pappo.tasks.splits import read_split
from pappo.tasks.store import TaskStore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import fresh_tokenizer, stand_in_grades

_TOKENIZER: list[Any] = []
PHASES = ("rollout", "critic_warmup", "freeze", "optimise")


class Meter:
    """CPU and wall seconds per named phase, summed over calls."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            c0, w0 = tree_cpu_s(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[name] = self.cpu.get(name, 0.0) + tree_cpu_s() - c0
                self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - w0

        return timed


@contextmanager
def instrument(trainer: Trainer, meter: Meter) -> Iterator[None]:
    """Time the phases of `trainer`'s updates: its `rollouts` method (on the instance) and, while
    inside, the module functions the update calls (`update.critic_warmup`, `update.freeze`,
    `trainer.optimise`), restored on exit. The warm-up's own value pass is warm-up, and optimise
    is what `optimise` spends beyond the warm-up and the freeze it calls."""
    from pappo.rl import trainer as trainer_mod
    from pappo.rl import update as update_mod

    saved = update_mod.critic_warmup, update_mod.freeze, trainer_mod.optimise
    warmup, plain_freeze = meter.wrap("critic_warmup", saved[0]), saved[1]
    timed_freeze, learn = meter.wrap("freeze", plain_freeze), meter.wrap("learn", saved[2])
    in_warmup = [False]

    def warmup_call(*args: Any, **kwargs: Any) -> Any:
        in_warmup[0] = True
        try:
            return warmup(*args, **kwargs)
        finally:
            in_warmup[0] = False

    def freeze_call(*args: Any, **kwargs: Any) -> Any:
        return (plain_freeze if in_warmup[0] else timed_freeze)(*args, **kwargs)

    trainer.rollouts = meter.wrap("rollout", trainer.rollouts)  # an instance attribute shadows the method
    update_mod.critic_warmup, update_mod.freeze, trainer_mod.optimise = warmup_call, freeze_call, learn
    try:
        yield
    finally:
        update_mod.critic_warmup, update_mod.freeze, trainer_mod.optimise = saved
        for clock in (meter.cpu, meter.wall):
            clock["optimise"] = (
                clock.pop("learn", 0.0) - clock.get("critic_warmup", 0.0) - clock.get("freeze", 0.0)
            )


def smallest(params: Params) -> Params:
    """The same code path at the smallest sizes (the smoke test's)."""
    return params.model_copy(
        update={
            "rl": params.rl.model_copy(
                update={
                    "updates": 1,
                    "tasks_per_update": 2,
                    "group_size": 2,
                    "critic_warmup_steps": 1,
                    "ppo_epochs": 1,
                    "minibatches": 1,
                }
            ),
            "model": params.model.model_copy(
                update={"tiny": params.model.tiny.model_copy(update={"num_hidden_layers": 1})}
            ),
            "env": params.env.model_copy(update={"max_turns": 2}),
            "rollout": params.rollout.model_copy(update={"max_new_tokens_per_turn": 24}),
        }
    )


def base_model(params: Params, checkpoint: Path, random_weights: bool) -> tuple[Any, Any]:
    """(model, tokenizer): the checkpoint, or the tiny profile with a fresh tokenizer."""
    from pappo.policy.checkpoint import build_tiny_model
    from pappo.policy.loading import load_checkpoint

    if not random_weights:
        model, tokenizer, _ = load_checkpoint(params.model, checkpoint)
        return model, tokenizer
    if not _TOKENIZER:  # built once: every method starts from the same weights and vocabulary
        _TOKENIZER.append(fresh_tokenizer(params))
    return build_tiny_model(params.model.tiny, _TOKENIZER[0]), _TOKENIZER[0]


def split(params: Params, store: TaskStore, seed: int) -> tuple[list[str], list[str]]:
    """(train ids, eval ids): the seed's split from the lock, else the store's ids halved."""
    if Path(params.tasks.repofix.lock).is_file():
        _, train, held_out = read_split(params, seed)
        return train, held_out
    ids = sorted(store.tasks)
    return ids[: len(ids) // 2], ids[len(ids) // 2 :]


def grader(params: Params, store: TaskStore, stand_in: bool, levers: str) -> Callable[..., Any]:
    """A run's grader (`run_grader`: the sandbox), or the stand-in; one per run, as each run's own."""
    if stand_in:
        return stand_in_grades
    cached = run_grader(params, store)
    return cached if levers == "on" else cached.grade_fn


def _trees(grade_fn: Any) -> dict[str, int] | None:
    """Trees asked for and trees the sandbox graded (a `GradeCache`), else None."""
    return {"asked": grade_fn.calls, "graded": grade_fn.graded} if isinstance(grade_fn, GradeCache) else None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    params = load_params(args.params)
    params = smallest(params) if args.smallest else params
    if args.threads:
        params = params.model_copy(
            update={"numerics": params.numerics.model_copy(update={"threads": args.threads})}
        )
    pin(params.numerics)
    if args.levers == "off":  # the forwards, critic and grader as before the levers (the A/B's baseline)
        adapters.MIN_SHARED_PREFIX = sys.maxsize
        params = params.model_copy(update={"rl": params.rl.model_copy(update={"critic_trunk": "adapter"})})
    store = TaskStore.from_params(params, "repofix")
    train_ids, eval_ids = split(params, store, args.seed)
    eval_ids = sorted(eval_ids)[: 2 if args.smallest else args.eval_tasks]
    updates = 1 if args.smallest else args.updates
    params = params.model_copy(update={"rl": params.rl.model_copy(update={"updates": updates})})
    out: dict[str, Any] = {
        "threads": torch.get_num_threads(),
        "updates": updates,
        "levers": args.levers,
        "train": {},
    }
    ac = codec = None
    with tempfile.TemporaryDirectory(prefix="pappo-bench-cost-") as work:
        for method in args.methods:
            torch.manual_seed(args.seed)
            model, tokenizer = base_model(params, args.checkpoint, args.random_weights)
            ac = ActorCritic(model, params.lora, params.model.logits_fp32)
            codec = ChatCodec(tokenizer, tools_for(params.env.actions))
            grade_fn = grader(params, store, args.stand_in_grader, args.levers)
            trainer = Trainer(
                method, params, ac, codec, store, train_ids, grade_fn, Path(work) / method, args.seed
            )
            meter = Meter()
            with instrument(trainer, meter):
                history = trainer.run()
            episodes = sum(int(h["rollout"]["episodes"]) for h in history)
            out["train"][method] = {
                "episodes": episodes,
                "trees": _trees(grade_fn),
                "cpu_s": {k: meter.cpu.get(k, 0.0) / episodes for k in PHASES},
                "wall_s": {k: meter.wall.get(k, 0.0) / episodes for k in PHASES},
            }
        assert ac is not None
        with ac.adapter(POLICY):
            decoder = Qwen2Decoder(ac.peft, params.model.logits_fp32)
        c0, w0 = tree_cpu_s(), time.perf_counter()
        evaluate(decoder, codec, params, store, eval_ids, grade_fn, args.seed, tag=updates)
        n = len(eval_ids) * (params.eval.boards + params.eval.samples)
        out["eval"] = {
            "episodes": n,
            "cpu_s": (tree_cpu_s() - c0) / n,
            "wall_s": (time.perf_counter() - w0) / n,
        }
        out["eval"]["trees"] = _trees(grade_fn)  # the run's cumulative counts, training included
    return out


def report(result: dict[str, Any]) -> None:
    print(
        f"threads {result['threads']}; levers {result['levers']}; {result['updates']} update(s) per method; "
        "seconds per episode"
    )
    print(f"{'':24s}{'cpu_s':>9s}{'wall_s':>9s}")
    totals = []
    for method, row in result["train"].items():
        for phase in PHASES:
            if row["cpu_s"][phase] or row["wall_s"][phase]:
                print(f"{method + ' ' + phase:24s}{row['cpu_s'][phase]:9.3f}{row['wall_s'][phase]:9.3f}")
        cpu, wall = sum(row["cpu_s"].values()), sum(row["wall_s"].values())
        totals.append(cpu)
        trees = f"; trees graded {row['trees']['graded']}/{row['trees']['asked']}" if row["trees"] else ""
        print(f"{method + ' train episode':24s}{cpu:9.3f}{wall:9.3f}   ({row['episodes']} episodes{trees})")
    ev = result["eval"]
    print(f"{'eval episode':24s}{ev['cpu_s']:9.3f}{ev['wall_s']:9.3f}   ({ev['episodes']} episodes)")
    print(f"per episode cpu_s: train {sum(totals) / len(totals):.3f} eval {ev['cpu_s']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/base"))
    ap.add_argument("--methods", nargs="+", default=["ppo", "grpo"], choices=METHODS)
    ap.add_argument("--updates", type=int, default=2)
    ap.add_argument("--eval-tasks", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--random-weights", action="store_true", help="ignore --checkpoint")
    ap.add_argument("--stand-in-grader", action="store_true", help="no sandbox")
    ap.add_argument("--smallest", action="store_true", help="the smoke test's sizes")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default numerics.threads)")
    ap.add_argument(
        "--levers",
        choices=["on", "off"],
        default="on",
        help="off: no shared-prefix forward, no grade cache (the baseline of an A/B)",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args()
    result = measure(args)
    result["critic_methods"] = [m for m in args.methods if m in CRITIC_METHODS]
    report(result)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
