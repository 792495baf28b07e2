"""Advantage kernels against naive Python loops (hypothesis), structural properties, hand-computed
examples and PPO's facts (docs/design.md, "GAE": value targets = A + V_old; with gamma = lam = 1
the advantage is the Monte Carlo return minus the baseline; whitening over policy tokens)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.rl.advantages import (
    broadcast_turns,
    grpo_advantages,
    masked_whiten,
    pad_rows,
    pappo_turn_rewards,
    rewards_before_turn,
    terminal_token_rewards,
    token_gae,
    turn_gae,
    turn_index_from_spans,
    turn_values_from_tokens,
    whiten_with_moments,
)

F64 = torch.float64
FLOAT = st.floats(-3.0, 3.0, allow_nan=False)
UNIT = st.floats(0.0, 1.0)
PROP = settings(max_examples=60, deadline=None)


def _tensor(xs: list[float], b: int, t: int) -> torch.Tensor:
    return torch.tensor(xs, dtype=F64).reshape(b, t)


@dataclass
class Batch:
    mask: torch.Tensor  # (B, T) bool, policy tokens
    values: torch.Tensor  # (B, T), NaN on some non-policy tokens
    rewards: torch.Tensor  # (B, T), 0 off the mask
    spans: list[list[tuple[int, int]]]

    @property
    def turn_index(self) -> torch.Tensor:
        return turn_index_from_spans(self.spans, self.mask.shape[1])


@st.composite
def token_batches(draw: st.DrawFn, max_rows: int = 4, max_turns: int = 4, max_turn_len: int = 4) -> Batch:
    """Rows of: prompt, then turns of policy tokens each followed by a tool span (maybe empty),
    right padding; rows of different lengths, some without turns."""
    layouts, spans = [], []
    for _ in range(draw(st.integers(1, max_rows))):
        layout = [0] * draw(st.integers(0, 3))
        row_spans = []
        for _ in range(draw(st.integers(0, max_turns))):
            start = len(layout)
            layout += [1] * draw(st.integers(1, max_turn_len))
            row_spans.append((start, len(layout)))
            layout += [0] * draw(st.integers(0, 3))
        layouts.append(layout)
        spans.append(row_spans)
    b, t = len(layouts), max(len(x) for x in layouts) + draw(st.integers(0, 2))
    mask = torch.zeros(b, t, dtype=torch.bool)
    for i, layout in enumerate(layouts):
        mask[i, : len(layout)] = torch.tensor(layout, dtype=torch.bool)
    values = _tensor(draw(st.lists(FLOAT, min_size=b * t, max_size=b * t)), b, t)
    nan_off = torch.tensor(draw(st.lists(st.booleans(), min_size=b * t, max_size=b * t)), dtype=torch.bool)
    values = torch.where(~mask & nan_off.reshape(b, t), math.nan, values)  # critic junk off the mask
    rewards = _tensor(draw(st.lists(st.one_of(st.just(0.0), FLOAT), min_size=b * t, max_size=b * t)), b, t)
    return Batch(mask, values, torch.where(mask, rewards, 0.0), spans)


@st.composite
def turn_batches(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(rewards, values, mask) (B, N), turns right-padded, rows of different lengths."""
    b, n = draw(st.integers(1, 4)), draw(st.integers(0, 5))
    lengths = draw(st.lists(st.integers(0, n), min_size=b, max_size=b))
    mask = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    rewards = _tensor(draw(st.lists(FLOAT, min_size=b * n, max_size=b * n)), b, n)
    values = _tensor(draw(st.lists(FLOAT, min_size=b * n, max_size=b * n)), b, n)
    return torch.where(mask, rewards, 0.0), values, mask


