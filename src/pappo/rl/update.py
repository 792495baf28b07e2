"""One update's learning from its batch, top to bottom as in cleanrl's ppo.py.

`ppo_update` (grpo, ppo, pappo): on update 0 of a critic method, critic-only warm-up steps on the
base policy's batch; then the freeze (`freeze.py`: old log-probs, reference log-probs, old values,
advantages and returns, once); then `for epoch in ppo_epochs: for minibatch in minibatches:` the
actor's clipped policy-gradient loss (or a GPPO trust region) with entropy bonus and KL anchor,
the critic's clipped value loss, backward over micro-batches, gradient clip, optimizer step,
stopping after the step whose `actor/ppo_kl` exceeds `target_kl`. `rft_update`: masked NLL
(rejection-sampling fine-tuning) of the update's successful episodes.

Data parallel (`distributed.py`): minibatches are drawn over GLOBAL episode indices, so their
composition does not depend on the number of processes; loss normalisers and statistics are
global and gradients are summed over ranks before the clip. Shapes: B episodes, T tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pappo.rl import losses
from pappo.rl.batch import RolloutBatch, token_values
from pappo.rl.collect import hash_seed
from pappo.rl.distributed import merge_stats
from pappo.rl.freeze import freeze, is_weights, raw_advantages
from pappo.rl.gppo import gppo_loss
from pappo.rl.learner import Learner

EV_MOMENT = "_ev_moment/"  # explained-variance sums, summed unweighted then turned into the ratio


def optimise(
    learner: Learner, batch: RolloutBatch, u: int, lap: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Learn from update `u`'s batch (`rft_update` or `ppo_update`); returns the update record's
    fields: `steps` (rft), or `critic_warmup`, `freeze`, `steps` and `epochs_used`."""
    if learner.method == "rft":
        return {"steps": rft_update(learner, batch, u)}
    return ppo_update(learner, batch, u, lap)


