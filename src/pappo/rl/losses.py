"""Loss kernels of the PPO family: tensors and masks in, tensors out (no model, no config).

Shapes: B batch of sequences, T tokens, V vocabulary. `response_mask` is (B, T), float or bool:
nonzero on policy tokens; prompt, tool/env output and padding tokens are 0, and may sit in the
middle of a row. Values at masked positions never reach an output or a gradient, even inf/nan
(inputs are replaced by 0 there with `torch.where`, whose backward gives them exactly 0).

Knobs are named as verl names them (`verl/trainer/ppo/core_algos.py`): `clip_ratio_low`,
`clip_ratio_high`, `clip_ratio_c`, `cliprange_value`, `loss_agg_mode`. Every loss is a quantity to
*minimise*. Stats are detached 0-dim tensors (no `.item()`, so no device sync here).
"""

from __future__ import annotations

from typing import Literal

import torch

LossAggMode = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean")
KlEstimator = Literal["k1", "k2", "k3"]
LOG_RATIO_CLAMP = 20.0  # verl clamps log pi/pi_old to [-20, 20] before exp (no inf, no overflow)
K3_CLAMP = 10.0  # verl clamps the k3 ("low_var_kl") estimate to [-10, 10]


def _on(mask: torch.Tensor) -> torch.Tensor:
    """Bool (B, T): the policy tokens of a float or bool mask."""
    return mask != 0


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """sum(x * mask) over `dim` (all dims when None); x and mask broadcastable, e.g. both (B, T)."""
    m = mask.to(x.dtype)
    picked = torch.where(_on(mask), x * m, torch.zeros((), dtype=x.dtype, device=x.device))
    return picked.sum() if dim is None else picked.sum(dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """sum(x * mask) / sum(mask) over `dim`; 0 where the mask is all zero (graph kept, grad 0)."""
    num = masked_sum(x, mask, dim)
    den = masked_sum(torch.ones_like(x), mask, dim).detach()
    return num / torch.where(den > 0, den, torch.ones_like(den))


def agg_loss(
    loss_mat: torch.Tensor, mask: torch.Tensor, loss_agg_mode: LossAggMode = "token-mean"
) -> torch.Tensor:
    """Reduce a per-token loss (B, T) over the masked tokens to a scalar (verl `agg_loss`).

    - token-mean: sum(loss * mask) / sum(mask); every policy token weighs the same.
    - seq-mean-token-sum: mean over rows of sum_t(loss * mask) (long rows weigh more).
    - seq-mean-token-mean: mean over rows of the row's masked mean (GRPO paper).

    Rows with no policy token are left out of the seq modes (not counted as a 0 loss). An all-zero
    mask gives 0.0, still connected to `loss_mat` so `backward()` works (grads are 0).
    """
    if loss_agg_mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode={loss_agg_mode!r} is unknown; use one of {LOSS_AGG_MODES}")
    if loss_agg_mode == "token-mean":
        return masked_mean(loss_mat, mask)
    if loss_agg_mode == "seq-mean-token-sum":
        per_seq = masked_sum(loss_mat, mask, dim=-1)  # (B,)
    else:
        per_seq = masked_mean(loss_mat, mask, dim=-1)  # (B,)
    rows = _on(mask).any(dim=-1)  # (B,) rows with at least one policy token
    return masked_mean(per_seq, rows)


def policy_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.2,
    clip_ratio_c: float | None = None,
    loss_agg_mode: LossAggMode = "token-mean",
    rollout_is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate with optional dual clip -> (loss, stats); verl `compute_policy_loss`.

    log_prob, old_log_prob (B, T) log pi of the sampled tokens; advantages (B, T) or broadcastable
    (e.g. (B, 1)); old_log_prob and advantages are detached. With r = exp(clamp(logp - old, +-20)):
        pg = max(-A * r, -A * clip(r, 1 - clip_ratio_low, 1 + clip_ratio_high))   (Schulman et al. 2017)
        pg = min(pg, -A * clip_ratio_c)  where A < 0, if clip_ratio_c is set     (dual clip, Ye et al. 2020)
    The clip bounds are checked where they are set (`pappo.config.rl.RLParams`: low, high >= 0,
    clip_ratio_c > 1). The clamp stops gradient for |log r| > 20 (as in verl). `rollout_is_weights` (B, T), detached
    (`mismatch.rollout_is_weights`): each token's pg is multiplied by its weight before aggregation,
    as verl's `compute_policy_loss` does; None leaves the loss untouched (not even a multiply by 1).

    Stats, over masked tokens: `pg_clipfrac` share where the clipped branch is strictly larger
    (gradient 0); `clipfrac_high` r > 1 + high with A > 0 and `clipfrac_low` r < 1 - low with A < 0
    (these two sum to pg_clipfrac wherever A != 0); `pg_clipfrac_lower` share where the dual clip
    binds; `ppo_kl` the k3 estimate of KL(pi_old || pi), mean(r - 1 - log r) >= 0 (Schulman,
    "Approximating KL divergence"; verl logs k1, mean(-log r), which can be negative);
    `ratio_min`, `ratio_max`. With no policy token the fractions and ppo_kl are 0, ratio_min/max 1.
    """
    on = _on(response_mask)
    zero = torch.zeros((), dtype=log_prob.dtype, device=log_prob.device)
    log_ratio = torch.where(on, log_prob - old_log_prob.detach(), zero).clamp(
        -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP
    )
    adv = torch.where(on, advantages.detach().to(log_prob.dtype), zero)
    ratio = torch.exp(log_ratio)
    clipped_ratio = ratio.clamp(1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    pg_losses1, pg_losses2 = -adv * ratio, -adv * clipped_ratio
    pg_losses = torch.maximum(pg_losses1, pg_losses2)
    dual = torch.zeros_like(on)
    if clip_ratio_c is not None:
        pg_losses3 = -adv * clip_ratio_c
        dual = (adv < 0) & (pg_losses > pg_losses3)
        pg_losses = torch.where(adv < 0, torch.minimum(pg_losses, pg_losses3), pg_losses)
    if rollout_is_weights is not None:
        pg_losses = pg_losses * torch.where(on, rollout_is_weights.detach().to(pg_losses.dtype), zero)
    loss = agg_loss(pg_losses, response_mask, loss_agg_mode)
    with torch.no_grad():
        one = torch.ones((), dtype=ratio.dtype, device=ratio.device)
        stats = {
            "pg_clipfrac": masked_mean((pg_losses2 > pg_losses1).to(ratio.dtype), on),
            "pg_clipfrac_lower": masked_mean(dual.to(ratio.dtype), on),
            "clipfrac_high": masked_mean(((ratio > 1.0 + clip_ratio_high) & (adv > 0)).to(ratio.dtype), on),
            "clipfrac_low": masked_mean(((ratio < 1.0 - clip_ratio_low) & (adv < 0)).to(ratio.dtype), on),
            "ppo_kl": masked_mean(ratio - 1.0 - log_ratio, on),
            "ratio_min": torch.where(on.any(), torch.where(on, ratio, torch.inf).min(), one),
            "ratio_max": torch.where(on.any(), torch.where(on, ratio, -torch.inf).max(), one),
        }
    return loss, stats


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    response_mask: torch.Tensor,
    cliprange_value: float | None = None,
    loss_agg_mode: LossAggMode = "token-mean",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(Clipped) value regression -> (loss, {"vf_clipfrac"}); verl `compute_value_loss`, PPO2.

    values (B, T) the critic now; old_values (B, T) the critic at sampling time; returns (B, T) the
    value targets (old_values and returns are detached). With c = cliprange_value:
        vf = 0.5 * max((v - R)^2, (clip(v, old - c, old + c) - R)^2),   or 0.5 * (v - R)^2 if c is None
    aggregated by `loss_agg_mode`. `vf_clipfrac`: share of masked tokens where the clipped branch is
    strictly larger (0 without clipping). c > 0 is checked where it is set (`pappo.config.rl.RLParams`).
    """
    on = _on(response_mask)
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    v = torch.where(on, values, zero)
    old = torch.where(on, old_values.detach().to(values.dtype), zero)
    ret = torch.where(on, returns.detach().to(values.dtype), zero)
    vf_losses1 = (v - ret) ** 2
    vf_losses = vf_losses1
    clipfrac = torch.zeros((), dtype=values.dtype, device=values.device)
    if cliprange_value is not None:
        v_clipped = torch.maximum(torch.minimum(v, old + cliprange_value), old - cliprange_value)
        vf_losses2 = (v_clipped - ret) ** 2
        vf_losses = torch.maximum(vf_losses1, vf_losses2)
        clipfrac = masked_mean((vf_losses2 > vf_losses1).to(values.dtype), on).detach()
    return 0.5 * agg_loss(vf_losses, response_mask, loss_agg_mode), {"vf_clipfrac": clipfrac}


def kl_penalty(
    log_prob: torch.Tensor, ref_log_prob: torch.Tensor, estimator: KlEstimator = "k3"
) -> torch.Tensor:
    """Per-token estimate (B, T) of KL(pi || pi_ref) from tokens sampled by pi; verl `kl_penalty`.

    With d = log_prob - ref_log_prob (Schulman, "Approximating KL divergence", 2020):
    k1 = d (unbiased, can be < 0); k2 = 0.5 * d^2; k3 = exp(-d) + d - 1 (unbiased, >= 0), computed as
    verl does: -d clamped to [-20, 20] before exp, the result clamped to [-10, 10]. No mask is
    applied: aggregate with `agg_loss(kl, response_mask, ...)`.
    """
    d = log_prob - ref_log_prob
    if estimator == "k1":
        return d
    if estimator == "k2":
        return 0.5 * d.square()
    if estimator == "k3":
        neg = (-d).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)  # log(pi_ref / pi)
        return (torch.exp(neg) - neg - 1.0).clamp(-K3_CLAMP, K3_CLAMP)
    raise ValueError(f"estimator={estimator!r} is unknown; use 'k1', 'k2' or 'k3'")


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (B, T) of the categorical softmax(logits), logits (B, T, V): -sum_v p log p.

    Computed in the logits' dtype. Tokens with logit -inf (p = 0) contribute 0, with a finite grad.
    """
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(dim=-1)


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1 - Var(returns - values) / Var(returns) over the masked tokens -> 0-dim tensor (detached).

    values, returns, mask (B, T). Population variances (the Bessel factor cancels in the ratio).
    1 is a perfect critic, 0 no better than the mean return, < 0 worse. When Var(returns) is 0
    (all targets equal, fewer than two policy tokens, no policy token) it is undefined and NaN is
    returned, never an error and never a made-up 0: skip NaN when averaging. "Is 0" means at most
    rounding noise, Var <= (8 eps)^2 * (mean(returns^2) + mean((returns - values)^2)) for the
    dtype's eps: equal returns such as three 0.1s give a mean off by an ulp and a variance of
    ~1e-34, and returns computed as advantage + value with every outcome 0 are pure rounding noise
    of the values' size (eps * |V|, and |V| <= |R| + |R - V|); either would otherwise yield
    EV ~ -1e12 or less (verl adds 1e-5 to the denominator, which turns this case into a large
    negative number).
    """
    return explained_variance_from_moments(ev_moments(values, returns, mask), values.dtype)