# -- naive references ---------------------------------------------------------------------------
def naive_gae(
    r: list[float], v: list[float], m: list[bool], gamma: float, lam: float
) -> tuple[list[float], list[float]]:
    """A_i = sum_j (gamma lam)^(j-i) delta_j over the masked steps of one row (explicit sum)."""
    steps = [t for t in range(len(m)) if m[t]]
    nxt = [v[steps[i + 1]] if i + 1 < len(steps) else 0.0 for i in range(len(steps))]
    delta = [r[t] + gamma * nxt[i] - v[t] for i, t in enumerate(steps)]
    adv, ret = [0.0] * len(m), [0.0] * len(m)
    for i, t in enumerate(steps):
        adv[t] = sum((gamma * lam) ** (j - i) * delta[j] for j in range(i, len(steps)))
        ret[t] = adv[t] + v[t]
    return adv, ret


def naive_batch_gae(r: torch.Tensor, v: torch.Tensor, m: torch.Tensor, gamma: float, lam: float):
    rows = [naive_gae(r[b].tolist(), v[b].tolist(), m[b].tolist(), gamma, lam) for b in range(r.shape[0])]
    shape = r.shape
    adv = torch.tensor([a for a, _ in rows], dtype=F64).reshape(shape)
    ret = torch.tensor([x for _, x in rows], dtype=F64).reshape(shape)
    return adv, ret


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-9) -> None:
    assert a.shape == b.shape
    assert not torch.isnan(a).any()
    assert torch.allclose(a.to(F64), b.to(F64), atol=tol, rtol=tol), (a, b)


# -- token_gae ----------------------------------------------------------------------------------
@PROP
@given(token_batches(), UNIT, UNIT)
def test_token_gae_equals_naive_loop(batch: Batch, gamma: float, lam: float) -> None:
    adv, ret = token_gae(batch.rewards, batch.values, batch.mask, gamma, lam)
    want_adv, want_ret = naive_batch_gae(batch.rewards, batch.values, batch.mask, gamma, lam)
    close(adv, want_adv)
    close(ret, want_ret)
    assert (adv[~batch.mask] == 0).all() and (ret[~batch.mask] == 0).all()


@PROP
@given(token_batches(max_rows=1), UNIT, UNIT, st.integers(0, 40), st.integers(1, 5), FLOAT)
def test_token_gae_skips_an_inserted_tool_span(
    batch: Batch, gamma: float, lam: float, at: int, k: int, junk: float
) -> None:
    adv, ret = token_gae(batch.rewards, batch.values, batch.mask, gamma, lam)
    at = min(at, batch.mask.shape[1])

    def insert(x: torch.Tensor, fill: float | bool) -> torch.Tensor:
        return torch.cat([x[:, :at], torch.full((1, k), fill, dtype=x.dtype), x[:, at:]], dim=1)

    mask2, values2, rewards2 = (
        insert(batch.mask, False),
        insert(batch.values, junk),
        insert(batch.rewards, 0.0),
    )
    adv2, ret2 = token_gae(rewards2, values2, mask2, gamma, lam)
    close(adv2[mask2], adv[batch.mask])
    close(ret2[mask2], ret[batch.mask])
    assert (adv2[~mask2] == 0).all()


def test_token_gae_hand_example_with_tool_span() -> None:
    # policy p0 p1 | tool x x | policy p2 ; reward 1 on p2; gamma 0.9, lam 0.5
    mask = torch.tensor([[1, 1, 0, 0, 1]], dtype=torch.bool)
    values = torch.tensor([[0.2, 0.4, 99.0, math.nan, 0.5]], dtype=F64)
    rewards = torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0]], dtype=F64)
    adv, ret = token_gae(rewards, values, mask, 0.9, 0.5)
    d2 = 1.0 - 0.5  # last policy token: V_next = 0
    d1 = 0.0 + 0.9 * 0.5 - 0.4  # next state of p1 is p2, across the tool span
    d0 = 0.0 + 0.9 * 0.4 - 0.2
    a2, a1 = d2, d1 + 0.45 * d2
    a0 = d0 + 0.45 * a1
    close(adv, torch.tensor([[a0, a1, 0.0, 0.0, a2]], dtype=F64), 1e-12)
    close(ret, torch.tensor([[a0 + 0.2, a1 + 0.4, 0.0, 0.0, a2 + 0.5]], dtype=F64), 1e-12)


