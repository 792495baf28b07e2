"""GPPO trust regions: f-divergence geometry x estimator topology (pure kernels, no model code).

Source: "Generalized Proximal Policy Optimization: Unifying LLM RL Algorithms from the Perspective
of Divergence", arXiv 2610.13015 (its region and surrogate, restated in docs/design.md, "GPPO");
PPO clip conventions from Schulman et al. 2017 (eq. 7) and verl `compute_policy_loss`.

Shapes: B batch of sequences, T tokens. `log_prob`, `old_log_prob`, `response_mask` are (B, T);
`advantages` is (B, T) or broadcastable to it (e.g. (B, 1)). The mask (float or bool) is nonzero on
policy tokens; values at masked positions never reach an output or a gradient, even inf/nan.

Per token: r = exp(clamp(log_prob - old_log_prob, +-20)) (the clamp is verl's), mu = exp(old_log_prob)
= pi_old(sampled token), the behaviour probability. Integrands f (arXiv 2610.13015; docs/design.md):
    tv 1/2|r - 1|,  chi2 (r - 1)^2,  hellinger (sqrt(r) - 1)^2,  kl -log r (literal),
    two_sided_log |log r| (a separate setting for the paper's two-sided log/DAPO mapping, Sec. 3.4).
Estimator topology (MC uses f(r), atomic mu f(r); binary adds (1 - mu) f((1 - mu r)/(1 - mu))):
    mc      D = f(r)                          one-sample MC estimate of E_{pi_old}[f(r)]
    atomic  D = mu f(r)                       the sampled atom's own term of sum_y pi_old(y) f(r(y))
    binary  D = mu f(r) + (1 - mu) f((1 - mu r)/(1 - mu))
                                              exact D_f between {token, rest} two-point distributions
D is evaluated in perspective form q f(p / q) (p new mass, q old mass), which keeps mu -> 0 or 1
finite; for binary, r <= 1/mu (p_new <= 1) and the complement's new mass is clamped at 0.

Region R = {r > 0 : D(r) <= delta} and J = E[min(r A, clip_R(r) A)] (arXiv 2610.13015). Each
D is nonincreasing for r < 1 and nondecreasing for r > 1 with D(1) = 0, so R = [r_lo, r_hi] and
clip_R projects onto it. Per-token loss -min(r A, clip_R(r) A): -A r inside R and also outside R
when A (r - 1) < 0 (the gradient moves r back toward R); -A clip_R(r) with zero gradient when
A (r - 1) > 0 (it would go further out) -- PPO's rule (Schulman et al. 2017, eq. 7).

Consequences (derived from the definitions; tested): tv/mc is PPO's symmetric clip with eps = 2 delta
(1/2|r - 1| <= delta <=> r in [1 - 2 delta, 1 + 2 delta]); tv/atomic bounds |p_new - p_old| <= 2 delta;
tv/binary bounds |p_new - p_old| <= delta; two_sided_log/mc is the asymmetric (DAPO-like) clip
[e^-delta, e^delta]; literal kl/mc and kl/atomic are one-sided (-log r < 0 for r > 1): r >= e^-delta
(resp. e^(-delta/mu)) and no upper bound, the paper's literal KL of Eq. 16/18 disagreeing with its Sec. 3.4.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch

from pappo.rl.losses import LOG_RATIO_CLAMP, LOSS_AGG_MODES, LossAggMode, agg_loss

Geometry = Literal["tv", "chi2", "hellinger", "kl", "two_sided_log"]
Topology = Literal["mc", "atomic", "binary"]
GEOMETRIES = ("tv", "chi2", "hellinger", "kl", "two_sided_log")
TOPOLOGIES = ("mc", "atomic", "binary")
_LOG_R_MIN = -700.0  # e^-700 ~ 1e-304: lower end of the bisection bracket (float64)
_BISECT_STEPS = 64  # bracket width <= 700 in log r: 700 / 2^64 ~ 4e-17


class GPPOTokens(NamedTuple):
    """Per-token output of `gppo_token_loss`, all (B, T)."""

    loss: torch.Tensor  # -min(r A, clip_R(r) A); 0 at masked positions; carries the gradient
    in_region: torch.Tensor  # bool, policy token with D <= delta
    clipped: torch.Tensor  # bool, policy token outside R moving further out: gradient cut
    ratio: torch.Tensor  # detached r (1 at masked positions)
    divergence: torch.Tensor  # detached D(r; mu)


def _check_choice(geometry: str, topology: str) -> None:
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry={geometry!r} is unknown; use one of {GEOMETRIES}")
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology={topology!r} is unknown; use one of {TOPOLOGIES}")


def _check_delta(delta: float) -> None:
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool) and math.isfinite(delta)
    if not ok or delta <= 0:
        raise ValueError(f"delta={delta!r} must be a finite number > 0 (radius of the region D <= delta)")


def _perspective(p: torch.Tensor, q: torch.Tensor, geometry: str) -> torch.Tensor:
    """q f(p / q) for new mass p >= 0, old mass q >= 0, with its limit at q = 0 (0 when p = q = 0)."""
    pos = q > 0
    q1 = torch.where(pos, q, torch.ones_like(q))
    zero = torch.zeros_like(q)
    if geometry == "tv":
        return 0.5 * (p - q).abs()
    if geometry == "hellinger":
        return (p.sqrt() - q.sqrt()) ** 2
    if geometry == "chi2":
        return torch.where(pos, (p - q) ** 2 / q1, torch.where(p > 0, torch.full_like(p, math.inf), zero))
    log_r = torch.log(p) - torch.log(q1)  # -inf where p = 0
    if geometry == "kl":
        return torch.where(pos, -q * log_r, zero)
    return torch.where(pos, q * log_r.abs(), zero)  # two_sided_log


def gppo_divergence(
    ratio: torch.Tensor, p_old: torch.Tensor, geometry: Geometry, topology: Topology
) -> torch.Tensor:
    """Per-token divergence estimate D(r; mu) (module docstring), any matching shapes; not for autograd.

    ratio r = pi/pi_old of the sampled token, p_old mu = pi_old(token) in [0, 1] (clamped there).
    """
    _check_choice(geometry, topology)
    if topology == "mc":
        return _perspective(ratio, torch.ones_like(ratio), geometry)
    mu = p_old.to(ratio.dtype).clamp(0.0, 1.0)
    div = _perspective(mu * ratio, mu, geometry)
    if topology == "binary":
        div = div + _perspective((1.0 - mu * ratio).clamp_min(0.0), 1.0 - mu, geometry)
    return div


def _f_sublevel(level: torch.Tensor, geometry: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Closed-form {r > 0 : f(r) <= level}; r_lo = 0 when f stays below level as r -> 0."""
    s = level.sqrt()
    if geometry == "tv":
        return (1.0 - 2.0 * level).clamp_min(0.0), 1.0 + 2.0 * level
    if geometry == "chi2":
        return (1.0 - s).clamp_min(0.0), 1.0 + s
    if geometry == "hellinger":
        return (1.0 - s).clamp_min(0.0) ** 2, (1.0 + s) ** 2
    if geometry == "kl":
        return torch.exp(-level), torch.full_like(level, math.inf)
    return torch.exp(-level), torch.exp(level)  # two_sided_log


