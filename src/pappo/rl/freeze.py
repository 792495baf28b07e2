"""The freeze: what an update holds fixed before its first optimizer step, computed once.

Old log-probs (the trainer's forward on the exact sampled ids), reference log-probs (with a KL
anchor), old values (critic methods), then each method's advantages and returns:
- grpo: group-relative advantages of the outcome, broadcast to every policy token; no critic.
- ppo: token-level GAE of the outcome with the critic.
- pappo: turn-level GAE with the critic over turn rewards = outcome at the last turn plus
  `local_prior` x the environment's patch-aware process rewards; a turn's advantage goes to all
  of its tokens.
(rft learns from successes alone and freezes nothing.) Also the freeze's record: how far the
sampler's log-probs are from the frozen ones (`mismatch.py`) and the mean advantage. Whitening,
the gap statistics and the mean are over every rank's tokens. Shapes: B episodes, T tokens, N turns.
"""

from __future__ import annotations

import torch

from pappo.rl import advantages as adv_k
from pappo.rl.batch import RolloutBatch, reference_log_probs, token_values
from pappo.rl.learner import Learner
from pappo.rl.mismatch import logprob_gap_sums, percentile, rollout_is_weights


@torch.no_grad()
def freeze(learner: Learner, batch: RolloutBatch) -> dict[str, float]:
    """Set the batch's old log-probs, reference log-probs, old values, advantages and returns;
    returns the freeze's record (`mismatch_stats` and `critic/advantages_mean`)."""
    rl, temp = learner.rl, learner.params.rollout.temperature
    parts: dict[str, list[torch.Tensor]] = {"old": [], "ref": [], "val": []}
    width = batch.input_ids.shape[1]
    micros = learner.micro(batch, torch.arange(len(batch)))
    for idx in micros:
        mb = batch.select(idx)
        hidden = learner.shared_trunk(mb)
        parts["old"].append(_pad(learner.log_probs(mb, temp, hidden=hidden)[0], width))
        if rl.kl_coef > 0:
            parts["ref"].append(_pad(reference_log_probs(learner.ac, mb, temp, learner.choices), width))
        if learner.critic:
            parts["val"].append(_pad(token_values(learner.ac, mb, rl.critic_sees_rewards, hidden), width))
    back = torch.argsort(torch.cat(micros))  # the batch's row order (rl.use_dynamic_bsz sorts rows)
    batch.old_log_prob = torch.cat(parts["old"])[back]
    batch.ref_log_prob = torch.cat(parts["ref"])[back] if parts["ref"] else None
    batch.old_values = (
        torch.cat(parts["val"])[back] if parts["val"] else torch.zeros_like(batch.response_mask)
    )
    batch.advantages, batch.returns = advantages(learner, batch)
    mask, d = learner.gap_mask(batch), learner.dist
    n = max(d.sum(mask.sum()), 1.0)
    adv_mean = d.sum((batch.advantages * mask).sum()) / n
    return {**mismatch_stats(learner, batch), "critic/advantages_mean": adv_mean}


def advantages(learner: Learner, b: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), (B, T), for the method; 0 off the policy tokens."""
    a, ret = raw_advantages(learner, b)
    if learner.rl.whiten_advantages:
        a = _whiten(learner, a, learner.loss_mask(b))
    return a, ret


def raw_advantages(learner: Learner, b: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages before whitening, returns), (B, T): each episode's alone (no collective), so a
    micro-batch's returns are those the whole batch would give its episodes."""
    rl, mask = learner.rl, b.response_mask
    if learner.method == "grpo":
        a = adv_k.grpo_advantages(b.terminal, b.group, norm_by_std=rl.grpo_norm_by_std)  # (B,)
        return a[:, None] * mask, torch.zeros_like(mask)
    assert b.old_values is not None
    if learner.method == "ppo":
        rewards = adv_k.terminal_token_rewards(b.terminal, mask)
        a, ret = adv_k.token_gae(rewards, b.old_values, mask, rl.gamma, rl.lam)
    else:  # pappo
        n = b.turn_mask.shape[1]
        rewards = adv_k.pappo_turn_rewards(b.terminal, b.process, b.turn_mask, rl.local_prior)  # (B, N)
        turn_v = adv_k.turn_values_from_tokens(b.old_values, b.turn_index, mask, n)  # (B, N)
        a_n, ret_n = adv_k.turn_gae(rewards, turn_v, b.turn_mask, rl.gamma, rl.lam)
        a = adv_k.broadcast_turns(a_n, b.turn_index, mask)
        ret = adv_k.broadcast_turns(ret_n, b.turn_index, mask)
    return a, ret