@PROP
@given(token_batches(), FLOAT)
def test_chapter_facts_gamma_lam_one_is_mc_return_minus_baseline(batch: Batch, outcome: float) -> None:
    # docs/design.md (GAE): targets = A + V_old; with lambda = 1 the critic is only a baseline:
    # A_t = G_t - V_t, G_t = the outcome on every policy token (mc_returns).
    has = batch.mask.any(dim=1)
    terminal = torch.where(has, torch.tensor(outcome, dtype=F64), 0.0)
    rewards = terminal_token_rewards(terminal, batch.mask)
    adv, ret = token_gae(rewards, batch.values, batch.mask, 1.0, 1.0)
    m = batch.mask
    close(ret[m], terminal[:, None].expand_as(m)[m])
    close(adv[m], (terminal[:, None] - batch.values)[m])


@PROP
@given(token_batches(), UNIT)
def test_lam_zero_is_one_step_td(batch: Batch, gamma: float) -> None:
    adv, _ = token_gae(batch.rewards, batch.values, batch.mask, gamma, 0.0)
    for b in range(batch.mask.shape[0]):
        pos = torch.nonzero(batch.mask[b]).squeeze(-1).tolist()
        for i, t in enumerate(pos):
            nxt = batch.values[b, pos[i + 1]].item() if i + 1 < len(pos) else 0.0
            want = batch.rewards[b, t].item() + gamma * nxt - batch.values[b, t].item()
            assert adv[b, t].item() == pytest.approx(want, abs=1e-12)


def test_token_gae_rejects_rewards_off_policy_tokens() -> None:
    mask = torch.tensor([[1, 0, 1]], dtype=torch.bool)
    with pytest.raises(ValueError, match="policy tokens"):
        token_gae(torch.tensor([[0.0, 1.0, 0.0]]), torch.zeros(1, 3), mask, 1.0, 1.0)
    with pytest.raises(ValueError, match="shape"):
        token_gae(torch.zeros(1, 3), torch.zeros(1, 4), mask, 1.0, 1.0)


def test_token_gae_keeps_dtype_and_empty_rows() -> None:
    mask = torch.zeros(2, 3, dtype=torch.bool)
    adv, ret = token_gae(torch.zeros(2, 3), torch.randn(2, 3), mask, 1.0, 0.95)
    assert adv.dtype == torch.float32 and (adv == 0).all() and (ret == 0).all()


# -- turn_gae and its agreement with token_gae ---------------------------------------------------
@PROP
@given(turn_batches(), UNIT, UNIT)
def test_turn_gae_equals_naive_loop(
    tb: tuple[torch.Tensor, torch.Tensor, torch.Tensor], gamma: float, lam: float
) -> None:
    rewards, values, mask = tb
    adv, ret = turn_gae(rewards, values, mask, gamma, lam)
    want_adv, want_ret = naive_batch_gae(rewards, values, mask, gamma, lam)
    close(adv, want_adv)
    close(ret, want_ret)


def test_turn_gae_rejects_rewards_on_padded_turns() -> None:
    with pytest.raises(ValueError, match="real turns"):
        turn_gae(torch.tensor([[0.0, 1.0]]), torch.zeros(1, 2), torch.tensor([[1, 0]]), 1.0, 1.0)