def ev_moments(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(n, sum r, sum r^2, sum d, sum d^2) over the masked tokens, d = returns - values, float64
    (5,): sums that add up across micro-batches and ranks to the whole minibatch's."""
    with torch.no_grad():
        w = mask.to(torch.float64)
        r = returns.to(torch.float64) * w
        d = (returns.to(torch.float64) - values.to(torch.float64)) * w
        return torch.stack([w.sum(), r.sum(), (r * r).sum(), d.sum(), (d * d).sum()])


def explained_variance_from_moments(m: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """`explained_variance` from summed `ev_moments` (5,); NaN where undefined, as there. The
    rounding-noise test counts Var(returns) <= floor * (mean(r^2) + mean((r - v)^2)) as 0, with
    floor the larger of `dtype`'s (8 eps)^2 (the dtype the values were computed in) and the
    float64 noise of the one-pass variance, 64 eps64."""
    n, sr, sr2, sd, sd2 = m.to(torch.float64).unbind()
    n = n.clamp(min=1.0)
    var_r = (sr2 / n - (sr / n) ** 2).clamp(min=0.0)
    var_d = (sd2 / n - (sd / n) ** 2).clamp(min=0.0)
    # one-pass variances carry ~eps64 * mean(r^2) of rounding noise: that floor too
    floor = max((8 * torch.finfo(dtype).eps) ** 2, 64 * torch.finfo(torch.float64).eps)
    defined = var_r > floor * (sr2 + sd2) / n
    nan = torch.full((), float("nan"), dtype=torch.float64, device=m.device)
    return torch.where(defined, 1.0 - var_d / torch.where(defined, var_r, 1.0), nan).to(dtype)
