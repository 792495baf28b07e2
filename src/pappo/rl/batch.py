"""Trajectories as padded tensors, and the trainer-side forwards over them.

Shapes: B episodes, T tokens (right-padded), N turns (right-padded), V vocabulary.
Position t of `log_prob`, `values`, `entropy` belongs to token t: the log-prob of token t given
tokens < t, the critic's value of the state in which token t is sampled (the value head read at
position t - 1, as verl shifts it) and the entropy of that distribution. Position 0 is a prompt
token and never in `response_mask`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch

from pappo.policy.adapters import ActorCritic
from pappo.policy.decisions import ARG, NAME
from pappo.policy.rollout import Trajectory
from pappo.rl.advantages import pad_rows, rewards_before_turn, turn_index_from_spans


@dataclass
class RolloutBatch:
    """One update's episodes; tensors are (B, T) unless noted. Filled in two steps: the layout
    (`from_trajectories`), then what the trainer freezes before optimising (old log-probs, ...)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor  # float, 1 on sampled tokens
    sampler_log_prob: torch.Tensor  # recorded by the rollout engine
    turn_index: torch.Tensor  # long, assistant turn of each sampled token, -1 elsewhere
    turn_mask: torch.Tensor  # (B, N) 1 on real turns
    terminal: torch.Tensor  # (B,) outcome reward
    process: torch.Tensor  # (B, N) per-turn process rewards (patch-aware events), outcome excluded
    group: torch.Tensor  # (B,) long, index of the task (GRPO groups)
    index: torch.Tensor  # (B,) long, global episode index of the update (minibatches are drawn over it)
    decision_mask: (
        torch.Tensor
    )  # float, 1 on the sampled tokens that make a choice (a subset of response_mask)
    choice_row: (
        torch.Tensor
    )  # long, row of the choice table whose options a choice is made among; 0: all tokens
    rewards_so_far: torch.Tensor  # float, the process rewards received before each sampled token's turn
    old_log_prob: torch.Tensor | None = None
    ref_log_prob: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    advantages: torch.Tensor | None = None
    returns: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def to(self, device: torch.device | str) -> RolloutBatch:
        """The same batch with every tensor on `device` (the trainer's model device)."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(
            self, **{k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in moved.items()}
        )

    def select(self, index: torch.Tensor) -> RolloutBatch:
        """The rows in `index`, cut to the longest of them (a minibatch or micro-batch)."""
        width = int(self.attention_mask[index].sum(-1).max())
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, torch.Tensor):
                value = value[index]
                if value.dim() == 2 and f.name not in ("turn_mask", "process"):
                    value = value[:, :width]
            out[f.name] = value
        return replace(self, **out)


def from_trajectories(
    trajs: Sequence[Trajectory],
    groups: Sequence[int],
    pad_id: int,
    index: Sequence[int] | None = None,
    choices: torch.Tensor | None = None,
) -> RolloutBatch:
    """Right-padded tensors of the given trajectories (their order kept); `index`: each one's
    global episode index (default 0..B-1, a single process). `choices` (`decisions.choice_table`,
    finite options): a choice is the first token of a name or argument value that is one of its
    kind's options, made among them; without it, every token of a value is a choice."""
    width = max(len(t.token_ids) for t in trajs)
    b = len(trajs)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    attn = torch.zeros(b, width, dtype=torch.long)
    resp = torch.zeros(b, width)
    sampler = torch.zeros(b, width)
    kind = torch.zeros(b, width, dtype=torch.long)
    for r, t in enumerate(trajs):
        n = len(t.token_ids)
        ids[r, :n] = torch.tensor(t.token_ids)
        attn[r, :n] = 1
        resp[r, :n] = torch.tensor(t.response_mask, dtype=torch.float32)
        sampler[r, :n] = torch.tensor(t.logprobs, dtype=torch.float32)
        if t.decision_kind:
            kind[r, :n] = torch.tensor(t.decision_kind, dtype=torch.long)
    kind = kind * (resp != 0)
    if choices is None:
        decision, row = kind > 0, torch.zeros_like(kind)
    else:
        first = (kind == NAME) | (kind == ARG)
        decision = first & choices[kind.where(first, 0), ids]  # (B, T) an option of its kind
        row = kind * decision
    turn_index = turn_index_from_spans([t.turn_spans for t in trajs], width)
    terminal = torch.tensor([t.terminal_reward for t in trajs], dtype=torch.float32)
    rewards, turn_mask = pad_rows([t.turn_rewards for t in trajs])  # (B, N)
    last = (turn_mask.long().sum(-1) - 1).clamp(min=0)  # (B,)
    process = rewards.clone()
    has_turn = turn_mask.any(-1)
    process[has_turn, last[has_turn]] -= terminal[has_turn]  # the outcome is not a process reward
    return RolloutBatch(
        ids,
        attn,
        resp,
        sampler,
        turn_index,
        turn_mask.float(),
        terminal,
        process,
        torch.tensor(list(groups), dtype=torch.long),
        torch.tensor(list(range(b) if index is None else index), dtype=torch.long),
        decision.float(),
        row,
        rewards_before_turn(process, turn_index, resp),
    )


