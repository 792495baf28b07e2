"""pappo.rl.losses: the worked examples of docs/design.md ("PPO"), naive-loop equivalence, masks,
bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from pappo.config.rl import RLParams
from pappo.rl.advantages import token_gae
from pappo.rl.losses import (
    LOSS_AGG_MODES,
    agg_loss,
    entropy_from_logits,
    explained_variance,
    kl_penalty,
    masked_mean,
    policy_loss,
    value_loss,
)

F64 = torch.float64
HYP = settings(max_examples=60, deadline=None)


def t64(x) -> torch.Tensor:
    return torch.tensor(x, dtype=F64)


# ---------------------------------------------------------------- naive per-token references


def naive_agg(vals: list[list[float]], mask: list[list[float]], mode: str) -> float:
    """Plain-float loops: the three aggregation modes; empty rows are skipped in the seq modes."""
    if mode == "token-mean":
        num = sum(v * m for rv, rm in zip(vals, mask) for v, m in zip(rv, rm) if m)
        den = sum(m for rm in mask for m in rm if m)
        return num / den if den else 0.0
    per_seq = []
    for rv, rm in zip(vals, mask):
        toks = [(v, m) for v, m in zip(rv, rm) if m]
        if toks:
            s = sum(v * m for v, m in toks)
            per_seq.append(s if mode == "seq-mean-token-sum" else s / sum(m for _, m in toks))
    return sum(per_seq) / len(per_seq) if per_seq else 0.0


def naive_weights(mask: list[list[float]], mode: str) -> list[list[float]]:
    """d(aggregate)/d(per-token loss) for each token, by loops."""
    n_tok = sum(1 for rm in mask for m in rm if m)
    n_rows = sum(1 for rm in mask if any(rm))
    out = []
    for rm in mask:
        row_n = sum(1 for m in rm if m)
        w = {"token-mean": 1 / max(n_tok, 1), "seq-mean-token-sum": 1 / max(n_rows, 1)}.get(mode)
        if w is None:
            w = 1 / (max(n_rows, 1) * max(row_n, 1))
        out.append([w * m for m in rm])
    return out


def naive_pg_token(lp, olp, a, low, high, c):
    """-> (loss, d loss/d lp, ratio, log ratio, clipped?, dual-bound?) of one token."""
    lr = min(max(lp - olp, -20.0), 20.0)
    r = math.exp(lr)
    l1, l2 = -a * r, -a * min(max(r, 1 - low), 1 + high)
    loss, grad = max(l1, l2), (-a * r if l1 >= l2 else 0.0)
    dual = c is not None and a < 0 and loss > -a * c
    if dual:
        loss, grad = -a * c, 0.0
    if abs(lp - olp) > 20:
        grad = 0.0
    return loss, grad, r, lr, l2 > l1, dual


def naive_kl(lp: float, ref: float, est: str) -> float:
    d = lp - ref
    if est == "k1":
        return d
    if est == "k2":
        return 0.5 * d * d
    neg = min(max(-d, -20.0), 20.0)
    return min(max(math.exp(neg) - neg - 1, -10.0), 10.0)


# ---------------------------------------------------------------- strategies


@st.composite
def batches(draw, names: tuple[str, ...], lo: float = -3.0, hi: float = 3.0, min_abs: float = 0.0):
    """B in 1..4, T in 1..8; a 0/1 mask (zeros anywhere, sometimes a whole zero row) and float grids.

    min_abs: nonzero floats smaller than this are left out (their squares would underflow).
    """
    b, t = draw(st.integers(1, 4)), draw(st.integers(1, 8))
    floats = st.floats(lo, hi, allow_nan=False, allow_infinity=False).filter(
        lambda x: x == 0 or abs(x) >= min_abs
    )

    def grid(elems):
        return draw(st.lists(st.lists(elems, min_size=t, max_size=t), min_size=b, max_size=b))

    mask = [[float(m) for m in row] for row in grid(st.booleans())]
    if draw(st.booleans()):
        mask[draw(st.integers(0, b - 1))] = [0.0] * t
    out = {name: grid(floats) for name in names}
    out["mask"] = mask
    out["bool_mask"] = draw(st.booleans())
    return out


def mask_tensor(d) -> torch.Tensor:
    m = t64(d["mask"])
    return m.bool() if d["bool_mask"] else m


# ---------------------------------------------------------------- worked examples (docs/design.md)


@pytest.mark.parametrize(
    "sign, expected, clip_side",
    [
        (+1.0, [0.50, 0.79, 1.00, 1.10, 0.0, 0.0], "clipfrac_high"),
        (-1.0, [0.0, 0.0, -1.00, -1.10, -1.30, -2.00], "clipfrac_low"),
    ],
)
def test_chapter_gradient_table(sign, expected, clip_side):
    """docs/design.md, PPO worked examples: ratios 0.5..2, clip 0.2, one row, seq-mean-token-sum;
    -d loss/d log pi per token."""
    ratios = torch.tensor([[0.5, 0.79, 1.0, 1.1, 1.3, 2.0]])
    logp = ratios.log().requires_grad_()
    loss, stats = policy_loss(
        logp,
        torch.zeros(1, 6),
        torch.full((1, 6), sign),
        torch.ones(1, 6),
        loss_agg_mode="seq-mean-token-sum",
    )
    (grad,) = torch.autograd.grad(loss, logp)
    assert_close(-grad[0], torch.tensor(expected))
    assert_close(stats["pg_clipfrac"], torch.tensor(2 / 6))
    assert_close(stats[clip_side], torch.tensor(2 / 6))
    other = "clipfrac_low" if clip_side == "clipfrac_high" else "clipfrac_high"
    assert stats[other].item() == 0.0
    assert_close(stats["ratio_min"], torch.tensor(0.5))
    assert_close(stats["ratio_max"], torch.tensor(2.0))
    assert stats["pg_clipfrac_lower"].item() == 0.0


@pytest.mark.parametrize(
    "c, loss_expected, grad_expected, lower",
    [(None, 27.0, [-2.0, -5.0, -20.0], 0.0), (3.0, 8.0, [-2.0, 0.0, 0.0], 2 / 3)],
)
def test_chapter_dual_clip(c, loss_expected, grad_expected, lower):
    """docs/design.md, dual clip: three bad tokens with ratios 2, 5, 20 (A = -1), summed over one row."""
    logp = torch.tensor([[2.0, 5.0, 20.0]]).log().requires_grad_()
    loss, stats = policy_loss(
        logp,
        torch.zeros(1, 3),
        torch.tensor([[-1.0]]),
        torch.ones(1, 3),
        clip_ratio_c=c,
        loss_agg_mode="seq-mean-token-sum",
    )
    (grad,) = torch.autograd.grad(loss, logp)
    assert_close(loss, torch.tensor(loss_expected))
    assert_close(-grad[0], torch.tensor(grad_expected))
    assert_close(stats["pg_clipfrac_lower"], torch.tensor(lower))
    assert stats["pg_clipfrac"].item() == 0.0  # ratios above 1 with A < 0 keep the unclipped branch


def test_chapter_value_clip_formula():
    """docs/design.md, value clip (PPO2): the new value moves at most cliprange_value from the old
    before the clip takes over."""
    v = torch.tensor([[1.0, 0.0, 0.5]], requires_grad=True)
    old, ret = torch.zeros(1, 3), torch.tensor([[0.0, 1.0, 1.0]])
    loss, stats = value_loss(
        v, old, ret, torch.ones(1, 3), cliprange_value=0.2, loss_agg_mode="seq-mean-token-sum"
    )
    # token 0: max(1, 0.2^2)=1; token 1: max(1, 1)=1 (no move); token 2: max(0.25, 0.8^2)=0.64 (clipped)
    assert_close(loss, torch.tensor(0.5 * (1.0 + 1.0 + 0.64)))
    assert_close(stats["vf_clipfrac"], torch.tensor(1 / 3))
    (grad,) = torch.autograd.grad(loss, v)
    assert_close(grad[0], torch.tensor([1.0, -1.0, 0.0]))  # the clipped token gets no gradient


# ---------------------------------------------------------------- kernels == naive loops


@HYP
@given(d=batches(("loss",), -5.0, 5.0), mode=st.sampled_from(LOSS_AGG_MODES))
def test_agg_loss_matches_naive(d, mode):
    got = agg_loss(t64(d["loss"]), mask_tensor(d), mode)
    assert got.dim() == 0
    assert_close(got, t64(naive_agg(d["loss"], d["mask"], mode)))


@HYP
@given(
    d=batches(("lp", "delta", "adv")),
    wide=st.booleans(),
    mode=st.sampled_from(LOSS_AGG_MODES),
    low=st.sampled_from([0.1, 0.2]),
    high=st.sampled_from([0.2, 0.28]),
    c=st.sampled_from([None, 1.5, 3.0]),
)
def test_policy_loss_matches_naive(d, wide, mode, low, high, c):
    scale = 10.0 if wide else 0.5  # wide: log ratios up to +-30 exercise the [-20, 20] clamp
    olp = [[lp - scale * dl for lp, dl in zip(r1, r2)] for r1, r2 in zip(d["lp"], d["delta"])]
    lp = t64(d["lp"]).requires_grad_()
    loss, stats = policy_loss(lp, t64(olp), t64(d["adv"]), mask_tensor(d), low, high, c, mode)
    (grad,) = torch.autograd.grad(loss, lp)

    toks = [
        [naive_pg_token(a, b, e, low, high, c) for a, b, e in zip(*rows)]
        for rows in zip(d["lp"], olp, d["adv"])
    ]
    w = naive_weights(d["mask"], mode)
    assert_close(loss, t64(naive_agg([[x[0] for x in r] for r in toks], d["mask"], mode)))
    assert_close(grad, t64([[wi * x[1] for wi, x in zip(rw, r)] for rw, r in zip(w, toks)]))

    on = [(x, a) for r, rm, ra in zip(toks, d["mask"], d["adv"]) for x, m, a in zip(r, rm, ra) if m]
    n = max(len(on), 1)
    expected = {
        "pg_clipfrac": sum(x[4] for x, _ in on) / n,
        "pg_clipfrac_lower": sum(x[5] for x, _ in on) / n,
        "clipfrac_high": sum(x[2] > 1 + high and a > 0 for x, a in on) / n,
        "clipfrac_low": sum(x[2] < 1 - low and a < 0 for x, a in on) / n,
        "ppo_kl": sum(x[2] - 1 - x[3] for x, _ in on) / n,
        "ratio_min": min((x[2] for x, _ in on), default=1.0),
        "ratio_max": max((x[2] for x, _ in on), default=1.0),
    }
    assert set(stats) == set(expected)
    for name, value in expected.items():
        assert stats[name].dim() == 0 and not stats[name].requires_grad, name
        assert_close(stats[name], t64(value), msg=name)
    assert stats["ppo_kl"].item() >= -1e-12  # k3 is nonnegative token by token


@HYP
@given(
    d=batches(("v", "old", "ret")), mode=st.sampled_from(LOSS_AGG_MODES), c=st.sampled_from([None, 0.1, 0.5])
)
def test_value_loss_matches_naive(d, mode, c):
    def token(v, o, r):
        sq = (v - r) ** 2
        if c is None:
            return sq, False
        vc = min(max(v, o - c), o + c)
        return max(sq, (vc - r) ** 2), (vc - r) ** 2 > sq

    toks = [[token(*x) for x in zip(*rows)] for rows in zip(d["v"], d["old"], d["ret"])]
    loss, stats = value_loss(t64(d["v"]), t64(d["old"]), t64(d["ret"]), mask_tensor(d), c, mode)
    assert_close(loss, t64(0.5 * naive_agg([[x[0] for x in r] for r in toks], d["mask"], mode)))
    on = [x[1] for r, rm in zip(toks, d["mask"]) for x, m in zip(r, rm) if m]
    assert_close(stats["vf_clipfrac"], t64(sum(on) / max(len(on), 1)))


@HYP
@given(d=batches(("lp", "ref"), -25.0, 0.0), est=st.sampled_from(["k1", "k2", "k3"]))
def test_kl_penalty_matches_naive(d, est):
    got = kl_penalty(t64(d["lp"]), t64(d["ref"]), est)
    expected = [[naive_kl(a, b, est) for a, b in zip(r1, r2)] for r1, r2 in zip(d["lp"], d["ref"])]
    assert_close(got, t64(expected))
    if est in ("k2", "k3"):
        assert (got >= 0).all()


@HYP
@given(d=batches(("v", "ret"), min_abs=1e-100))
def test_explained_variance_matches_naive(d):
    """Exact rational arithmetic; NaN iff Var(R) is within rounding noise of 0: at most
    max((8 eps)^2, 64 eps64) * (mean(R^2) + mean((R - V)^2)), as `explained_variance_from_moments`."""
    pairs = [
        (Fraction(v), Fraction(r))
        for rv, rr, rm in zip(d["v"], d["ret"], d["mask"])
        for v, r, m in zip(rv, rr, rm)
        if m
    ]

    def pvar(xs):
        mu = sum(xs) / len(xs)
        return sum((x - mu) ** 2 for x in xs) / len(xs)

    got = explained_variance(t64(d["v"]), t64(d["ret"]), mask_tensor(d))
    assert got.dim() == 0
    if not pairs:
        assert torch.isnan(got)
        return
    var_r, mean_sq = pvar([r for _, r in pairs]), sum(r * r + (r - v) ** 2 for v, r in pairs) / len(pairs)
    eps = Fraction(
        torch.finfo(F64).eps
    )  # the kernel's floor: max((8 eps)^2, 64 eps64), eps of the values' dtype
    noise = max((8 * eps) ** 2, 64 * eps) * mean_sq
    assume(not noise / 100 < var_r < noise * 100)  # too close to the threshold for float64 to decide
    expected = 1 - pvar([r - v for v, r in pairs]) / var_r if var_r > noise else math.nan
    assert_close(got, t64(float(expected)), equal_nan=True)


@HYP
@given(logits=st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=6))
def test_entropy_matches_naive(logits):
    mx = max(logits)
    z = sum(math.exp(x - mx) for x in logits)
    p = [math.exp(x - mx) / z for x in logits]
    expected = -sum(pi * math.log(pi) for pi in p if pi > 0)
    got = entropy_from_logits(t64(logits).reshape(1, 1, -1))
    assert got.shape == (1, 1)
    assert_close(got[0, 0], t64(expected))


def test_entropy_known_values_and_minus_inf_logits():
    logits = torch.tensor(
        [[[0.0, 0.0, 0.0, 0.0], [5.0, -math.inf, -math.inf, -math.inf]]], requires_grad=True
    )
    ent = entropy_from_logits(logits)
    assert_close(ent, torch.tensor([[math.log(4), 0.0]]))
    ent.sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_explained_variance_reference_points():
    ret, mask = torch.tensor([[1.0, 2.0, 3.0, 99.0]]), torch.tensor([[1, 1, 1, 0]])
    assert_close(explained_variance(ret.clone(), ret, mask), torch.tensor(1.0))  # perfect critic
    assert_close(explained_variance(torch.full((1, 4), 2.0), ret, mask), torch.tensor(0.0))  # the mean
    assert torch.isnan(explained_variance(torch.zeros(1, 4), torch.full((1, 4), 7.0), mask))  # Var(R) = 0
    for dtype in (torch.float32, torch.float64):  # equal returns whose float mean is off by an ulp
        same = torch.full((1, 7), 0.1, dtype=dtype)
        assert torch.isnan(explained_variance(torch.rand(1, 7, dtype=dtype), same, torch.ones(1, 7)))
    assert torch.isnan(explained_variance(ret, ret, torch.zeros(1, 4)))  # no policy token
    # every outcome 0, returns formed as advantage + value in float32 (GAE with lam 1): the returns
    # are rounding noise of the values' size, not a target the critic could explain (once -8e12)
    values = torch.rand(4, 40, generator=torch.Generator().manual_seed(0)) * 0.2 - 0.1
    mask = torch.ones(4, 40)
    _, noisy_zero = token_gae(torch.zeros(4, 40), values, mask, 1.0, 1.0)
    assert noisy_zero.abs().max() > 0 and torch.isnan(explained_variance(values, noisy_zero, mask))


# ---------------------------------------------------------------- masks


def test_agg_modes_exclude_empty_rows_and_middle_zeros():
    loss = torch.tensor([[1.0, 100.0, 3.0], [5.0, 5.0, 5.0], [2.0, 2.0, 2.0]])
    mask = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    assert_close(agg_loss(loss, mask, "token-mean"), torch.tensor(10.0 / 5))
    assert_close(agg_loss(loss, mask, "seq-mean-token-sum"), torch.tensor((4.0 + 6.0) / 2))
    assert_close(agg_loss(loss, mask, "seq-mean-token-mean"), torch.tensor((2.0 + 2.0) / 2))


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
def test_all_zero_mask_gives_zero_with_graph(mode):
    lp = torch.randn(2, 3, requires_grad=True)
    loss, stats = policy_loss(lp, torch.zeros(2, 3), torch.ones(2, 3), torch.zeros(2, 3), loss_agg_mode=mode)
    assert loss.item() == 0.0
    loss.backward()
    assert (lp.grad == 0).all()
    assert stats["pg_clipfrac"].item() == 0.0 and stats["ppo_kl"].item() == 0.0
    assert stats["ratio_min"].item() == 1.0 and stats["ratio_max"].item() == 1.0
    assert masked_mean(torch.ones(3), torch.zeros(3)).item() == 0.0


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
@pytest.mark.parametrize("c", [None, 3.0])
def test_gradient_only_through_masked_tokens(mode, c):
    """Grad is exactly 0 off the mask, even where padding holds nan/inf; the loss ignores those values."""
    gen = torch.Generator().manual_seed(0)
    mask = torch.tensor([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [0, 1, 1, 0, 1]], dtype=torch.bool)
    lp, olp, adv = (torch.randn(3, 5, generator=gen) for _ in range(3))
    v, old_v, ret = (torch.randn(3, 5, generator=gen) for _ in range(3))
    junk = torch.tensor([math.nan, math.inf, -math.inf]).repeat(5)[:15].reshape(3, 5)

    def run(fill: bool):
        pick = (lambda x: torch.where(mask, x, junk)) if fill else (lambda x: x)
        lp_leaf, v_leaf = pick(lp).detach().requires_grad_(), pick(v).detach().requires_grad_()
        pl, _ = policy_loss(lp_leaf, pick(olp), pick(adv), mask, 0.2, 0.28, c, mode)
        vl, _ = value_loss(v_leaf, pick(old_v), pick(ret), mask, 0.2, mode)
        (pl + vl).backward()
        return pl, vl, lp_leaf.grad, v_leaf.grad

    clean, dirty = run(False), run(True)
    for a, b in zip(clean, dirty):
        assert_close(a, b)
    for g in clean[2:]:
        assert (g[~mask] == 0).all()
        assert (g[mask] != 0).any()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("c", [1.0, 0.5, -3.0])
def test_dual_clip_must_exceed_one(c):
    # checked once, where the knob is set (the kernel trusts its validated arguments)
    with pytest.raises(ValueError, match=r"clip_ratio_c\n.*greater than 1"):
        RLParams(clip_ratio_c=c)
    assert RLParams(clip_ratio_c=None).clip_ratio_c is None


def test_unknown_modes_and_knobs_raise():
    x, m = torch.zeros(1, 2), torch.ones(1, 2)
    with pytest.raises(ValueError, match="loss_agg_mode='seq-mean'.*token-mean"):
        agg_loss(x, m, "seq-mean")
    with pytest.raises(ValueError, match="loss_agg_mode"):
        policy_loss(x, x, x, m, loss_agg_mode="token_mean")
    with pytest.raises(ValueError, match="loss_agg_mode"):
        value_loss(x, x, x, m, loss_agg_mode="sum")
    with pytest.raises(ValueError, match="estimator='k4'"):
        kl_penalty(x, x, "k4")
    with pytest.raises(ValueError, match="clip_ratio_low"):
        RLParams(clip_ratio_low=-0.1)
    with pytest.raises(ValueError, match="cliprange_value"):
        RLParams(cliprange_value=0.0)