def test_turn_and_token_gae_agree_hand_built() -> None:
    # three turns of one token each, tool spans between, prompt first
    turn_r = torch.tensor([[0.1, -0.2, 1.0]], dtype=F64)
    turn_v = torch.tensor([[0.3, 0.5, 0.7]], dtype=F64)
    mask = torch.tensor([[0, 0, 1, 0, 0, 1, 0, 1]], dtype=torch.bool)
    tok_r = torch.zeros(1, 8, dtype=F64)
    tok_v = torch.full((1, 8), 5.0, dtype=F64)
    tok_r[mask], tok_v[mask] = turn_r[0], turn_v[0]
    t_adv, t_ret = turn_gae(turn_r, turn_v, torch.ones(1, 3, dtype=torch.bool), 0.95, 0.9)
    k_adv, k_ret = token_gae(tok_r, tok_v, mask, 0.95, 0.9)
    close(k_adv[mask], t_adv[0], 1e-12)
    close(k_ret[mask], t_ret[0], 1e-12)
    d3 = 1.0 - 0.7
    d2 = -0.2 + 0.95 * 0.7 - 0.5
    d1 = 0.1 + 0.95 * 0.5 - 0.3
    g = 0.95 * 0.9
    close(t_adv, torch.tensor([[d1 + g * d2 + g * g * d3, d2 + g * d3, d3]], dtype=F64), 1e-12)


@PROP
@given(turn_batches(), UNIT, UNIT, st.data())
def test_turn_and_token_gae_agree_one_token_per_turn(
    tb, gamma: float, lam: float, data: st.DataObject
) -> None:
    rewards, values, tmask = tb
    b, n = rewards.shape
    spans, layouts = [], []
    for i in range(b):
        layout = [0] * data.draw(st.integers(0, 2))
        row = []
        for _ in range(int(tmask[i].sum())):
            row.append((len(layout), len(layout) + 1))
            layout += [1] + [0] * data.draw(st.integers(0, 3))
        spans.append(row)
        layouts.append(layout)
    t = max(len(x) for x in layouts)
    mask = torch.zeros(b, t, dtype=torch.bool)
    for i, layout in enumerate(layouts):
        mask[i, : len(layout)] = torch.tensor(layout, dtype=torch.bool)
    tok_r, tok_v = torch.zeros(b, t, dtype=F64), torch.full((b, t), math.nan, dtype=F64)
    tok_r[mask], tok_v[mask] = rewards[tmask], values[tmask]
    k_adv, k_ret = token_gae(tok_r, tok_v, mask, gamma, lam)
    t_adv, t_ret = turn_gae(rewards, values, tmask, gamma, lam)
    close(k_adv[mask], t_adv[tmask])
    close(k_ret[mask], t_ret[tmask])
    # and through the adapters: turn values read from tokens, turn advantages broadcast back
    index = turn_index_from_spans(spans, t)
    close(turn_values_from_tokens(tok_v, index, mask, n), torch.where(tmask, values, 0.0))
    close(broadcast_turns(t_adv, index, mask), k_adv)


# -- turn layout adapters -------------------------------------------------------------------------
@PROP
@given(token_batches(), st.integers(0, 3))
def test_broadcast_and_turn_values_equal_naive_loops(batch: Batch, extra_turns: int) -> None:
    b, t = batch.mask.shape
    n = max((len(s) for s in batch.spans), default=0) + extra_turns
    index = batch.turn_index
    assert ((index >= 0) == batch.mask).all()  # spans cover exactly the policy tokens
    turn_vals = torch.arange(b * n, dtype=F64).reshape(b, n) + 0.5
    out = broadcast_turns(turn_vals, index, batch.mask)
    first = turn_values_from_tokens(batch.values, index, batch.mask, n)
    want_out, want_first = torch.zeros(b, t, dtype=F64), torch.zeros(b, n, dtype=F64)
    for i in range(b):
        seen = set()
        for j in range(t):
            if batch.mask[i, j]:
                k = int(index[i, j])
                want_out[i, j] = turn_vals[i, k]
                if k not in seen:
                    seen.add(k)
                    want_first[i, k] = batch.values[i, j]
    close(out, want_out, 0.0)
    close(first, want_first, 0.0)


