"""GPPO trust regions (src/pappo/rl/gppo.py): divergence, region boundary, clipped surrogate, inputs."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.rl.gppo import (
    GEOMETRIES,
    LOSS_AGG_MODES,
    TOPOLOGIES,
    gppo_divergence,
    gppo_loss,
    gppo_token_loss,
    ratio_interval,
)

COMBOS = [(g, t) for g in GEOMETRIES for t in TOPOLOGIES]
F64 = torch.float64
MUS = [0.05, 0.3, 0.7, 0.95]
DELTAS = [0.02, 0.2]

# --- independent scalar reference (arXiv 2610.13015; docs/design.md, GPPO) -----------------------

F = {
    "tv": lambda r: 0.5 * abs(r - 1.0),
    "chi2": lambda r: (r - 1.0) ** 2,
    "hellinger": lambda r: (math.sqrt(r) - 1.0) ** 2,
    "kl": lambda r: -math.log(r) if r > 0 else math.inf,
    "two_sided_log": lambda r: abs(math.log(r)) if r > 0 else math.inf,
}


def naive_div(r: float, mu: float, geometry: str, topology: str) -> float:
    f = F[geometry]
    if topology == "mc":
        return f(r)
    if topology == "atomic":
        return mu * f(r)
    return mu * f(r) + (1.0 - mu) * f(max(1.0 - mu * r, 0.0) / (1.0 - mu))


def naive_boundary(r: float, mu: float, geometry: str, topology: str, delta: float) -> float:
    """Edge of the region between 1 (inside) and r (outside), by scalar bisection in r."""
    a, b = 1.0, r
    for _ in range(200):
        m = 0.5 * (a + b)
        a, b = (m, b) if naive_div(m, mu, geometry, topology) <= delta else (a, m)
    return a


def naive_gppo(lp, old, adv, mask, geometry, topology, delta, mode):
    """Per-token Python loop: (loss, d loss / d log_prob as nested lists, clipfrac, ratios)."""
    B, T = len(lp), len(lp[0])
    weights = [[0.0] * T for _ in range(B)]
    n_rows = [sum(row) for row in mask]
    total, rows = sum(n_rows), sum(1 for n in n_rows if n)
    for b in range(B):
        for t in range(T):
            if mask[b][t]:
                w = {
                    "token-mean": 1.0 / total,
                    "seq-mean-token-sum": 1.0 / rows,
                    "seq-mean-token-mean": 1.0 / (rows * n_rows[b]),
                }[mode]
                weights[b][t] = w
    loss, grad, clipped, ratios = 0.0, [[0.0] * T for _ in range(B)], 0, []
    for b in range(B):
        for t in range(T):
            if not mask[b][t]:
                continue
            r, mu, a = math.exp(lp[b][t] - old[b][t]), math.exp(old[b][t]), adv[b][t]
            ratios.append(r)
            if naive_div(r, mu, geometry, topology) > delta and a * (r - 1.0) > 0:
                clipped += 1
                loss += weights[b][t] * -a * naive_boundary(r, mu, geometry, topology, delta)
            else:
                loss += weights[b][t] * -a * r
                grad[b][t] = weights[b][t] * -a * r
    return loss, grad, clipped / max(total, 1), ratios


def one_token_grad(r: float, mu: float, adv: float, geometry: str, topology: str, delta: float):
    """(gradient of gppo_loss w.r.t. log_prob, in_region) for a single policy token with ratio r."""
    old = torch.tensor([[math.log(mu)]], dtype=F64)
    lp = (old + math.log(r)).requires_grad_(True)
    tok = gppo_token_loss(
        lp, old, torch.tensor([[adv]], dtype=F64), torch.ones(1, 1), geometry, topology, delta
    )
    tok.loss.sum().backward()  # one token: the token-mean loss
    return lp.grad.item(), bool(tok.in_region.item())


# --- (a) D(1) = 0, D >= 0 ------------------------------------------------------------------------


@pytest.mark.parametrize("geometry,topology", COMBOS)
def test_divergence_zero_at_one_and_nonnegative(geometry, topology):
    mu = torch.tensor(MUS, dtype=F64)[:, None]
    r_max = (1.0 / mu) if topology == "binary" else torch.full_like(mu, 50.0)
    r = torch.linspace(1e-3, 1.0, 200, dtype=F64)[None, :] * r_max  # (4, 200) feasible ratios
    d = gppo_divergence(r, mu.expand_as(r), geometry, topology)
    assert torch.equal(gppo_divergence(torch.ones_like(mu), mu, geometry, topology), torch.zeros_like(mu))
    if geometry == "kl" and topology != "binary":
        # literal kl integrand -log r (arXiv 2610.13015): negative for r > 1, so the region is one-sided
        assert (d[r <= 1] >= 0).all() and (d[r > 1] < 0).all()
        expected = -torch.log(r) * (1.0 if topology == "mc" else mu)
        torch.testing.assert_close(d, expected.expand_as(d))
    else:
        assert (d >= 0).all() and (d[(r - 1).abs() > 1e-3] > 0).all()


# --- (b) region boundary: D(r_hi) = D(r_lo) = delta; gradient just inside / outside ---------------


def _check_edge(edge, mu, geometry, topology, delta, upper):
    """Equation and gradient checks on one edge of the region (r_hi when upper, else r_lo)."""
    div = gppo_divergence(torch.tensor(edge, dtype=F64), torch.tensor(mu, dtype=F64), geometry, topology)
    torch.testing.assert_close(div.item(), delta, rtol=1e-6, atol=1e-9)
    r_in, r_out = (edge * (1 - 1e-4), edge * (1 + 1e-4)) if upper else (edge * (1 + 1e-4), edge * (1 - 1e-4))
    assert (r_in > 1.0) if upper else (r_in < 1.0)
    push_out = 1.0 if upper else -1.0  # the advantage sign that moves r further out on this side
    for adv in (push_out, -push_out):
        g, inside = one_token_grad(r_in, mu, adv, geometry, topology, delta)
        assert inside and g == pytest.approx(-adv * r_in, rel=1e-9)  # token-mean of 1 token: d(-A r)/dlogp
    g, inside = one_token_grad(r_out, mu, push_out, geometry, topology, delta)
    assert not inside and g == 0.0
    g, inside = one_token_grad(r_out, mu, -push_out, geometry, topology, delta)
    assert not inside and g == pytest.approx(push_out * r_out, rel=1e-9) and g != 0.0


@pytest.mark.parametrize("geometry,topology", COMBOS)
def test_region_boundary(geometry, topology):
    edges = 0
    for mu in MUS:
        for delta in DELTAS:
            lo, hi = (
                x.item() for x in ratio_interval(torch.tensor(mu, dtype=F64), geometry, topology, delta)
            )
            assert 0.0 <= lo < 1.0 < hi
            r_max = 1.0 / mu if topology == "binary" else math.inf
            if hi < r_max * (1 - 1e-12):
                _check_edge(hi, mu, geometry, topology, delta, upper=True)
                edges += 1
            else:  # no upper edge: every feasible ratio above 1 is inside
                far = r_max * (1 - 1e-9) if topology == "binary" else 1e6
                assert naive_div(far, mu, geometry, topology) <= delta
            if lo > 0.0:
                _check_edge(lo, mu, geometry, topology, delta, upper=False)
                edges += 1
            else:  # no lower edge
                assert naive_div(1e-12, mu, geometry, topology) <= delta
    assert edges >= 6  # most (mu, delta) cases have real edges; the checks above are not vacuous


@pytest.mark.parametrize("geometry,topology", COMBOS)
def test_interval_is_the_sublevel_set(geometry, topology):
    g = torch.Generator().manual_seed(0)
    mu = torch.rand(64, 1, generator=g, dtype=F64) * 0.98 + 0.01
    r_max = (1.0 / mu) if topology == "binary" else torch.full_like(mu, 30.0)
    r = torch.rand(64, 256, generator=g, dtype=F64) * r_max
    mu = mu.expand_as(r)
    for delta in (0.01, 0.1, 1.0):
        lo, hi = ratio_interval(mu, geometry, topology, delta)
        inside = gppo_divergence(r, mu, geometry, topology) <= delta
        between = (r >= lo) & (r <= hi)
        clear = ((r - lo).abs() > 1e-9 * (1 + lo)) & ((r - hi).abs() > 1e-9 * (1 + hi))
        assert torch.equal(inside[clear], between[clear])
        assert inside.any() and ((~inside).any() or delta == 1.0)  # delta = 0.01 cuts some ratios off


# --- (c) equals a per-token Python loop ---------------------------------------------------------


@st.composite
def batches(draw):
    B, T = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    old = [[draw(st.floats(-3.0, -0.02)) for _ in range(T)] for _ in range(B)]
    lp = [[min(o + draw(st.floats(-1.0, 1.0)), -1e-6) for o in row] for row in old]
    adv = [[draw(st.floats(-2.0, 2.0)) for _ in range(T)] for _ in range(B)]
    mask = [[draw(st.booleans()) for _ in range(T)] for _ in range(B)]
    if T >= 3:  # a hole in the middle of row 0, policy tokens on both sides
        mask[0] = [True] + [False] * (T - 2) + [True] if draw(st.booleans()) else mask[0]
        mask[0][T // 2] = False
    return lp, old, adv, mask


@pytest.mark.parametrize("geometry,topology", COMBOS)
@settings(max_examples=20, deadline=None)
@given(data=batches(), delta=st.floats(0.01, 0.5), mode=st.sampled_from(LOSS_AGG_MODES))
def test_matches_naive_loop(geometry, topology, data, delta, mode):
    lp, old, adv, mask = data
    m = torch.tensor(mask, dtype=torch.float32)
    # garbage at masked positions must not reach the loss or the gradient
    lp_t = torch.where(m > 0, torch.tensor(lp, dtype=F64), torch.tensor(math.nan, dtype=F64)).requires_grad_(
        True
    )
    old_t = torch.where(m > 0, torch.tensor(old, dtype=F64), torch.tensor(math.inf, dtype=F64))
    adv_t = torch.where(m > 0, torch.tensor(adv, dtype=F64), torch.tensor(math.nan, dtype=F64))
    loss, stats = gppo_loss(lp_t, old_t, adv_t, m, geometry, topology, delta, loss_agg_mode=mode)
    loss.backward()
    ref_loss, ref_grad, ref_clipfrac, ratios = naive_gppo(lp, old, adv, mask, geometry, topology, delta, mode)
    torch.testing.assert_close(loss.item(), ref_loss, rtol=1e-7, atol=1e-10)
    torch.testing.assert_close(lp_t.grad, torch.tensor(ref_grad, dtype=F64), rtol=1e-7, atol=1e-12)
    assert stats["pg_clipfrac"].item() == pytest.approx(ref_clipfrac)
    assert stats["ratio_min"].item() == pytest.approx(min(ratios, default=1.0))
    assert stats["ratio_max"].item() == pytest.approx(max(ratios, default=1.0))


def test_empty_mask_gives_zero_loss_and_zero_grad():
    lp = torch.randn(2, 3, dtype=F64, requires_grad=True)
    zeros = torch.zeros(2, 3, dtype=F64)
    loss, stats = gppo_loss(lp, zeros, torch.ones(2, 3), zeros, "chi2", "atomic", 0.04)
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(lp.grad, torch.zeros_like(lp))
    assert (
        stats["pg_clipfrac"].item() == 0.0 and stats["ratio_min"].item() == stats["ratio_max"].item() == 1.0
    )


# --- (d) relationships derived from the definitions ------------------------------------------------


def _ppo_reference(lp, old, adv, mask, lo, hi, mode):
    ratio = torch.exp(lp - old)
    pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(lo, hi))
    n = mask.sum(-1)
    if mode == "token-mean":
        return (pg * mask).sum() / mask.sum()
    per_row = (pg * mask).sum(-1) / (n.clamp_min(1.0) if mode == "seq-mean-token-mean" else 1.0)
    return per_row[n > 0].mean()


def _random_batch(seed, B=8, T=16):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g, dtype=F64) * 3 - 0.01
    lp = (old + (torch.rand(B, T, generator=g, dtype=F64) - 0.5)).clamp_max(-1e-6)
    adv = torch.randn(B, T, generator=g, dtype=F64)
    mask = (torch.rand(B, T, generator=g) > 0.3).float()
    mask[0] = 0.0
    return lp, old, adv, mask


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
@pytest.mark.parametrize(
    "geometry,delta,lo,hi",
    [
        ("tv", 0.1, 0.8, 1.2),  # tv/mc, delta = eps/2  <=>  PPO clip(r, 1 - eps, 1 + eps) with eps = 0.2
        ("two_sided_log", 0.2, math.exp(-0.2), math.exp(0.2)),  # asymmetric (DAPO-like) clip in log space
    ],
)
def test_mc_geometries_are_ppo_clips(mode, geometry, delta, lo, hi):
    lp, old, adv, mask = _random_batch(1)
    lp_a = lp.clone().requires_grad_(True)
    lp_b = lp.clone().requires_grad_(True)
    loss, stats = gppo_loss(lp_a, old, adv, mask, geometry, "mc", delta, loss_agg_mode=mode)
    ref = _ppo_reference(lp_b, old, adv, mask, lo, hi, mode)
    loss.backward()
    ref.backward()
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(lp_a.grad, lp_b.grad)
    assert 0.0 < stats["pg_clipfrac"].item() < 1.0  # the clip fires on some tokens, not all
    r_lo, r_hi = ratio_interval(torch.rand(5, dtype=F64), geometry, "mc", delta)
    torch.testing.assert_close(r_lo, torch.full((5,), lo, dtype=F64))
    torch.testing.assert_close(r_hi, torch.full((5,), hi, dtype=F64))


@pytest.mark.parametrize("topology,radius", [("atomic", 2.0), ("binary", 1.0)])
def test_tv_atomic_and_binary_bound_the_probability_change(topology, radius):
    """mu * 1/2|r - 1| <= delta <=> |p_new - p_old| <= 2 delta; binary TV = |p_new - p_old| <= delta."""
    lp, old, adv, mask = _random_batch(2, B=16, T=32)
    delta = 0.05
    tok = gppo_token_loss(lp, old, adv, mask, "tv", topology, delta)
    expected = (mask > 0) & ((lp.exp() - old.exp()).abs() <= radius * delta)
    assert torch.equal(tok.in_region, expected)
    assert expected.any() and ((mask > 0) & ~expected).any()


def test_literal_kl_mc_is_one_sided():
    lp, old, adv, mask = _random_batch(3)
    lp = old + 3.0 * (lp - old)  # ratios in about [e^-1.5, e^1.5]
    tok = gppo_token_loss(lp, old, adv, mask, "kl", "mc", 0.1)
    r, on = tok.ratio, mask > 0
    assert tok.in_region[on & (r > 1)].all()  # never clipped above: no upper edge
    assert torch.equal(tok.in_region, on & (r >= math.exp(-0.1)))
    assert torch.equal(tok.clipped, on & (r < math.exp(-0.1)) & (adv < 0))


# --- (e) bad inputs ---------------------------------------------------------------------------------


def _args():
    x = torch.zeros(2, 3)
    return x, x, x, torch.ones(2, 3)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"geometry": "js"}, r"geometry='js'.*'tv', 'chi2', 'hellinger', 'kl', 'two_sided_log'"),
        ({"topology": "exact"}, r"topology='exact'.*'mc', 'atomic', 'binary'"),
        ({"delta": 0.0}, r"delta=0.0 .*> 0"),
        ({"delta": -0.1}, r"delta=-0.1 "),
        ({"delta": math.nan}, r"delta=nan "),
        ({"delta": math.inf}, r"delta=inf "),
        ({"loss_agg_mode": "seq-sum"}, r"loss_agg_mode='seq-sum'.*token-mean"),
    ],
)
def test_bad_config_raises(kwargs, match):
    base = {"geometry": "tv", "topology": "mc", "delta": 0.1}
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        gppo_loss(*_args(), **base)
    if "loss_agg_mode" not in kwargs:
        with pytest.raises(ValueError, match=match):
            ratio_interval(torch.full((2,), 0.5), base["geometry"], base["topology"], base["delta"])


def test_bad_shapes_raise():
    x, _, _, m = _args()
    with pytest.raises(ValueError, match="old_log_prob"):
        gppo_loss(x, torch.zeros(2, 4), x, m, "tv", "mc", 0.1)
    with pytest.raises(ValueError, match="advantages"):
        gppo_loss(x, x, torch.zeros(2, 2), m, "tv", "mc", 0.1)
    with pytest.raises(ValueError, match="geometry"):
        gppo_divergence(torch.ones(2), torch.ones(2), "tvd", "mc")
    loss, _ = gppo_loss(x, x, torch.zeros(2, 1), m, "tv", "mc", 0.1)  # (B, 1) advantages broadcast
    assert loss.item() == 0.0