def ppo_update(
    learner: Learner, batch: RolloutBatch, u: int, lap: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Warm-up (update 0, critic methods), freeze, then ppo_epochs x minibatches steps; stops after
    the step whose ppo_kl passes target_kl. `lap("freeze")` is called once the batch is frozen,
    before the first step (the trainer times its phases with it)."""
    rl = learner.rl
    warmup = critic_warmup(learner, batch) if u == 0 and learner.critic else []
    out: dict[str, Any] = {"critic_warmup": warmup}
    out["freeze"] = freeze(learner, batch)  # after the warm-up: old values from the warmed-up critic
    if lap is not None:
        lap("freeze")
    out["steps"], out["epochs_used"] = [], rl.ppo_epochs
    gen = torch.Generator().manual_seed(hash_seed(learner.seed, u, -1))
    n_total = int(learner.dist.all_reduce(batch.index.max() + 1, "max"))  # episodes drawn (dropped too)
    for epoch in range(rl.ppo_epochs):
        order = torch.randperm(n_total, generator=gen)
        for m, chunk in enumerate(order.chunk(rl.minibatches)):
            stats = ppo_step(learner, batch, local_rows(batch, chunk))
            if not stats:
                continue  # every episode of this minibatch was dropped
            out["steps"].append({"epoch": epoch, "minibatch": m, **stats})
            if rl.target_kl is not None and stats["actor/ppo_kl"] > rl.target_kl:
                out["epochs_used"] = epoch + 1
                return out
    return out


def ppo_step(learner: Learner, batch: RolloutBatch, idx: torch.Tensor) -> dict[str, float]:
    """One optimizer step of the actor (and critic) on the minibatch `idx`; {} if it has no tokens."""
    mode, dist = learner.rl.loss_agg_mode, learner.dist
    total = dist.sum(_weight(batch.response_mask[idx], mode))  # the GLOBAL minibatch
    actor_total = dist.sum(_weight(learner.loss_mask(batch)[idx], mode))
    if total == 0:
        return {}
    learner.actor_opt.zero_grad(set_to_none=True)
    learner.critic_opt.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    for micro in learner.micro(batch, idx):
        mb = batch.select(micro)
        share = _weight(mb.response_mask, mode) / max(total, 1e-12)
        actor_share = _weight(learner.loss_mask(mb), mode) / max(actor_total, 1e-12)
        hidden = learner.shared_trunk(mb)  # one trunk pass for both losses (rl.critic_trunk policy)
        loss, stats = actor_loss(learner, mb, hidden)
        learner.backward(loss * actor_share)
        if learner.critic:  # the value head on the policy's detached states, or the critic adapter's pass
            values = token_values(learner.ac, mb, learner.rl.critic_sees_rewards, hidden)
            v_loss, v_stats = critic_loss(learner, mb, values)
            learner.backward(v_loss * share)
            stats.update(v_stats)
        _accumulate(sums, stats, share)
    sums = _explained_variance(merge_stats(dist.gather(sums)))
    sums["actor/tokens"] = float(dist.sum(learner.loss_mask(batch)[idx].sum()))  # under the actor loss
    sums["actor/grad_norm"] = learner.clip_and_step(learner.ac.policy_parameters(), learner.actor_opt)
    if learner.critic:
        sums["critic/grad_norm"] = learner.clip_and_step(learner.ac.critic_parameters(), learner.critic_opt)
    learner.scale_update()
    return sums


def actor_loss(
    learner: Learner, mb: RolloutBatch, hidden: torch.Tensor | None = None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The micro-batch's actor loss (policy gradient - entropy bonus + KL anchor) and its stats;
    `hidden` (B, T, H): the policy's last hidden states of `mb` with gradient, if already computed."""
    rl, mask = learner.rl, learner.loss_mask(mb)
    assert mb.old_log_prob is not None and mb.advantages is not None
    log_prob, entropy = learner.log_probs(mb, learner.params.rollout.temperature, entropy=True, hidden=hidden)
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
        st["ppo_kl"] = losses.masked_mean(losses.kl_penalty(mb.old_log_prob, log_prob.detach(), "k3"), mask)
    else:
        # rows are whole sequences here (minibatches split by episode), as sequence level needs
        weights = None if rl.rollout_is_level == "none" else is_weights(learner, mb)[0]
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
        kl_token = losses.kl_penalty(log_prob, mb.ref_log_prob, rl.kl_estimator)
        kl = losses.agg_loss(kl_token, learner.kl_mask(mb), rl.loss_agg_mode)
        loss = loss + rl.kl_coef * kl
        stats["actor/kl_loss"] = kl.detach()
    return loss, stats


def critic_loss(
    learner: Learner, mb: RolloutBatch, values: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The micro-batch's clipped value loss, its clip fraction and explained-variance moments;
    `values` (B, T): the critic's values of `mb` with gradient (`token_values`)."""
    assert mb.old_values is not None and mb.returns is not None
    rl = learner.rl
    loss, st = losses.value_loss(
        values, mb.old_values, mb.returns, mb.response_mask, rl.cliprange_value, rl.loss_agg_mode
    )
    moments = losses.ev_moments(values.detach(), mb.returns, mb.response_mask)
    return loss, {
        "critic/value_loss": loss.detach(),
        "critic/vf_clipfrac": st["vf_clipfrac"],
        **{f"{EV_MOMENT}{i}": m for i, m in enumerate(moments)},
    }


def critic_warmup(learner: Learner, batch: RolloutBatch) -> list[dict[str, float]]:
    """Critic-only steps on the base policy's first batch, each against returns from the critic's
    own values at that step. One forward per micro-batch serves both: its values, detached, are
    the step's old values (so the value clip is the identity, as it is for old values frozen
    just before the step) and give the returns (`raw_advantages`, per episode); the same values,
    with gradient, enter the loss. Same numbers as freezing first, one critic forward fewer.
    With rl.critic_trunk policy the policy's hidden states are read once, before the steps: the
    steps then run the value head alone."""
    out = []
    rl = learner.rl
    micros = learner.micro(batch, torch.arange(len(batch)))
    with torch.no_grad():  # rl.critic_trunk policy: the policy does not move here, so its features don't
        features = [learner.shared_trunk(batch.select(micro)) for micro in micros]
    for _ in range(rl.critic_warmup_steps):
        learner.critic_opt.zero_grad(set_to_none=True)
        total = learner.dist.sum(_weight(batch.response_mask, rl.loss_agg_mode))
        stats: dict[str, float] = {}
        for micro, hidden in zip(micros, features):
            mb = batch.select(micro)
            share = _weight(mb.response_mask, rl.loss_agg_mode) / max(total, 1e-12)
            values = token_values(learner.ac, mb, rl.critic_sees_rewards, hidden)
            mb.old_values = values.detach()
            with torch.no_grad():
                mb.returns = raw_advantages(learner, mb)[1]
            loss, st = critic_loss(learner, mb, values)
            learner.backward(loss * share)
            _accumulate(stats, st, share)
        learner.clip_and_step(learner.ac.critic_parameters(), learner.critic_opt)
        learner.scale_update()
        out.append(_explained_variance(merge_stats(learner.dist.gather(stats))))
    return out


def rft_update(learner: Learner, batch: RolloutBatch, u: int) -> list[dict[str, float]]:
    """SFT (masked NLL of the sampled tokens) on the update's successful episodes: rft_epochs x
    minibatches steps over them (fewer minibatches when there are fewer successes)."""
    rl, dist = learner.rl, learner.dist
    mine = batch.index[batch.terminal > 0].tolist()
    good = torch.tensor(sorted(g for part in dist.gather(mine) for g in part), dtype=torch.long)
    steps: list[dict[str, float]] = []
    if len(good) == 0:
        return steps
    gen = torch.Generator().manual_seed(hash_seed(learner.seed, u, -1))
    for epoch in range(rl.rft_epochs):
        order = good[torch.randperm(len(good), generator=gen)]
        for m, chunk in enumerate(order.chunk(min(rl.minibatches, len(good)))):
            idx = local_rows(batch, chunk)
            learner.actor_opt.zero_grad(set_to_none=True)
            total = dist.sum(learner.loss_mask(batch)[idx].sum())
            nll_sum = 0.0
            for micro in learner.micro(batch, idx):
                mb = batch.select(micro)
                log_prob, _ = learner.log_probs(mb, 1.0)
                nll = -(log_prob * learner.loss_mask(mb)).sum() / max(total, 1.0)
                learner.backward(nll)
                nll_sum += float(nll.detach())
            nll_sum = dist.sum(nll_sum)
            norm = learner.clip_and_step(learner.ac.policy_parameters(), learner.actor_opt)
            learner.scale_update()
            steps.append(
                {
                    "epoch": epoch,
                    "minibatch": m,
                    "actor/sft_nll": nll_sum,
                    "actor/grad_norm": norm,
                    "actor/tokens": float(total),
                }
            )
    return steps


def local_rows(batch: RolloutBatch, chunk: torch.Tensor) -> torch.Tensor:
    """Rows of this rank's batch whose global episode index is in `chunk`, in chunk order."""
    row = {int(g): r for r, g in enumerate(batch.index.tolist())}
    return torch.tensor([row[g] for g in chunk.tolist() if g in row], dtype=torch.long)


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