@PROP
@given(token_batches(), st.integers(0, 3), st.data())
def test_rewards_before_turn_equal_naive_loop(batch: Batch, extra_turns: int, data: st.DataObject) -> None:
    b, t = batch.mask.shape
    n = max((len(s) for s in batch.spans), default=0) + extra_turns
    rewards = _tensor(data.draw(st.lists(FLOAT, min_size=b * n, max_size=b * n)), b, n)
    out = rewards_before_turn(rewards, batch.turn_index, batch.mask)
    want = torch.zeros(b, t, dtype=F64)
    for i in range(b):
        for j in range(t):
            if batch.mask[i, j]:
                want[i, j] = sum(float(rewards[i, k]) for k in range(int(batch.turn_index[i, j])))
    close(out, want)
    # a turn's own reward and later ones never leak into its tokens' input
    bumped = rewards.clone()
    bumped[:, -1:] += 7.0
    last = batch.turn_index == n - 1
    close(rewards_before_turn(bumped, batch.turn_index, batch.mask)[~last], out[~last])


def test_turn_index_errors_and_offsets() -> None:
    assert turn_index_from_spans([[(1, 3), (4, 5)]], 6, offsets=[1]).tolist() == [[-1, -1, 0, 0, -1, 1]]
    with pytest.raises(ValueError, match="outside"):
        turn_index_from_spans([[(4, 7)]], 6)
    mask = torch.tensor([[1, 1]], dtype=torch.bool)
    with pytest.raises(ValueError, match="outside"):
        broadcast_turns(torch.zeros(1, 1), torch.tensor([[0, 1]]), mask)
    with pytest.raises(ValueError, match="outside"):
        turn_values_from_tokens(torch.zeros(1, 2), torch.tensor([[-1, 0]]), mask, 1)


def test_adapters_fit_a_rollout_trajectory() -> None:
    from pappo.policy.rollout import Trajectory

    traj = Trajectory("t", [], [], [], [], prompt_len=3)
    traj.append([1, 2, 3], policy=False)
    traj.tool_mask = [0] * 3
    for turn, obs in (([10, 11, 12], [20, 21]), ([13], [22]), ([14, 15], [])):
        start = len(traj.token_ids)
        traj.append(turn, policy=True, logprobs=[-0.5] * len(turn))
        traj.turn_spans.append((start, start + len(turn)))
        traj.append(obs, policy=False)
    traj.turn_rewards = [0.2, -0.1, 1.0]
    mask = torch.tensor([traj.response_mask], dtype=torch.bool)
    index = turn_index_from_spans([traj.turn_spans], len(traj.token_ids))
    assert ((index >= 0) == mask).all()
    assert index[0].tolist() == [-1, -1, -1, 0, 0, 0, -1, -1, 1, -1, 2, 2]
    rewards, tmask = pad_rows([traj.turn_rewards, [0.5]])
    assert rewards.tolist() == [[pytest.approx(0.2), pytest.approx(-0.1), 1.0], [0.5, 0.0, 0.0]]
    assert tmask.tolist() == [[True, True, True], [True, False, False]]
    with pytest.raises(ValueError, match="width"):
        pad_rows([[1.0, 2.0]], width=1)


