"""Sampler/trainer mismatch: how far the rollout's log-probs are from the trainer's, and the
importance weights that correct the PPO loss for it (tensors and masks in, tensors out).

The rollout decoder (policy/decoder.py) and the trainer's forward compute log pi of the same
sampled ids with different kernels; in bf16 they differ by ~0.05 nats per token at 7B. The
trainer's old log-probs (recomputed at freeze, as verl does) make the first PPO ratio exactly 1,
so the clip never sees that gap: each update is silently off-policy by exp(old - sampler).
Yao et al. 2025 (FlashRL, "Your efficient RL framework secretly brings you off-policy RL
training") weight the loss by the truncated ratio (TIS); Liu, Li et al. 2025 ("When speed kills
stability") mask sequences whose ratio leaves a band (MIS). Semantics and knob names follow verl's
rollout importance sampling (`verl/trainer/ppo/mismatch_helper.py`,
`compute_rollout_importance_weights`; docs/advance/rollout_is.md): `rollout_is_level`,
`rollout_is_mode`, `rollout_is_threshold`, lower bound 1 / threshold (verl's default reciprocal).

Shapes: B sequences, T tokens. `mask` (B, T): the tokens whose two log-probs are comparable (the
same distribution on both sides); elsewhere a token's weight is 1 (token level) or its row's
weight (sequence level). Weights are detached: no gradient flows through them.
"""

from __future__ import annotations

from typing import Literal

import torch

RolloutIsLevel = Literal["none", "token", "sequence"]
RolloutIsMode = Literal["truncate", "mask"]
LOG_RATIO_CLAMP = 20.0  # verl's safety bound on log ratios before exp (no inf)
LARGE_GAP = 0.1  # nats: `logprob_gap_frac_large` counts tokens whose |gap| exceeds it


def rollout_is_weights(
    old_log_prob: torch.Tensor,
    sampler_log_prob: torch.Tensor,
    mask: torch.Tensor,
    level: RolloutIsLevel,
    mode: RolloutIsMode,
    threshold: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Importance weights (B, T) of the trainer's policy over the sampler's, and which ratios fell
    above `threshold` (high) or below 1 / threshold (low), (B, T) bool each, on `mask` only.

    With d_t = old_log_prob_t - sampler_log_prob_t on masked tokens (0 elsewhere), C = threshold:
        token:     rho_t = exp(d_t)               (one ratio per token)
        sequence:  rho_t = exp(sum_s d_s)         (the row's ratio, on every token of the row)
    log rho is clamped to [-20, 20] before exp. Then
        truncate:  w = min(rho, C)                               (TIS; no lower bound, as verl)
        mask:      w = rho if 1/C <= rho <= C else 0              (MIS; rejected rows weigh 0)
    Token level: w = 1 off the mask. level "none" gives w = 1 everywhere and nothing cut.
    verl's mask mode removes rejected tokens from the loss denominator; here they stay in it with
    weight 0, so a rejection scales the rest of the minibatch by the kept share (same direction).
    """
    if not threshold > 1.0:
        raise ValueError(f"rollout_is_threshold={threshold}: the cap C must be > 1 (2.0 is usual)")
    on = mask != 0
    zero = torch.zeros((), dtype=old_log_prob.dtype, device=old_log_prob.device)
    if level == "none":
        return torch.ones_like(old_log_prob), torch.zeros_like(on), torch.zeros_like(on)
    d = torch.where(on, old_log_prob.detach() - sampler_log_prob.detach(), zero)  # (B, T)
    if level == "sequence":
        d = d.sum(-1, keepdim=True).expand_as(d)  # (B, T): the row's log ratio everywhere
        on = on.any(-1, keepdim=True).expand_as(on)  # rows with a comparable token
    elif level != "token":
        raise ValueError(f"rollout_is_level={level!r} is unknown; use 'none', 'token' or 'sequence'")
    rho = torch.exp(d.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    high, low = on & (rho > threshold), on & (rho < 1.0 / threshold)
    if mode == "truncate":
        w, low = rho.clamp(max=threshold), torch.zeros_like(low)
    elif mode == "mask":
        w = torch.where(high | low, zero, rho)
    else:
        raise ValueError(f"rollout_is_mode={mode!r} is unknown; use 'truncate' or 'mask'")
    if level == "token":
        w = torch.where(on, w, torch.ones_like(w))
    return w.detach(), high, low


def logprob_gap_sums(
    old_log_prob: torch.Tensor, sampler_log_prob: torch.Tensor, mask: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Sums that add up across ranks to the gap statistics: (B, T) in, 0-dim tensors out, plus
    the masked |gap| values (M,) for the percentile. `n` tokens, `sum` and `max` of |gap|, `large`
    the count with |gap| > LARGE_GAP. |gap| = |old_log_prob - sampler_log_prob|."""
    on = mask != 0
    gap = (old_log_prob.detach() - sampler_log_prob.detach()).abs()
    weighted = gap * mask.to(gap.dtype)  # sum and max as the trainer always took them (|gap| >= 0)
    picked = gap[on]  # (M,)
    return {
        "n": on.sum().to(gap.dtype),
        "sum": weighted.sum(),
        "max": weighted.max() if weighted.numel() else weighted.sum(),
        "large": (picked > LARGE_GAP).sum().to(gap.dtype),
        "values": picked,
    }


def percentile(values: torch.Tensor, q: float) -> float:
    """The q-quantile (0..1) of a 1-D tensor, linear interpolation as numpy's default; 0 if empty."""
    if values.numel() == 0:
        return 0.0
    return float(torch.quantile(values.to(torch.float64), q))