def token_budget_micro_batches(lengths: torch.Tensor, budget: int) -> list[torch.Tensor]:
    """Positions into `lengths` (B,) in micro-batches whose padded size, rows x their longest row, is
    at most `budget` tokens (a row longer than it goes alone): rows sorted longest first (stable),
    each micro-batch filled greedily in that order. Rows of similar length share a forward, so
    little of it is padding (`RolloutBatch.select` pads a micro-batch to its longest row). verl's
    use_dynamic_bsz balances unpadded tokens over micro-batches instead, for a padding-free forward.
    """
    order = torch.sort(lengths, descending=True, stable=True).indices  # (B,)
    width = lengths[order].tolist()
    parts, start = [], 0
    for i in range(1, len(width)):
        if (i - start + 1) * width[start] > budget:  # row i would not fit the micro-batch from start
            parts.append(order[start:i])
            start = i
    return [*parts, order[start:]] if len(width) else []


def policy_outputs(
    ac: ActorCritic,
    batch: RolloutBatch,
    temperature: float,
    entropy: bool = False,
    choices: torch.Tensor | None = None,
    hidden: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Trainer log-probs (B, T) of the sampled tokens under the policy adapter, and the entropy of
    the distributions they were drawn from; 0 elsewhere. The lm_head runs only at the positions
    that predict a sampled token (prompt and tool tokens are most of a sequence). With `choices`
    (the choice table), a choice's distribution is the softmax over its options alone. `hidden`
    (B, T, H): the policy adapter's last hidden states of `batch`, when the caller has them."""
    if hidden is None:
        hidden = ac.policy_hidden(batch.input_ids, batch.attention_mask)  # (B, T, H)
    picked = batch.response_mask[:, 1:] != 0  # (B, T-1): position t-1 predicts token t
    logits = ac.token_logits(hidden[:, :-1][picked]) / temperature  # (M, V)
    if choices is not None:
        rows = batch.choice_row[:, 1:][picked]  # (M,)
        # -1e9, not -inf: excluded tokens get probability 0 and the entropy stays finite
        logits = logits.masked_fill((rows[:, None] > 0) & ~choices.to(logits.device)[rows], -1e9)
    logp = torch.log_softmax(logits, dim=-1)  # (M, V)
    chosen = logp.gather(-1, batch.input_ids[:, 1:][picked][:, None]).squeeze(-1)  # (M,)
    lp = _scatter(chosen, picked)
    ent = _scatter(-(logp.exp() * logp).sum(-1), picked) if entropy else None
    return lp, ent


def _scatter(values: torch.Tensor, picked: torch.Tensor) -> torch.Tensor:
    """(M,) values at the True entries of picked (B, T-1) -> (B, T), 0 elsewhere and at t = 0."""
    out = values.new_zeros(picked.shape[0], picked.shape[1] + 1)
    return out.masked_scatter(torch.nn.functional.pad(picked, (1, 0)), values)


def reference_log_probs(
    ac: ActorCritic, batch: RolloutBatch, temperature: float, choices: torch.Tensor | None = None
) -> torch.Tensor:
    """Log-probs under the frozen base (adapters off): (B, T)."""
    with ac.adapter("policy") as peft, peft.disable_adapter():
        return policy_outputs(ac, batch, temperature, choices=choices)[0]


def token_values(
    ac: ActorCritic, batch: RolloutBatch, sees_rewards: bool = False, features: torch.Tensor | None = None
) -> torch.Tensor:
    """Critic value of the state each token is sampled in: head at t - 1, (B, T), 0 at t = 0;
    `sees_rewards` (rl.critic_sees_rewards): plus its term for the process rewards received so far.
    `features` (B, T, H), rl.critic_trunk policy: the value head reads these (the policy's hidden
    states, detached) instead of a pass of the critic adapter."""
    if features is None:
        v = ac.values(batch.input_ids, batch.attention_mask)  # (B, T), value after reading token t
    else:
        v = ac.head_values(features.detach())
    v = torch.cat([v.new_zeros(v.shape[0], 1), v[:, :-1]], dim=1)
    return v + ac.reward_values(batch.rewards_so_far) if sees_rewards else v