# -- PAPPO rewards vs plain turn-level PPO ----------------------------------------------------------
def test_pappo_two_turn_episode_by_hand() -> None:
    gamma, lam, prior = 0.9, 0.8, 0.5
    values = torch.tensor([[0.4, 0.6]], dtype=F64)
    mask = torch.ones(1, 2, dtype=torch.bool)
    terminal, process = torch.tensor([1.0], dtype=F64), torch.tensor([[0.5, -0.2]], dtype=F64)
    r_pappo = pappo_turn_rewards(terminal, process, mask, prior)
    close(r_pappo, torch.tensor([[0.25, 0.9]], dtype=F64), 1e-12)
    ppo_adv, _ = turn_gae(
        pappo_turn_rewards(terminal, torch.zeros_like(process), mask, 0.0), values, mask, gamma, lam
    )
    pappo_adv, _ = turn_gae(r_pappo, values, mask, gamma, lam)
    # terminal only: delta2 = 1 - 0.6 = 0.4; delta1 = 0.9*0.6 - 0.4 = 0.14; A1 = 0.14 + 0.72*0.4
    close(ppo_adv, torch.tensor([[0.428, 0.4]], dtype=F64), 1e-12)
    # with process: delta2 = 0.9 - 0.6 = 0.3; delta1 = 0.25 + 0.54 - 0.4 = 0.39; A1 = 0.39 + 0.72*0.3
    close(pappo_adv, torch.tensor([[0.606, 0.3]], dtype=F64), 1e-12)
    # the difference is the process term alone: [0.25 + 0.72*(-0.1), -0.1]
    close(pappo_adv - ppo_adv, torch.tensor([[0.178, -0.1]], dtype=F64), 1e-12)


@PROP
@given(turn_batches(), st.data(), UNIT, UNIT, st.floats(0.0, 2.0))
def test_pappo_minus_ppo_is_gae_of_process_term(
    tb, data: st.DataObject, gamma: float, lam: float, prior: float
) -> None:
    process, values, mask = tb
    b = process.shape[0]
    terminal = torch.tensor(data.draw(st.lists(UNIT, min_size=b, max_size=b)), dtype=F64)
    terminal = torch.where(mask.any(dim=1), terminal, 0.0)
    pappo = turn_gae(pappo_turn_rewards(terminal, process, mask, prior), values, mask, gamma, lam)
    plain = turn_gae(
        pappo_turn_rewards(terminal, torch.zeros_like(process), mask, prior), values, mask, gamma, lam
    )
    term = turn_gae(prior * process, torch.zeros_like(values), mask, gamma, lam)
    close(pappo[0] - plain[0], term[0])
    close(pappo[1] - plain[1], term[1])


@PROP
@given(turn_batches(), st.data(), st.floats(0.0, 2.0))
def test_pappo_turn_rewards_equal_naive_loop(tb, data: st.DataObject, prior: float) -> None:
    process, _, mask = tb
    b, n = process.shape
    terminal = torch.tensor(data.draw(st.lists(FLOAT, min_size=b, max_size=b)), dtype=F64)
    terminal = torch.where(mask.any(dim=1), terminal, 0.0)
    out = pappo_turn_rewards(terminal, process, mask, prior)
    want = torch.zeros(b, n, dtype=F64)
    for i in range(b):
        real = [j for j in range(n) if mask[i, j]]
        for j in real:
            want[i, j] = prior * process[i, j] + (terminal[i] if j == real[-1] else 0.0)
    close(out, want)


def test_reward_placement_errors() -> None:
    with pytest.raises(ValueError, match="real turns"):
        pappo_turn_rewards(torch.zeros(1), torch.tensor([[0.0, 1.0]]), torch.tensor([[1, 0]]), 1.0)
    with pytest.raises(ValueError, match="no real turn"):
        pappo_turn_rewards(torch.ones(1), torch.zeros(1, 2), torch.zeros(1, 2), 1.0)
    with pytest.raises(ValueError, match="no policy token"):
        terminal_token_rewards(torch.ones(2), torch.tensor([[0, 1], [0, 0]]))
    assert terminal_token_rewards(torch.zeros(1), torch.zeros(1, 2)).tolist() == [[0.0, 0.0]]


@PROP
@given(token_batches(), st.data())
def test_terminal_token_rewards_equal_naive_loop(batch: Batch, data: st.DataObject) -> None:
    b, t = batch.mask.shape
    terminal = torch.tensor(data.draw(st.lists(FLOAT, min_size=b, max_size=b)), dtype=F64)
    terminal = torch.where(batch.mask.any(dim=1), terminal, 0.0)
    want = torch.zeros(b, t, dtype=F64)
    for i in range(b):
        on = [j for j in range(t) if batch.mask[i, j]]
        if on:
            want[i, on[-1]] = terminal[i]
    close(terminal_token_rewards(terminal, batch.mask), want, 0.0)


