"""One online loop for every method: rft, grpo, ppo and pappo differ only in what they learn from.

`Trainer.run` resumes from the run's checkpoint if there is one, then for each remaining update:
sets the actor's learning rate from the schedule, collects `tasks_per_update` x `group_size`
episodes with the current policy (`collect.py`), learns from them (`update.py`: critic warm-up,
freeze, `ppo_epochs` x `minibatches` steps; or rft's SFT steps), lets `on_update` evaluate, and
writes the checkpoint (`checkpointing.py`). The state the phases share is the `Learner`
(`learner.py`); `rl.md` describes the methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pappo.config import Params
from pappo.policy.adapters import ActorCritic
from pappo.policy.rollout import Trajectory
from pappo.rl.checkpointing import resume_checkpoint, save_checkpoint
from pappo.rl.collect import rollouts, to_batch
from pappo.rl.distributed import Dist
from pappo.rl.learner import Learner, Method
from pappo.rl.update import optimise
from pappo.schedule import lr_factor
from pappo.tasks.store import TaskStore


class Trainer:
    """Trains `ac` (policy + critic adapters over the frozen base) with `method` on `train_ids`,
    checkpointing under `out_dir`."""

    def __init__(
        self,
        method: Method,
        params: Params,
        ac: ActorCritic,
        codec: Any,
        store: TaskStore,
        train_ids: Sequence[str],
        grade_fn: Callable[..., Any],
        out_dir: Path,
        seed: int,
        dist: Dist | None = None,
    ) -> None:
        self.learner = Learner(method, params, ac, codec, seed, dist)
        self.store, self.train_ids, self.grade_fn = store, sorted(train_ids), grade_fn
        self.out_dir = Path(out_dir)
        self.history: list[dict[str, Any]] = []
        self.update_index = 0
        # evaluation hook, called with (updates done, record) before the checkpoint; may add to the record
        self.on_update: Callable[[int, dict[str, Any]], None] | None = None
        # what the run depends on (params, code, checkpoint); a checkpoint with another one is not resumed
        self.fingerprint = ""
        self.log: Callable[[str], None] = lambda message: None

    def run(self) -> list[dict[str, Any]]:
        """Resume from the checkpoint if there is one, then run the remaining updates."""
        self.resume()
        while self.update_index < self.learner.rl.updates:
            record = self.update(self.update_index)
            if self.on_update is not None:
                self.on_update(self.update_index + 1, record)  # may add to the record (evaluation)
            self.history.append(record)
            self.update_index += 1
            save_checkpoint(self.out_dir, self.learner, self.update_index, self.history, self.fingerprint)
        return self.history

    def resume(self) -> None:
        """Load `out_dir/checkpoint` if there is one of this run (`checkpointing.resume_checkpoint`)."""
        self.update_index, self.history = resume_checkpoint(
            self.out_dir, self.learner, self.fingerprint, self.log
        )

    def update(self, u: int) -> dict[str, Any]:
        """Roll out, freeze, optimise; returns the update's record (metrics and diagnostics)."""
        clock = time.perf_counter()
        timing: dict[str, float] = {}

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timing[name], clock = now - clock, now

        rl = self.learner.rl
        lr = rl.actor_lr * lr_factor(u, rl.updates, rl.lr_scheduler_type, rl.min_lr_ratio)
        for group in self.learner.actor_opt.param_groups:
            group["lr"] = lr
        trajs, groups, index = self.rollouts(u)
        lap("rollout")
        batch, rollout = to_batch(self.learner, trajs, groups, index, u)
        record: dict[str, Any] = {"update": u, "actor/lr": lr, "rollout": rollout}
        record |= optimise(self.learner, batch, u, lap)
        lap("optimise")
        record["wall_s"] = timing  # seconds per phase: the only run-to-run noise in a record
        return record

    def rollouts(self, u: int) -> tuple[list[Trajectory], list[int], list[int]]:
        """This rank's episodes of update `u` (`collect.rollouts`): trajectories, groups, global indices."""
        return rollouts(self.learner, self.store, self.train_ids, self.grade_fn, u)
