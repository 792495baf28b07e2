"""Advantage kernels: GAE over policy tokens or over turns, GRPO group advantages, whitening.

Pure functions, tensors and masks in, tensors out (no model, no trajectory objects). Shapes:
B sequences (episodes), T tokens of a padded sequence, N turns of a padded episode, K group
size, G groups. Masks are bool or 0/1 of any dtype; outputs are float and 0 where masked.

Conventions the trainers rely on:
- `response_mask` (B, T) is 1 on policy (sampled) tokens; prompt, environment (tool) tokens and
  padding are 0. GAE runs over the policy tokens of a row in order and SKIPS the others: the
  next policy token after a tool span is the next state (the tool output is part of the
  transition, not an action), and the value after a row's last policy token is 0 (terminal).
- `values[:, t]` is the critic's estimate of the state in which token t is sampled, i.e. the value
  head read at position t - 1 (shift the head's per-position output by one, as verl does).
- Rewards sit on policy tokens (or real turns); a reward anywhere else raises ValueError rather
  than being silently dropped.
- `turn_index` (B, T) gives the 0-based assistant turn of each policy token (anything elsewhere);
  `turn_index_from_spans` builds it from `Trajectory.turn_spans` ([start, end) of each turn's
  sampled ids) and `pad_rows` pads per-turn lists (e.g. `Trajectory.turn_rewards`) to (B, N).

How they compose: `ppo` = `token_gae(terminal_token_rewards(...), values, response_mask, ...)`;
`pappo` = `turn_gae(pappo_turn_rewards(...), turn_values_from_tokens(...), turn_mask, ...)` then
`broadcast_turns` of the turn advantages (and returns) onto each turn's policy tokens; `grpo` =
`grpo_advantages` of episode scores, broadcast by the trainer to every policy token.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

Tensor = torch.Tensor


def _float(*xs: Tensor) -> torch.dtype:
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = torch.promote_types(dtype, x.dtype)
    return dtype if dtype.is_floating_point else torch.float32


def _rewards_on_mask(rewards: Tensor, mask: Tensor, where: str) -> None:
    if bool(((rewards != 0) & ~mask).any()):
        raise ValueError(f"rewards must sit on {where}; found a non-zero reward outside the mask")


def _masked_gae(
    rewards: Tensor, values: Tensor, mask: Tensor, gamma: float, lam: float
) -> tuple[Tensor, Tensor]:
    """GAE along dim 1 over the masked entries of each row, skipping the unmasked ones.

    The masked entries of each row are gathered to the left (in order), GAE runs on the
    zero-padded (B, L) result, L = most masked entries in a row, and the result is scattered back.
    Zero padding is exact: past a row's last step reward and value are 0, so V_next = 0 there.
    """
    mask = mask.bool()
    if rewards.shape != values.shape or mask.shape != values.shape or values.dim() != 2:
        raise ValueError(
            f"rewards, values, mask must share one (B, T) shape; got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}"
        )
    dtype = _float(rewards, values)
    counts = mask.sum(dim=1)  # (B,)
    width = int(counts.max()) if mask.numel() else 0
    order = torch.sort((~mask).to(torch.int8), dim=1, stable=True).indices[:, :width]  # (B, L)
    valid = torch.arange(width, device=mask.device)[None, :] < counts[:, None]  # (B, L)
    zero = torch.zeros((), dtype=dtype, device=values.device)
    r = torch.where(valid, rewards.to(dtype).gather(1, order), zero)  # (B, L)
    v = torch.where(valid, values.to(dtype).gather(1, order), zero)  # NaN off the mask is dropped
    adv_c = torch.zeros_like(v)
    last = v.new_zeros(v.shape[0])  # A after the current step
    for t in reversed(range(width)):
        next_v = v[:, t + 1] if t + 1 < width else torch.zeros_like(v[:, t])
        delta = r[:, t] + gamma * next_v - v[:, t]
        last = delta + gamma * lam * last
        adv_c[:, t] = last
    adv = torch.zeros(values.shape, dtype=dtype, device=values.device)
    ret = torch.zeros_like(adv)
    adv.scatter_(1, order, torch.where(valid, adv_c, zero))
    ret.scatter_(1, order, torch.where(valid, adv_c + v, zero))
    return adv, ret


def token_gae(
    token_rewards: Tensor, values: Tensor, response_mask: Tensor, gamma: float, lam: float
) -> tuple[Tensor, Tensor]:
    """Token-level GAE over policy tokens (Schulman et al. 2016, "High-dimensional continuous
    control using generalized advantage estimation", eq. 16; masking as verl's
    `compute_gae_advantage_return`).

    token_rewards, values, response_mask: (B, T) -> advantages (B, T), returns (B, T).
    Over the policy tokens t_1 < t_2 < ... < t_L of a row (others skipped):
        delta_i = r_{t_i} + gamma * V_{t_{i+1}} - V_{t_i}   (V_{t_{L+1}} = 0)
        A_{t_i} = delta_i + gamma * lam * A_{t_{i+1}},      R_{t_i} = A_{t_i} + V_{t_i}
    Advantages and returns are 0 off the mask; values there are ignored (may be NaN). Rewards
    must sit on policy tokens: a non-zero reward elsewhere raises ValueError.
    """
    _rewards_on_mask(token_rewards, response_mask.bool(), "policy tokens (response_mask == 1)")
    return _masked_gae(token_rewards, values, response_mask, gamma, lam)


def turn_gae(
    turn_rewards: Tensor, turn_values: Tensor, turn_mask: Tensor, gamma: float, lam: float
) -> tuple[Tensor, Tensor]:
    """Turn-level GAE: one step per assistant turn (Schulman et al. 2016, eq. 16, with turns as
    time steps; the turn-as-action MDP of multi-turn agent RL).

    turn_rewards, turn_values, turn_mask: (B, N) -> advantages (B, N), returns (B, N).
    Turns are padded at the right (turn_mask 1 on real turns); a masked entry anywhere is skipped
    as in `token_gae`. delta_n = r_n + gamma * V_{n+1} - V_n with V after the last real turn 0;
    A_n = delta_n + gamma * lam * A_{n+1}; R_n = A_n + V_n. Non-zero rewards on padded turns raise.
    """
    _rewards_on_mask(turn_rewards, turn_mask.bool(), "real turns (turn_mask == 1)")
    return _masked_gae(turn_rewards, turn_values, turn_mask, gamma, lam)


def _check_turn_index(turn_index: Tensor, mask: Tensor, n_turns: int) -> Tensor:
    if turn_index.shape != mask.shape:
        raise ValueError(f"turn_index {tuple(turn_index.shape)} and response_mask {tuple(mask.shape)} differ")
    on = turn_index[mask]
    if on.numel() and (int(on.min()) < 0 or int(on.max()) >= n_turns):
        raise ValueError(f"a policy token's turn index is outside [0, {n_turns})")
    return torch.where(mask, turn_index.long(), torch.zeros_like(turn_index, dtype=torch.long))


def broadcast_turns(turn_values: Tensor, turn_index: Tensor, response_mask: Tensor) -> Tensor:
    """Each policy token gets its turn's value (e.g. a turn advantage or return).

    turn_values (B, N), turn_index (B, T), response_mask (B, T) -> (B, T), 0 off the mask:
        out[b, t] = turn_values[b, turn_index[b, t]] if response_mask[b, t] else 0.
    Raises ValueError if a policy token's turn index is outside [0, N).
    """
    mask = response_mask.bool()
    index = _check_turn_index(turn_index, mask, turn_values.shape[1])
    if turn_values.shape[1] == 0:  # no turns, hence (checked) no policy tokens
        return turn_values.new_zeros(mask.shape)
    out = turn_values.gather(1, index)
    return torch.where(mask, out, torch.zeros((), dtype=out.dtype, device=out.device))


def rewards_before_turn(turn_rewards: Tensor, turn_index: Tensor, response_mask: Tensor) -> Tensor:
    """The rewards received before each policy token's turn (an exclusive cumulative sum).

    turn_rewards (B, N), turn_index (B, T), response_mask (B, T) -> (B, T), 0 off the mask:
        out[b, t] = sum(turn_rewards[b, :turn_index[b, t]]) if response_mask[b, t] else 0.
    """
    before = torch.nn.functional.pad(torch.cumsum(turn_rewards, dim=1), (1, 0))[
        :, :-1
    ]  # (B, N), no subtraction
    return broadcast_turns(before, turn_index, response_mask)


def turn_values_from_tokens(
    values: Tensor, turn_index: Tensor, response_mask: Tensor, n_turns: int
) -> Tensor:
    """The critic's value of each turn: its value at the turn's first policy token.

    values, turn_index, response_mask (B, T) -> (B, n_turns). With `values[:, t]` the value of
    the state in which token t is sampled, the first token's value is the value of the state
    before the turn's action: the whole context up to and including the last observation, which
    is the state s_n of the turn-level MDP. Turns without policy tokens get 0.
    """
    mask = response_mask.bool()
    index = torch.where(mask, _check_turn_index(turn_index, mask, n_turns), n_turns)  # off-mask -> dummy
    b, t = values.shape
    pos = torch.arange(t, device=values.device).expand(b, t)
    first = torch.full((b, n_turns + 1), t, dtype=torch.long, device=values.device)
    first = first.scatter_reduce(1, index, pos, reduce="amin")[:, :n_turns]  # (B, N), T where none
    out = values.gather(1, first.clamp(max=max(t - 1, 0))) if t else values.new_zeros(b, n_turns)
    return torch.where(first < t, out, torch.zeros((), dtype=out.dtype, device=out.device))


def turn_index_from_spans(
    turn_spans: Sequence[Sequence[tuple[int, int]]], length: int, offsets: Sequence[int] | None = None
) -> Tensor:
    """(B, length) long: the turn of each token covered by a span, -1 elsewhere.

    turn_spans[b] lists [start, end) of each turn's sampled ids in row b (`Trajectory.turn_spans`);
    offsets[b] is added to them (left padding of row b; default 0).
    """
    out = torch.full((len(turn_spans), length), -1, dtype=torch.long)
    for b, spans in enumerate(turn_spans):
        shift = offsets[b] if offsets is not None else 0
        for n, (start, end) in enumerate(spans):
            if not 0 <= start + shift <= end + shift <= length:
                raise ValueError(f"row {b} turn {n}: span [{start}, {end}) + {shift} outside [0, {length}]")
            out[b, start + shift : end + shift] = n
    return out


def pad_rows(rows: Sequence[Sequence[float]], width: int | None = None) -> tuple[Tensor, Tensor]:
    """Right-pad ragged per-turn lists (e.g. `Trajectory.turn_rewards`) -> values (B, N) float32,
    mask (B, N) bool; N = `width` or the longest row."""
    n = max((len(r) for r in rows), default=0) if width is None else width
    values, mask = torch.zeros(len(rows), n), torch.zeros(len(rows), n, dtype=torch.bool)
    for b, row in enumerate(rows):
        if len(row) > n:
            raise ValueError(f"row {b} has {len(row)} entries, more than width {n}")
        values[b, : len(row)] = torch.tensor(list(row), dtype=torch.float32)
        mask[b, : len(row)] = True
    return values, mask


def grpo_advantages(
    scores: Tensor,
    group_index: Tensor | None = None,
    norm_by_std: bool = True,
    eps: float = 1e-6,
    valid: Tensor | None = None,
) -> Tensor:
    """Group-relative advantages (Shao et al. 2024, DeepSeekMath, GRPO outcome supervision:
    A_i = (r_i - mean(r_group)) / std(r_group); Liu et al. 2025, Dr. GRPO: no std division).

    Either scores (B,) with group_index (B,) (any integer ids), or scores (G, K) with
    group_index None (one group per row). Returns the shape of `scores`.
    std is unbiased (torch.std, as verl's GRPO); eps is added to it. `valid` (same shape, bool)
    excludes episodes (infra errors) from the group statistics and gives them 0. Groups with
    fewer than 2 valid members, and groups whose valid scores are all equal, get 0.
    """
    shape = scores.shape
    if group_index is None:
        if scores.dim() != 2:
            raise ValueError(f"without group_index, scores must be (G, K); got {tuple(shape)}")
        group_index = torch.arange(shape[0], device=scores.device)[:, None].expand(shape)
    if group_index.shape != shape or (valid is not None and valid.shape != shape):
        raise ValueError("scores, group_index and valid must have one shape")
    s = scores.reshape(-1).to(_float(scores))
    ok = torch.ones_like(s, dtype=torch.bool) if valid is None else valid.reshape(-1).bool()
    groups = torch.unique(group_index.reshape(-1), return_inverse=True)[1]  # (B,) in [0, G)
    g = int(groups.max()) + 1 if groups.numel() else 0
    zero = torch.zeros((), dtype=s.dtype, device=s.device)
    count = torch.zeros(g, dtype=s.dtype, device=s.device).index_add_(0, groups, ok.to(s.dtype))
    mean = torch.zeros_like(count).index_add_(0, groups, torch.where(ok, s, zero)) / count.clamp(min=1)
    dev = torch.where(ok, s - mean[groups], zero)
    inf = float("inf")
    hi = torch.full_like(count, -inf).scatter_reduce(0, groups, torch.where(ok, s, -inf), reduce="amax")
    lo = torch.full_like(count, inf).scatter_reduce(0, groups, torch.where(ok, s, inf), reduce="amin")
    if norm_by_std:
        var = torch.zeros_like(count).index_add_(0, groups, dev**2) / (count - 1).clamp(min=1)
        dev = dev / (var.sqrt()[groups] + eps)
    live = ok & (count[groups] >= 2) & (hi[groups] > lo[groups])
    return torch.where(live, dev, zero).reshape(shape)


def whiten_with_moments(
    x: Tensor, mask: Tensor, mean: Tensor, var: Tensor, shift_mean: bool = True, eps: float = 1e-8
) -> Tensor:
    """(x - mean) * rsqrt(var + eps) on the mask, 0 off it; with shift_mean False the mean is added back.

    The whitening formula alone: the caller supplies the moments, so `masked_whiten` (moments of x)
    and the trainer (moments all-reduced over ranks) whiten identically. mean and var are tensors
    (0-dim, or broadcastable to x); x may hold anything off the mask (NaN included).
    """
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    out = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        out = out + mean
    return torch.where(mask.bool(), out, zero)


def masked_whiten(x: Tensor, mask: Tensor, shift_mean: bool = True, eps: float = 1e-8) -> Tensor:
    """Whiten x over the masked entries (verl's `masked_whiten`): (x - mean) * rsqrt(var + eps),
    mean and unbiased variance over the mask; with shift_mean False the mean is added back.
    Any shape; returns x's shape, 0 off the mask (verl leaves those entries unspecified).
    Raises ValueError with fewer than 2 masked entries (the unbiased variance is undefined).
    """
    mask = mask.bool()
    n = int(mask.sum())
    if n < 2:
        raise ValueError(f"masked_whiten needs at least 2 masked entries, got {n}")
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    mean = torch.where(mask, x, zero).sum() / n
    var = torch.where(mask, (x - mean) ** 2, zero).sum() / (n - 1)  # two-pass: no cancellation
    return whiten_with_moments(x, mask, mean, var, shift_mean, eps)


def _last_index(mask: Tensor) -> Tensor:
    """(B,) index of the last True entry of each row, -1 where none."""
    pos = torch.arange(-1, mask.shape[1], device=mask.device).expand(mask.shape[0], -1)  # (B, 1 + T)
    on = torch.cat([torch.ones(mask.shape[0], 1, dtype=torch.bool, device=mask.device), mask], dim=1)
    return torch.where(on, pos, -1).amax(dim=1)


def _place_terminal(out: Tensor, terminal: Tensor, mask: Tensor, what: str) -> Tensor:
    last = _last_index(mask)
    if bool(((last < 0) & (terminal != 0)).any()):
        raise ValueError(f"a row with a non-zero terminal reward has no {what}")
    rows = torch.nonzero(last >= 0).squeeze(-1)
    out[rows, last[rows]] += terminal[rows].to(out.dtype)
    return out


def pappo_turn_rewards(terminal: Tensor, process: Tensor, turn_mask: Tensor, local_prior: float) -> Tensor:
    """PAPPO's turn rewards: r_n = local_prior * process_n on every real turn, plus the terminal
    reward on the last real turn (docs/design.md, "PAPPO credit"; process rewards from `RepairEnv` events).

    terminal (B,), process (B, N), turn_mask (B, N) -> (B, N), 0 on padded turns. Non-zero process
    rewards on padded turns, or a non-zero terminal reward on a row without turns, raise.
    """
    mask = turn_mask.bool()
    _rewards_on_mask(process, mask, "real turns (turn_mask == 1)")
    dtype = _float(process, terminal)
    out = torch.where(
        mask, local_prior * process.to(dtype), torch.zeros((), dtype=dtype, device=process.device)
    )
    return _place_terminal(out, terminal, mask, "real turn")


def terminal_token_rewards(terminal: Tensor, response_mask: Tensor) -> Tensor:
    """Token rewards for token-level PPO: the terminal reward on each row's last policy token.

    terminal (B,), response_mask (B, T) -> (B, T). A non-zero terminal reward on a row without
    policy tokens raises ValueError.
    """
    mask = response_mask.bool()
    out = torch.zeros(mask.shape, dtype=_float(terminal), device=terminal.device)
    return _place_terminal(out, terminal, mask, "policy token")
