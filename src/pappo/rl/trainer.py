"""One online loop for every method: rft, grpo, ppo and pappo differ only in what they learn from.

Each update: sample `tasks_per_update` train tasks x `group_size` episodes with the current
policy (batched rollouts, real sandbox), drop infra-error episodes, freeze old log-probs (trainer
forward on the exact sampled ids), reference log-probs, old values and advantages once, then
`ppo_epochs` x `minibatches` optimizer steps with grad clipping, stopping early once
`actor/ppo_kl` exceeds `target_kl`. A checkpoint (adapters, optimizers, RNG state, history) is
written atomically after every update; `run` resumes from it.

Data parallel (`distributed.py`): each rank rolls out a contiguous shard of the update's tasks
(whole groups); minibatches are drawn over GLOBAL episode indices, so their composition does not
depend on the number of processes; whitening, loss normalisers and statistics are global.

- rft: masked NLL on the update's successful episodes (rejection-sampling fine-tuning).
- grpo: group-relative advantages of the outcome, broadcast to every policy token; no critic.
- ppo: token-level GAE of the outcome with the critic.
- pappo: turn-level GAE with the critic over turn rewards = outcome at the last turn plus
  `local_prior` x the environment's patch-aware process rewards; a turn's advantage goes to all of
  its tokens.
Shapes: B episodes, T tokens, N turns.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from pappo.config import Params
from pappo.env.vec import VecEnv, task_env
from pappo.io import PappoError, atomic_write_json
from pappo.policy.adapters import POLICY, ActorCritic
from pappo.policy.constrained import call_trie
from pappo.policy.decisions import choice_table, choice_tokens
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, Trajectory
from pappo.rl import advantages as adv_k
from pappo.rl import losses
from pappo.rl.batch import RolloutBatch, from_trajectories, policy_outputs, reference_log_probs, token_values
from pappo.rl.distributed import Dist, merge_stats
from pappo.rl.gppo import gppo_loss
from pappo.rl.mismatch import logprob_gap_sums, percentile, rollout_is_weights
from pappo.schedule import lr_factor
from pappo.tasks.splits import read_split
from pappo.tasks.store import TaskStore

Method = Literal["rft", "grpo", "ppo", "pappo"]
METHODS: tuple[str, ...] = ("rft", "grpo", "ppo", "pappo")
CRITIC_METHODS = ("ppo", "pappo")
CHECKPOINT = "checkpoint"
EV_MOMENT = "_ev_moment/"  # explained-variance sums, summed unweighted then turned into the ratio


class Trainer:
    """Trains `ac` (policy + critic adapters over the frozen base) with `method` on `train_ids`."""

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
        if method not in METHODS:
            raise PappoError(f"unknown method {method!r}; use one of {list(METHODS)}")
        self.dist = dist or Dist(device=next(ac.parameters()).device)
        if self.dist.world_size > params.rl.tasks_per_update:
            raise PappoError(
                f"rl.tasks_per_update ({params.rl.tasks_per_update}) is smaller than the number of "
                f"processes ({self.dist.world_size}): every rank needs a task; raise it or launch fewer"
            )
        self.method, self.params, self.rl, self.ac, self.codec = method, params, params.rl, ac, codec
        self.store, self.train_ids, self.grade_fn = store, sorted(train_ids), grade_fn
        self.out_dir, self.seed = Path(out_dir), seed
        if ac.logits_fp32 != params.model.logits_fp32:
            raise PappoError(
                f"model.logits_fp32 is {params.model.logits_fp32} but the ActorCritic was built with "
                f"{ac.logits_fp32}: build it as ActorCritic(model, params.lora, params.model.logits_fp32)"
            )
        # float16 overflows where bfloat16 does not: dynamic loss scaling (skips a step on inf/nan grads)
        self.scaler = torch.amp.GradScaler(self.dist.device.type) if params.model.dtype == "float16" else None
        self._optimizers()
        self.choices = self._choice_table()
        self.trie = call_trie(codec, params)  # rollout.calls constrained: the valid calls, else None
        self.history: list[dict[str, Any]] = []
        self.update_index = 0
        self.on_update: Callable[[int, dict[str, Any]], None] | None = (
            None  # eval hook, before the checkpoint
        )
        self.fingerprint = (
            ""  # what the run depends on (params, code, checkpoint); a different one is not resumed
        )
        self.log: Callable[[str], None] = lambda message: None

    def _choice_table(self) -> torch.Tensor | None:
        """The options each choice is made among (decisions mode with finite options), or None."""
        if self.rl.loss_tokens != "decisions":
            return None
        env = self.params.env
        choices = choice_tokens(self.codec, env.actions, env.candidates.k)
        return choice_table(choices, self.ac.lm_head.out_features) if choices else None

    def _optimizers(self) -> None:
        self.actor_opt = torch.optim.AdamW(self.ac.policy_parameters(), lr=self.rl.actor_lr, weight_decay=0.0)
        self.critic_opt = torch.optim.AdamW(
            self.ac.critic_parameters(), lr=self.rl.critic_lr, weight_decay=0.0
        )

    # ------------------------------------------------------------------ the loop
    def run(self) -> list[dict[str, Any]]:
        """Resume from the checkpoint if there is one, then run the remaining updates."""
        self.resume()
        while self.update_index < self.rl.updates:
            record = self.update(self.update_index)
            if self.on_update is not None:
                self.on_update(self.update_index + 1, record)  # may add to the record (evaluation)
            self.history.append(record)
            self.update_index += 1
            self.save_checkpoint()
        return self.history

    def update(self, u: int) -> dict[str, Any]:
        """Roll out, freeze, optimise; returns the update's record (metrics and diagnostics)."""
        clock = time.perf_counter()
        timing: dict[str, float] = {}

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timing[name], clock = now - clock, now

        lr = self.rl.actor_lr * lr_factor(u, self.rl.updates, self.rl.lr_scheduler_type, self.rl.min_lr_ratio)
        for group in self.actor_opt.param_groups:
            group["lr"] = lr
        trajs, groups, index = self.rollouts(u)
        lap("rollout")
        summaries = [s for part in self.dist.gather([episode_summary(t) for t in trajs]) for s in part]
        record: dict[str, Any] = {"update": u, "actor/lr": lr, "rollout": rollout_stats(summaries)}
        kept = [i for i, t in enumerate(trajs) if not t.metrics.get("infra_error")]
        record["rollout"]["infra_dropped"] = sum(bool(s["infra_error"]) for s in summaries)
        if self.dist.sum(0 if kept else 1):
            raise PappoError(
                f"update {u}: every episode of a rank hit a sandbox infra error; check `pappo run-tests`"
            )
        batch = from_trajectories(
            [trajs[i] for i in kept],
            [groups[i] for i in kept],
            self.codec.pad_id,
            [index[i] for i in kept],
            self.choices,
        ).to(self.dist.device)
        record |= self.optimise(batch, u, lap)
        lap("optimise")
        record["wall_s"] = timing  # seconds per phase: the only run-to-run noise in a record
        return record

    def optimise(
        self, batch: RolloutBatch, u: int, lap: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """Learn from update `u`'s batch: rft's SFT steps, or the critic warm-up (update 0 of ppo and
        pappo), `freeze` and the PPO steps. Returns the update record's fields: `steps` (rft), or
        `critic_warmup`, `freeze`, `steps` and `epochs_used`. `lap("freeze")` is called once the
        batch is frozen, before the first step (`update` times its phases with it)."""
        if self.method == "rft":
            return {"steps": self._rft(batch, u)}
        out: dict[str, Any] = {}
        out["critic_warmup"] = self._critic_warmup(batch) if u == 0 and self.method in CRITIC_METHODS else []
        out["freeze"] = self.freeze(batch)  # after the warm-up: old values from the warmed-up critic
        if lap is not None:
            lap("freeze")
        out["steps"], out["epochs_used"] = self._optimise(batch, u)
        return out

    def rollouts(self, u: int) -> tuple[list[Trajectory], list[int], list[int]]:
        """`group_size` episodes of each of this rank's share of the `tasks_per_update` train tasks
        drawn from (seed, u); returns the trajectories, their group (task) and global episode index."""
        ids = self.task_draw(self.params, self.seed, u, self.train_ids)
        k = self.rl.group_size
        mine = self.dist.shard(len(ids))  # whole groups: GRPO statistics stay on one rank
        groups = [g for g in mine for _ in range(k)]
        index = [g * k + j for g in mine for j in range(k)]
        envs = [
            task_env(self.store, ids[g], self.params.env, hash_seed(self.seed, u, i))
            for g, i in zip(groups, index)
        ]
        with self.ac.adapter(POLICY):
            decoder = Qwen2Decoder(self.ac.peft, self.params.model.logits_fp32)  # the policy's snapshot
        engine = RolloutEngine(decoder, self.codec, self.params.rollout, self.trie)
        trajs: list[Trajectory] = []
        bs = self.params.rollout.batch_size
        for at in range(0, len(envs), bs):
            seeds = [hash_seed(self.seed, u, i) for i in index[at : at + bs]]
            trajs += engine.run(VecEnv(envs[at : at + bs], self.grade_fn), seed=0, episode_seeds=seeds)
        return trajs, groups, index

    @staticmethod
    def task_draw(params: Params, seed: int, u: int, train_ids: Sequence[str] | None = None) -> list[str]:
        """The train tasks of update `u`: the same for every method of a seed (matched budget)."""
        if train_ids is None:
            train_ids = read_split(params, seed)[1]  # the lock's split, as the run uses
        pool = sorted(train_ids)
        return random.Random(f"{seed}:{u}").sample(pool, min(params.rl.tasks_per_update, len(pool)))

    # ------------------------------------------------------------------ freezing
    @torch.no_grad()
    def freeze(self, batch: RolloutBatch, values_only: bool = False) -> dict[str, float]:
        """Old log-probs, reference log-probs, old values, advantages and returns, computed once
        (`values_only`: just old values, advantages and returns, for the critic warm-up)."""
        temp = self.params.rollout.temperature
        parts: dict[str, list[torch.Tensor]] = {"old": [], "ref": [], "val": []}
        width = batch.input_ids.shape[1]
        for idx in self._micro(torch.arange(len(batch))):
            mb = batch.select(idx)
            if not values_only:
                parts["old"].append(_pad(self.log_probs(mb, temp)[0], width))
            if self.rl.kl_coef > 0 and not values_only:
                parts["ref"].append(_pad(reference_log_probs(self.ac, mb, temp, self.choices), width))
            if self.method in CRITIC_METHODS:
                parts["val"].append(_pad(token_values(self.ac, mb, self.rl.critic_sees_rewards), width))
        if not values_only:
            batch.old_log_prob = torch.cat(parts["old"])
            batch.ref_log_prob = torch.cat(parts["ref"]) if parts["ref"] else None
        batch.old_values = torch.cat(parts["val"]) if parts["val"] else torch.zeros_like(batch.response_mask)
        batch.advantages, batch.returns = self.advantages(batch)
        if values_only:
            return {}
        mask, d = self.gap_mask(batch), self.dist
        n = max(d.sum(mask.sum()), 1.0)
        adv_mean = d.sum((batch.advantages * mask).sum()) / n
        return {**self._mismatch_stats(batch), "critic/advantages_mean": adv_mean}

    def _mismatch_stats(self, batch: RolloutBatch) -> dict[str, float]:
        """How far the sampler's log-probs are from the frozen old ones, over every rank's comparable
        tokens (`gap_mask`): mean, p99, max |gap| and the share above `mismatch.LARGE_GAP`; with
        rl.rollout_is_level set, the correction's mean weight and the share of ratios above C and
        below 1/C (tokens, or sequences at sequence level; `below` binds in mask mode only)."""
        assert batch.old_log_prob is not None
        d, mask = self.dist, self.gap_mask(batch)
        g = logprob_gap_sums(batch.old_log_prob, batch.sampler_log_prob, mask)
        n = max(d.sum(g["n"]), 1.0)
        values = torch.cat([v.to(torch.float64) for v in d.gather(g["values"].cpu())])
        out = {
            "rollout/logprob_gap_mean": d.sum(g["sum"]) / n,
            "rollout/logprob_gap_p99": percentile(values, 0.99),
            "rollout/logprob_gap_max": float(d.all_reduce(g["max"], "max")),
            "rollout/logprob_gap_frac_large": d.sum(g["large"]) / n,
        }
        rl = self.rl
        if rl.rollout_is_level == "none":
            return out
        w, high, low = self._is_weights(batch)
        unit = mask != 0
        if rl.rollout_is_level == "sequence":  # one weight per sequence: count rows with a comparable token
            unit, w, high, low = unit.any(-1), w[:, 0], high[:, 0], low[:, 0]
        units = max(d.sum(unit.sum()), 1.0)
        out["rollout/rollout_is_mean"] = d.sum(w[unit].sum()) / units
        out["rollout/rollout_is_fraction_high"] = d.sum(high.sum()) / units
        out["rollout/rollout_is_fraction_low"] = d.sum(low.sum()) / units
        return out

    def _is_weights(self, b: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`mismatch.rollout_is_weights` of the frozen old log-probs over the sampler's (B, T), on the
        tokens whose two log-probs are comparable (`gap_mask`); weight 1 on the others."""
        assert b.old_log_prob is not None
        rl = self.rl
        return rollout_is_weights(
            b.old_log_prob,
            b.sampler_log_prob,
            self.gap_mask(b),
            rl.rollout_is_level,
            rl.rollout_is_mode,
            rl.rollout_is_threshold,
        )

    def advantages(self, b: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(advantages, returns), (B, T), for the method; 0 off the policy tokens."""
        rl, mask = self.rl, b.response_mask
        if self.method == "grpo":
            a = adv_k.grpo_advantages(b.terminal, b.group, norm_by_std=rl.grpo_norm_by_std)  # (B,)
            return a[:, None] * mask, torch.zeros_like(mask)
        assert b.old_values is not None
        if self.method == "ppo":
            rewards = adv_k.terminal_token_rewards(b.terminal, mask)
            a, ret = adv_k.token_gae(rewards, b.old_values, mask, rl.gamma, rl.lam)
        else:  # pappo
            n = b.turn_mask.shape[1]
            rewards = adv_k.pappo_turn_rewards(b.terminal, b.process, b.turn_mask, rl.local_prior)  # (B, N)
            turn_v = adv_k.turn_values_from_tokens(b.old_values, b.turn_index, mask, n)  # (B, N)
            a_n, ret_n = adv_k.turn_gae(rewards, turn_v, b.turn_mask, rl.gamma, rl.lam)
            a = adv_k.broadcast_turns(a_n, b.turn_index, mask)
            ret = adv_k.broadcast_turns(ret_n, b.turn_index, mask)
        if rl.whiten_advantages:
            a = self._whiten(a, self.loss_mask(b))
        return a, ret

    def _whiten(self, a: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """`advantages.masked_whiten` over the policy tokens of EVERY rank: its kernel
        `whiten_with_moments` fed the global mean and unbiased variance; unchanged with fewer than
        2 tokens in all."""
        d, on = self.dist, mask.bool()
        n = d.sum(on.sum())
        if n < 2:
            return a
        zero = torch.zeros((), dtype=a.dtype, device=a.device)
        mean = d.all_reduce(torch.where(on, a, zero).sum()) / n
        # two passes, as masked_whiten: the global mean first, then squared deviations from it
        var = d.all_reduce(torch.where(on, (a - mean) ** 2, zero).sum()) / (n - 1)
        return adv_k.whiten_with_moments(a, on, mean, var)

    # ------------------------------------------------------------------ optimisation
    def _optimise(self, batch: RolloutBatch, u: int) -> tuple[list[dict[str, float]], int]:
        """ppo_epochs x minibatches steps; stops after the step whose ppo_kl passes target_kl."""
        steps: list[dict[str, float]] = []
        gen = torch.Generator().manual_seed(hash_seed(self.seed, u, -1))
        n_total = int(self.dist.all_reduce(batch.index.max() + 1, "max"))  # episodes drawn (dropped ones too)
        for epoch in range(self.rl.ppo_epochs):
            order = torch.randperm(n_total, generator=gen)
            for m, chunk in enumerate(order.chunk(self.rl.minibatches)):
                stats = self._step(batch, self._local(batch, chunk))
                if not stats:
                    continue  # every episode of this minibatch was dropped
                steps.append({"epoch": epoch, "minibatch": m, **stats})
                if self.rl.target_kl is not None and stats["actor/ppo_kl"] > self.rl.target_kl:
                    return steps, epoch + 1
        return steps, self.rl.ppo_epochs

    def _step(self, batch: RolloutBatch, idx: torch.Tensor) -> dict[str, float]:
        """One optimizer step of the actor (and critic) on the minibatch `idx`."""
        critic, mode = self.method in CRITIC_METHODS, self.rl.loss_agg_mode
        total = self.dist.sum(_weight(batch.response_mask[idx], mode))  # the GLOBAL minibatch
        actor_total = self.dist.sum(_weight(self.loss_mask(batch)[idx], mode))
        if total == 0:
            return {}
        self.actor_opt.zero_grad(set_to_none=True)
        self.critic_opt.zero_grad(set_to_none=True)
        sums: dict[str, float] = {}
        for micro in self._micro(idx):
            mb = batch.select(micro)
            share = _weight(mb.response_mask, mode) / max(total, 1e-12)
            actor_share = _weight(self.loss_mask(mb), mode) / max(actor_total, 1e-12)
            actor_loss, stats = self._actor_loss(mb)
            self._backward(actor_loss * actor_share)
            if critic:
                v_loss, v_stats = self._critic_loss(mb)
                self._backward(v_loss * share)
                stats.update(v_stats)
            _accumulate(sums, stats, share)
        sums = _explained_variance(merge_stats(self.dist.gather(sums)))
        sums["actor/grad_norm"] = self._clip_and_step(self.ac.policy_parameters(), self.actor_opt)
        if critic:
            sums["critic/grad_norm"] = self._clip_and_step(self.ac.critic_parameters(), self.critic_opt)
        self._scale_update()
        return sums

    def _backward(self, loss: torch.Tensor) -> None:
        """loss.backward(), the loss scaled first under float16 (`self.scaler`)."""
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def _clip_and_step(self, params: list[torch.nn.Parameter], opt: torch.optim.Optimizer) -> float:
        """Sum gradients over ranks (DDP's all-reduce), clip their global norm, step. Under float16
        the gradients are unscaled first and the step is skipped if one is inf/nan (the norm says so)."""
        self.dist.sync_grads(params)
        if self.scaler is not None:
            self.scaler.unscale_(opt)
        norm = float(torch.nn.utils.clip_grad_norm_(params, self.rl.grad_clip))
        if self.scaler is None:
            opt.step()
        else:
            self.scaler.step(opt)
        return norm

    def _scale_update(self) -> None:
        """After every optimizer of a step has stepped: adapt the float16 loss scale (GradScaler)."""
        if self.scaler is not None:
            self.scaler.update()

    def _local(self, batch: RolloutBatch, chunk: torch.Tensor) -> torch.Tensor:
        """Rows of this rank's batch whose global episode index is in `chunk`, in chunk order."""
        row = {int(g): r for r, g in enumerate(batch.index.tolist())}
        return torch.tensor([row[g] for g in chunk.tolist() if g in row], dtype=torch.long)

    def log_probs(
        self, mb: RolloutBatch, temperature: float, entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`policy_outputs` under the run's choice table (the one place the trainer applies it)."""
        return policy_outputs(self.ac, mb, temperature, entropy=entropy, choices=self.choices)

    def loss_mask(self, b: RolloutBatch) -> torch.Tensor:
        """The tokens the actor learns on (B, T): every sampled token, or the decisions alone."""
        return b.decision_mask if self.rl.loss_tokens == "decisions" else b.response_mask

    def kl_mask(self, b: RolloutBatch) -> torch.Tensor:
        """The tokens the KL anchor reads (B, T): the actor's, except with sampled calls in decisions
        mode, where it holds the format tokens the policy gradient leaves out (constrained calls
        force the format, so there it reads the choices)."""
        if self.rl.loss_tokens == "decisions" and self.trie is None:
            return b.response_mask - b.decision_mask
        return self.loss_mask(b)

    def gap_mask(self, b: RolloutBatch) -> torch.Tensor:
        """The tokens whose sampler log-prob the trainer recomputes under the same distribution (B, T):
        with constrained calls the choices (both restricted to the valid options; a forced token's
        recorded 0 is the constraint's), else every sampled token but a restricted choice."""
        return b.decision_mask if self.trie is not None else b.response_mask * (b.choice_row == 0)

    def _actor_loss(self, mb: RolloutBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        rl, mask = self.rl, self.loss_mask(mb)
        assert mb.old_log_prob is not None and mb.advantages is not None
        log_prob, entropy = self.log_probs(mb, self.params.rollout.temperature, entropy=True)
        assert entropy is not None
        if rl.trust_region == "gppo":
            pg, st = gppo_loss(
                log_prob,
                mb.old_log_prob,
                mb.advantages,
                mask,
                rl.gppo.geometry,
                rl.gppo.topology,
                rl.gppo.delta,
                rl.loss_agg_mode,
            )
            st.setdefault("pg_clipfrac_lower", torch.zeros(()))
            st["ppo_kl"] = losses.masked_mean(
                losses.kl_penalty(mb.old_log_prob, log_prob.detach(), "k3"), mask
            )
        else:
            # rows are whole sequences here (minibatches split by episode), as sequence level needs
            weights = None if rl.rollout_is_level == "none" else self._is_weights(mb)[0]
            pg, st = losses.policy_loss(
                log_prob,
                mb.old_log_prob,
                mb.advantages,
                mask,
                rl.clip_ratio_low,
                rl.clip_ratio_high,
                rl.clip_ratio_c,
                rl.loss_agg_mode,
                rollout_is_weights=weights,
            )
        ent = losses.agg_loss(entropy, mask, rl.loss_agg_mode)
        loss = pg - rl.entropy_coeff * ent
        stats = {f"actor/{k}": v for k, v in st.items()}
        stats |= {"actor/pg_loss": pg.detach(), "actor/entropy": ent.detach()}
        if rl.kl_coef > 0 and mb.ref_log_prob is not None:
            kl = losses.agg_loss(
                losses.kl_penalty(log_prob, mb.ref_log_prob, rl.kl_estimator),
                self.kl_mask(mb),
                rl.loss_agg_mode,
            )
            loss = loss + rl.kl_coef * kl
            stats["actor/kl_loss"] = kl.detach()
        return loss, stats

    def _critic_loss(self, mb: RolloutBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        assert mb.old_values is not None and mb.returns is not None
        values = token_values(self.ac, mb, self.rl.critic_sees_rewards)
        loss, st = losses.value_loss(
            values,
            mb.old_values,
            mb.returns,
            mb.response_mask,
            self.rl.cliprange_value,
            self.rl.loss_agg_mode,
        )
        moments = losses.ev_moments(values.detach(), mb.returns, mb.response_mask)
        return loss, {
            "critic/value_loss": loss.detach(),
            "critic/vf_clipfrac": st["vf_clipfrac"],
            **{f"{EV_MOMENT}{i}": m for i, m in enumerate(moments)},
        }

    def _critic_warmup(self, batch: RolloutBatch) -> list[dict[str, float]]:
        """Critic-only steps on the base policy's first batch (returns from its own values)."""
        out = []
        for _ in range(self.rl.critic_warmup_steps):
            self.freeze(batch, values_only=True)
            self.critic_opt.zero_grad(set_to_none=True)
            total = self.dist.sum(_weight(batch.response_mask, self.rl.loss_agg_mode))
            stats: dict[str, float] = {}
            for micro in self._micro(torch.arange(len(batch))):
                mb = batch.select(micro)
                share = _weight(mb.response_mask, self.rl.loss_agg_mode) / max(total, 1e-12)
                loss, st = self._critic_loss(mb)
                self._backward(loss * share)
                _accumulate(stats, st, share)
            self._clip_and_step(self.ac.critic_parameters(), self.critic_opt)
            self._scale_update()
            out.append(_explained_variance(merge_stats(self.dist.gather(stats))))
        return out

    def _rft(self, batch: RolloutBatch, u: int) -> list[dict[str, float]]:
        """SFT (masked NLL of the sampled tokens) on the update's successful episodes."""
        mine = batch.index[batch.terminal > 0].tolist()
        good = torch.tensor(sorted(g for part in self.dist.gather(mine) for g in part), dtype=torch.long)
        steps: list[dict[str, float]] = []
        if len(good) == 0:
            return steps
        gen = torch.Generator().manual_seed(hash_seed(self.seed, u, -1))
        for epoch in range(self.rl.rft_epochs):
            order = good[torch.randperm(len(good), generator=gen)]
            for m, chunk in enumerate(order.chunk(min(self.rl.minibatches, len(good)))):
                idx = self._local(batch, chunk)
                self.actor_opt.zero_grad(set_to_none=True)
                total = self.dist.sum(self.loss_mask(batch)[idx].sum())
                nll_sum = 0.0
                for micro in self._micro(idx):
                    mb = batch.select(micro)
                    log_prob, _ = self.log_probs(mb, 1.0)
                    nll = -(log_prob * self.loss_mask(mb)).sum() / max(total, 1.0)
                    self._backward(nll)
                    nll_sum += float(nll.detach())
                nll_sum = self.dist.sum(nll_sum)
                norm = self._clip_and_step(self.ac.policy_parameters(), self.actor_opt)
                self._scale_update()
                steps.append(
                    {"epoch": epoch, "minibatch": m, "actor/sft_nll": nll_sum, "actor/grad_norm": norm}
                )
        return steps

    def _micro(self, idx: torch.Tensor) -> list[torch.Tensor]:
        return list(idx.split(self.rl.micro_batch_size)) if len(idx) else []

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> None:
        """adapters/, optim.pt, state.json under `out_dir/checkpoint`, replaced atomically (rank 0;
        every rank holds the same weights and optimizer state)."""
        if not self.dist.is_main:
            self.dist.barrier()
            return
        final = self.out_dir / CHECKPOINT
        tmp = self.out_dir / f".{CHECKPOINT}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.ac.save(tmp / "adapters")
        torch.save(
            {
                "actor": self.actor_opt.state_dict(),
                "critic": self.critic_opt.state_dict(),
                "torch_rng": torch.get_rng_state(),
            },
            tmp / "optim.pt",
        )
        if self.scaler is not None:  # float16: the loss scale reached, so a resume scales as the run would
            torch.save(self.scaler.state_dict(), tmp / "scaler.pt")
        atomic_write_json(
            tmp / "state.json",
            {
                "method": self.method,
                "seed": self.seed,
                "update_index": self.update_index,
                "history": self.history,
                "fingerprint": self.fingerprint,
            },
        )
        old = self.out_dir / f".{CHECKPOINT}.old"
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        self.dist.barrier()

    def resume(self) -> None:
        """Load `out_dir/checkpoint` if present (same method and seed, else refuse)."""
        folder, old = self.out_dir / CHECKPOINT, self.out_dir / f".{CHECKPOINT}.old"
        if self.dist.is_main and not (folder / "state.json").is_file() and (old / "state.json").is_file():
            old.rename(folder)  # killed between the two renames
        self.dist.barrier()
        if not (folder / "state.json").is_file():
            return
        state = json.loads((folder / "state.json").read_text())
        if (state["method"], state["seed"]) != (self.method, self.seed):
            raise PappoError(
                f"{folder}: checkpoint of {state['method']} seed {state['seed']}, not "
                f"{self.method} seed {self.seed}; use another --out or delete it"
            )
        if state.get("fingerprint", "") != self.fingerprint:
            self.log(f"{folder}: written by another configuration or code version; starting afresh")
            self.dist.barrier()  # every rank has read state.json
            if self.dist.is_main:
                shutil.rmtree(folder)
            self.dist.barrier()
            return
        self.log(f"resuming from {folder} after update {state['update_index']}")
        self.ac.load_weights(folder / "adapters")
        self._optimizers()  # over the loaded tensors
        opt = torch.load(folder / "optim.pt", weights_only=False, map_location=self.dist.device)
        self.actor_opt.load_state_dict(opt["actor"])
        self.critic_opt.load_state_dict(opt["critic"])
        torch.set_rng_state(opt["torch_rng"].cpu())
        if self.scaler is not None and (folder / "scaler.pt").is_file():
            self.scaler.load_state_dict(torch.load(folder / "scaler.pt", weights_only=False))
        self.update_index, self.history = int(state["update_index"]), list(state["history"])


def hash_seed(seed: int, update: int, index: int) -> int:
    """A 31-bit seed from (run seed, update, index), stable across processes (no hash())."""
    return random.Random(f"{seed}/{update}/{index}").getrandbits(31)


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


def _accumulate(into: dict[str, float], stats: dict[str, torch.Tensor], share: float) -> None:
    """Micro-batch stats into minibatch stats: min/max for ratio bounds, else a weighted mean
    (`merge_stats`' rule, which then merges the ranks' partial stats)."""
    bound = ("ratio_min", "ratio_max")
    part = {
        k: float(v) if k.endswith(bound) or k.startswith(EV_MOMENT) else float(v) * share
        for k, v in stats.items()
    }
    into.update(merge_stats([into, part]))


def _explained_variance(stats: dict[str, float]) -> dict[str, float]:
    """Replace the summed moments by the minibatch's exact `critic/vf_explained_var` (0 where
    undefined, e.g. equal returns). Moments add across micro-batches and ranks; ratios do not."""
    moments = [stats.pop(f"{EV_MOMENT}{i}") for i in range(5)] if f"{EV_MOMENT}0" in stats else None
    if moments is not None:
        ev = losses.explained_variance_from_moments(torch.tensor(moments, dtype=torch.float64))
        stats["critic/vf_explained_var"] = float(torch.nan_to_num(ev, nan=0.0))
    return stats


def _weight(mask: torch.Tensor, mode: str) -> float:
    """A micro-batch's share of its minibatch's loss: tokens (token-mean) or rows with tokens."""
    return float(mask.sum()) if mode == "token-mean" else float((mask.sum(-1) > 0).sum())


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(x, (0, width - x.shape[1]))