# -- GRPO -----------------------------------------------------------------------------------------
def naive_grpo(
    scores: list[float], groups: list[int], valid: list[bool], norm: bool, eps: float
) -> list[float]:
    out = []
    for s, g, ok in zip(scores, groups, valid):
        members = [x for x, h, v in zip(scores, groups, valid) if h == g and v]
        if not ok or len(members) < 2 or max(members) == min(members):
            out.append(0.0)
            continue
        mean = statistics.fmean(members)
        out.append((s - mean) / (statistics.stdev(members) + eps) if norm else s - mean)
    return out


@PROP
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1.0, -1.0]) | FLOAT, st.integers(0, 3), st.booleans()),
        min_size=1,
        max_size=16,
    ),
    st.booleans(),
)
def test_grpo_equals_naive_loop(items: list[tuple[float, int, bool]], norm: bool) -> None:
    scores, groups, valid = (list(x) for x in zip(*items))
    out = grpo_advantages(
        torch.tensor(scores, dtype=F64), torch.tensor(groups) * 7 - 3, norm, valid=torch.tensor(valid)
    )
    close(out, torch.tensor(naive_grpo(scores, groups, valid, norm, 1e-6), dtype=F64))


def test_grpo_normalised_groups_have_mean_zero_std_one() -> None:
    scores = torch.tensor([[1.0, 0.0, 0.0, 1.0, 1.0], [0.2, 0.9, 0.4, 0.4, 0.1]], dtype=F64)
    adv = grpo_advantages(scores, norm_by_std=True, eps=0.0)
    assert adv.shape == scores.shape
    close(adv.mean(dim=1), torch.zeros(2, dtype=F64), 1e-12)
    close(adv.std(dim=1), torch.ones(2, dtype=F64), 1e-12)
    flat = grpo_advantages(scores.reshape(-1), torch.tensor([5] * 5 + [2] * 5), True, eps=0.0)
    close(flat, adv.reshape(-1), 0.0)
    dr = grpo_advantages(scores, norm_by_std=False)  # Dr. GRPO: centred, not scaled
    close(dr, scores - scores.mean(dim=1, keepdim=True), 1e-12)


def test_grpo_constant_singleton_and_invalid() -> None:
    scores = torch.tensor([0.1, 0.1, 0.1, 1.0, 0.0, 1.0, 0.7, 5.0])
    groups = torch.tensor([0, 0, 0, 1, 1, 1, 2, 1])
    valid = torch.tensor([True, True, True, True, True, True, True, False])
    adv = grpo_advantages(scores, groups, True, valid=valid)
    assert (adv[:3] == 0).all()  # constant group: exactly 0
    assert adv[6] == 0  # group of size 1
    assert adv[7] == 0  # infra error: 0, and not part of its group's statistics
    want = grpo_advantages(torch.tensor([1.0, 0.0, 1.0]), torch.zeros(3, dtype=torch.long), True)
    close(adv[3:6], want, 0.0)
    assert adv[3] > 0 > adv[4]
    all_bad = grpo_advantages(scores, groups, True, valid=torch.zeros(8, dtype=torch.bool))
    assert (all_bad == 0).all()
    with pytest.raises(ValueError):
        grpo_advantages(torch.zeros(4))  # no groups given and not (G, K)