def _bisect_binary(mu: torch.Tensor, geometry: str, delta: float, upper: bool) -> torch.Tensor:
    """Boundary of the binary region on one side of r = 1, by bisection on u = log r (vectorised).

    The side is u in [0, -log mu] (upper; r <= 1/mu) or [_LOG_R_MIN, 0] (lower), where D is monotone
    with D(e^0) = 0. If D <= delta at the far end, the region reaches it: returns 1/mu or 0.
    """
    end = -torch.log(mu) if upper else torch.full_like(mu, _LOG_R_MIN)

    def inside(u: torch.Tensor) -> torch.Tensor:
        return gppo_divergence(torch.exp(u), mu, geometry, "binary") <= delta

    a, b = torch.zeros_like(mu), end  # a inside, b outside (unless the whole side is inside)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (a + b)
        ok = inside(mid)
        a, b = torch.where(ok, mid, a), torch.where(ok, b, mid)
    edge = 1.0 / mu if upper else torch.zeros_like(mu)
    return torch.where(inside(end), edge, torch.exp(a))


def _binary_interval(mu: torch.Tensor, geometry: str, delta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """[r_lo, r_hi] of the binary region within the domain (0, 1/mu]."""
    r_max = 1.0 / mu
    if geometry in ("tv", "chi2"):  # D = mu|r - 1| and D = mu (r - 1)^2 / (1 - mu)
        w = delta / mu if geometry == "tv" else torch.sqrt(delta * (1.0 - mu) / mu)
        return (1.0 - w).clamp_min(0.0), torch.minimum(1.0 + w, r_max)
    if geometry == "hellinger":  # D = 2 - 2 cos(phi - alpha), p_new = sin^2 phi, mu = sin^2 alpha
        alpha = torch.asin(mu.sqrt())
        beta = math.acos(max(-1.0, 1.0 - delta / 2.0))
        lo = torch.sin((alpha - beta).clamp_min(0.0)) ** 2 / mu
        hi = torch.where(alpha + beta >= math.pi / 2, r_max, torch.sin(alpha + beta) ** 2 / mu)
        return lo, hi
    return _bisect_binary(mu, geometry, delta, upper=False), _bisect_binary(mu, geometry, delta, upper=True)


def ratio_interval(
    p_old: torch.Tensor, geometry: Geometry, topology: Topology, delta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(r_lo, r_hi) with {r > 0 : D(r; p_old) <= delta} = [r_lo, r_hi], elementwise over p_old.

    Closed form (mc: f(r) <= delta; atomic: f(r) <= delta / mu; binary tv, chi2, hellinger), else
    bisection in float64 (binary kl, two_sided_log). r_lo = 0 when the region has no lower edge;
    r_hi = inf (mc, atomic) or 1/mu (binary, the largest feasible ratio) when it has no upper edge.
    Computed in float64, returned in p_old's dtype.
    """
    _check_choice(geometry, topology)
    _check_delta(delta)
    mu = p_old.detach().to(torch.float64).clamp(torch.finfo(torch.float64).tiny, 1.0)
    if topology == "binary":
        lo, hi = _binary_interval(mu, geometry, float(delta))
    else:
        level = torch.full_like(mu, float(delta)) if topology == "mc" else delta / mu
        lo, hi = _f_sublevel(level, geometry)
    return lo.to(p_old.dtype), hi.to(p_old.dtype)


def _check_shapes(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, response_mask: torch.Tensor
) -> None:
    shape = log_prob.shape
    if log_prob.dim() != 2 or old_log_prob.shape != shape or response_mask.shape != shape:
        raise ValueError(
            f"log_prob {tuple(shape)}, old_log_prob {tuple(old_log_prob.shape)}, response_mask "
            f"{tuple(response_mask.shape)} must all be the same (B, T)"
        )
    try:
        ok = torch.broadcast_shapes(advantages.shape, shape) == shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"advantages {tuple(advantages.shape)} must be (B, T) = {tuple(shape)} or broadcast to it"
        )


def gppo_token_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    geometry: Geometry,
    topology: Topology,
    delta: float,
) -> GPPOTokens:
    """Trust-region mask and clipped per-token surrogate (module docstring) -> GPPOTokens, all (B, T).

    old_log_prob and advantages are detached; the gradient flows to log_prob only, through tokens
    not in `clipped`. Computed in at least float32.
    """
    _check_choice(geometry, topology)
    _check_delta(delta)
    _check_shapes(log_prob, old_log_prob, advantages, response_mask)
    on = response_mask != 0
    dtype = torch.promote_types(log_prob.dtype, torch.float32)
    zero = torch.zeros((), dtype=dtype, device=log_prob.device)
    lp = torch.where(on, log_prob.to(dtype), zero)
    old = torch.where(on, old_log_prob.detach().to(dtype), zero)
    adv = torch.where(on, advantages.detach().to(dtype), zero)
    ratio = torch.exp((lp - old).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
    with torch.no_grad():
        r, mu = ratio.detach(), old.exp()
        div = gppo_divergence(r, mu, geometry, topology)
        outside = on & ~(div <= delta)  # nan counts as outside
        clipped = outside & (adv * (r - 1.0) > 0)
        r_lo, r_hi = ratio_interval(mu, geometry, topology, delta)
        bound = torch.where(r > 1.0, r_hi, r_lo)  # clip_R(r) for a clipped token
    loss = torch.where(clipped, -adv * bound, -adv * ratio)
    return GPPOTokens(torch.where(on, loss, zero), on & ~outside, clipped, r, div)


def gppo_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    geometry: Geometry,
    topology: Topology,
    delta: float,
    loss_agg_mode: LossAggMode = "token-mean",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """GPPO clipped surrogate aggregated over policy tokens -> (loss to minimise, stats).

    Stats (detached 0-dim tensors, over policy tokens): `pg_clipfrac` share whose gradient was cut,
    `outside_frac` share outside the region (either direction), `ratio_min`, `ratio_max` (1 when
    there is no policy token, as are the fractions 0).
    """
    if loss_agg_mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode={loss_agg_mode!r} is unknown; use one of {LOSS_AGG_MODES}")
    tok = gppo_token_loss(log_prob, old_log_prob, advantages, response_mask, geometry, topology, delta)
    on = response_mask != 0
    loss = agg_loss(tok.loss, on, loss_agg_mode)
    with torch.no_grad():
        r, one = tok.ratio, torch.ones((), dtype=tok.ratio.dtype, device=tok.ratio.device)
        count = on.sum().clamp_min(1).to(r.dtype)
        stats = {
            "pg_clipfrac": tok.clipped.sum().to(r.dtype) / count,
            "outside_frac": (on & ~tok.in_region).sum().to(r.dtype) / count,
            "ratio_min": torch.where(on.any(), torch.where(on, r, math.inf).min(), one),
            "ratio_max": torch.where(on.any(), torch.where(on, r, -math.inf).max(), one),
        }
    return loss, stats