def _whiten(learner: Learner, a: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`advantages.masked_whiten` over the policy tokens of EVERY rank: its kernel
    `whiten_with_moments` fed the global mean and unbiased variance; unchanged with fewer than
    2 tokens in all."""
    d, on = learner.dist, mask.bool()
    n = d.sum(on.sum())
    if n < 2:
        return a
    zero = torch.zeros((), dtype=a.dtype, device=a.device)
    mean = d.all_reduce(torch.where(on, a, zero).sum()) / n
    # two passes, as masked_whiten: the global mean first, then squared deviations from it
    var = d.all_reduce(torch.where(on, (a - mean) ** 2, zero).sum()) / (n - 1)
    return adv_k.whiten_with_moments(a, on, mean, var)


def mismatch_stats(learner: Learner, batch: RolloutBatch) -> dict[str, float]:
    """How far the sampler's log-probs are from the frozen old ones, over every rank's comparable
    tokens (`gap_mask`): mean, p99, max |gap| and the share above `mismatch.LARGE_GAP`; with
    rl.rollout_is_level set, the correction's mean weight and the share of ratios above C and
    below 1/C (tokens, or sequences at sequence level; `below` binds in mask mode only)."""
    assert batch.old_log_prob is not None
    d, mask = learner.dist, learner.gap_mask(batch)
    g = logprob_gap_sums(batch.old_log_prob, batch.sampler_log_prob, mask)
    n = max(d.sum(g["n"]), 1.0)
    values = torch.cat([v.to(torch.float64) for v in d.gather(g["values"].cpu())])
    out = {
        "rollout/logprob_gap_mean": d.sum(g["sum"]) / n,
        "rollout/logprob_gap_p99": percentile(values, 0.99),
        "rollout/logprob_gap_max": float(d.all_reduce(g["max"], "max")),
        "rollout/logprob_gap_frac_large": d.sum(g["large"]) / n,
    }
    rl = learner.rl
    if rl.rollout_is_level == "none":
        return out
    w, high, low = is_weights(learner, batch)
    unit = mask != 0
    if rl.rollout_is_level == "sequence":  # one weight per sequence: count rows with a comparable token
        unit, w, high, low = unit.any(-1), w[:, 0], high[:, 0], low[:, 0]
    units = max(d.sum(unit.sum()), 1.0)
    out["rollout/rollout_is_mean"] = d.sum(w[unit].sum()) / units
    out["rollout/rollout_is_fraction_high"] = d.sum(high.sum()) / units
    out["rollout/rollout_is_fraction_low"] = d.sum(low.sum()) / units
    return out


def is_weights(learner: Learner, b: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`mismatch.rollout_is_weights` of the frozen old log-probs over the sampler's (B, T), on the
    tokens whose two log-probs are comparable (`gap_mask`); weight 1 on the others."""
    assert b.old_log_prob is not None
    rl = learner.rl
    return rollout_is_weights(
        b.old_log_prob,
        b.sampler_log_prob,
        learner.gap_mask(b),
        rl.rollout_is_level,
        rl.rollout_is_mode,
        rl.rollout_is_threshold,
    )


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    """(B, t) right-padded with zeros to (B, width)."""
    return torch.nn.functional.pad(x, (0, width - x.shape[1]))