# -- whitening ------------------------------------------------------------------------------------
@PROP
@given(token_batches(), st.booleans())
def test_masked_whiten_moments(batch: Batch, shift_mean: bool) -> None:
    x = torch.where(batch.mask, batch.values, math.nan)  # NaN off the mask must not leak
    on = batch.mask
    if int(on.sum()) < 2:
        with pytest.raises(ValueError):
            masked_whiten(x, on)
        return
    out = masked_whiten(x, on, shift_mean=shift_mean)
    assert (out[~on] == 0).all()
    mean, var = batch.values[on].mean(), batch.values[on].var()  # unbiased, as verl
    want = (batch.values[on] - mean) / torch.sqrt(var + 1e-8) + (0.0 if shift_mean else mean)
    close(out[on], want)
    if shift_mean:
        assert abs(out[on].mean().item()) < 1e-9
        if var > 1e-3:
            assert out[on].var().item() == pytest.approx(1.0, rel=1e-5)


def naive_whiten(
    x: list[float], m: list[bool], mean: float, var: float, shift_mean: bool, eps: float = 1e-8
) -> list[float]:
    """Element by element: (x - mean) / sqrt(var + eps) (+ mean) on the mask, 0 elsewhere."""
    return [
        (v - mean) / math.sqrt(var + eps) + (0.0 if shift_mean else mean) if on else 0.0
        for v, on in zip(x, m)
    ]


@PROP
@given(token_batches(), st.booleans())
def test_masked_whiten_equals_naive_loop(batch: Batch, shift_mean: bool) -> None:
    on = batch.mask.reshape(-1).tolist()
    xs = batch.values.reshape(-1).tolist()
    members = [v for v, m in zip(xs, on) if m]
    if len(members) < 2:
        return  # raises; test_masked_whiten_moments covers it
    mean, var = statistics.fmean(members), statistics.variance(members)  # unbiased
    want = torch.tensor(naive_whiten(xs, on, mean, var, shift_mean), dtype=F64).reshape(batch.mask.shape)
    close(masked_whiten(batch.values, batch.mask, shift_mean=shift_mean), want)


@PROP
@given(token_batches(), FLOAT, st.floats(0.0, 4.0), st.booleans())
def test_whiten_with_moments_equals_naive_loop(
    batch: Batch, mean: float, var: float, shift_mean: bool
) -> None:
    # any moments, not only x's own: the trainer passes moments all-reduced over ranks
    out = whiten_with_moments(
        batch.values,
        batch.mask,
        torch.tensor(mean, dtype=F64),
        torch.tensor(var, dtype=F64),
        shift_mean=shift_mean,
    )
    want = naive_whiten(
        batch.values.reshape(-1).tolist(), batch.mask.reshape(-1).tolist(), mean, var, shift_mean
    )
    close(out, torch.tensor(want, dtype=F64).reshape(batch.mask.shape))


@PROP
@given(token_batches(), st.booleans(), st.sampled_from([torch.float32, F64]))
def test_whiten_with_moments_fed_masked_whitens_moments_is_masked_whiten(
    batch: Batch, shift_mean: bool, dtype: torch.dtype
) -> None:
    x, on = batch.values.to(dtype), batch.mask
    n = int(on.sum())
    if n < 2:
        return
    zero = torch.zeros((), dtype=dtype)
    mean = torch.where(on, x, zero).sum() / n  # masked_whiten's moments, computed as it does
    var = torch.where(on, (x - mean) ** 2, zero).sum() / (n - 1)
    kernel = whiten_with_moments(x, on, mean, var, shift_mean=shift_mean)
    assert torch.equal(kernel, masked_whiten(x, on, shift_mean=shift_mean))  # bit for bit


def test_masked_whiten_matches_the_chapters_ppo_prepare() -> None:
    # docs/design.md (whitening): (adv - adv[on].mean()) / (adv[on].std() + 1e-8) * m
    gen = torch.Generator().manual_seed(0)
    adv = torch.randn(4, 9, generator=gen, dtype=F64)
    m = torch.rand(4, 9, generator=gen) > 0.4
    chapter = (adv - adv[m].mean()) / (adv[m].std() + 1e-8) * m
    close(masked_whiten(adv, m), chapter, 1e-7)
