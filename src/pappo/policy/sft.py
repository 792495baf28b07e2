"""Warm start of the tiny policy: causal-LM pre-training on source code, then SFT on demonstrations.

Demonstrations are scripted episodes (noisy oracle) on the WARM-UP families only; each is laid
out token for token as the rollout engine lays out an episode (`encode_episode`), so supervised
and RL training see the same sequences. The loss covers the assistant's tokens only.
Shapes: B sequences, T tokens, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from pappo.schedule import cosine_factor

Example = tuple[list[int], list[int]]  # (token ids, loss mask)


def encode_episode(codec: Any, transcript: Sequence[dict[str, Any]]) -> Example:
    """(ids, loss mask) of a finished transcript, exactly as a rollout would have produced it.

    A turn that does not end on a stop token gets `<|im_end|>` as its own last token (the
    model learns to end such turns); the final turn gets no observation after it.
    """
    ids = list(codec.prompt_ids(list(transcript[:2])))
    mask = [0] * len(ids)
    rest = list(transcript[2:])
    last = max((k for k, m in enumerate(rest) if m["role"] == "assistant"), default=-1)
    for k, message in enumerate(rest):
        if message["role"] != "assistant":
            continue
        turn = codec.encode(message["content"])
        if not turn or turn[-1] not in codec.stop_ids:
            turn = turn + [codec.im_end_id]
        ids += turn
        mask += [1] * len(turn)
        if k < last:
            obs = codec.observation_ids(rest[k + 1], turn[-1])
            ids += obs
            mask += [0] * len(obs)
    return ids, mask


def lm_windows(token_ids: Sequence[int], seq_len: int) -> list[Example]:
    """Non-overlapping windows of a token stream, every token in the loss (pre-training)."""
    n = len(token_ids) // seq_len
    return [(list(token_ids[i * seq_len : (i + 1) * seq_len]), [1] * seq_len) for i in range(n)]


def collate(examples: Sequence[Example], pad_id: int, max_len: int) -> tuple[torch.Tensor, ...]:
    """Right-padded (ids, attention mask, loss mask), each (B, T), cut to max_len tokens."""
    width = min(max_len, max(len(ids) for ids, _ in examples))
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)  # (B, T)
    attn = torch.zeros(len(examples), width, dtype=torch.long)  # (B, T)
    loss = torch.zeros(len(examples), width, dtype=torch.float32)  # (B, T)
    for b, (seq, m) in enumerate(examples):
        seq, m = seq[:width], m[:width]
        ids[b, : len(seq)] = torch.tensor(seq)
        attn[b, : len(seq)] = 1
        loss[b, : len(m)] = torch.tensor(m, dtype=torch.float32)
    return ids, attn, loss


def masked_lm_loss(logits: torch.Tensor, ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over positions whose TARGET is in the loss mask."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (B, T-1, V)
    nll = -logp.gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
    target_mask = loss_mask[:, 1:]  # (B, T-1)
    return (nll * target_mask).sum() / target_mask.sum().clamp(min=1.0)


def dense_or_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """The mask a full-sequence forward needs: None when every row is right-padded (its ones, then
    its zeros). Causal attention then computes every real position exactly as with the mask (a real
    token never sees a later pad), position ids default to 0..T-1 as the mask would give them, and
    SDPA takes its fused causal kernel instead of materialising a (B, heads, T, T) mask: about a
    third off a training forward+backward at T ~ 1500 (docs/rl.md). Pad positions' outputs differ
    and must stay masked, as they already are in every loss."""
    if attention_mask is None:
        return None
    m = attention_mask.bool()  # (B, T)
    return None if bool((m[:, 1:] <= m[:, :-1]).all()) else attention_mask


def model_lm_loss(
    model: torch.nn.Module, ids: torch.Tensor, attn: torch.Tensor, loss_mask: torch.Tensor
) -> torch.Tensor:
    """`masked_lm_loss` of a Qwen2 causal LM with the lm_head and softmax only at the positions
    whose target is in the loss (SFT: the assistant's tokens, a fraction of each sequence)."""
    hidden = model.model(
        input_ids=ids, attention_mask=dense_or_mask(attn), use_cache=False
    ).last_hidden_state  # (B, T, H)
    picked = loss_mask[:, 1:] != 0  # (B, T-1): position t-1 predicts token t
    logits = model.lm_head(hidden[:, :-1][picked]).float()  # (M, V)
    nll = torch.nn.functional.cross_entropy(logits, ids[:, 1:][picked], reduction="sum")
    return nll / picked.sum().clamp(min=1)


@dataclass(frozen=True)
class Schedule:
    steps: int
    batch_size: int
    lr: float
    max_len: int
    warmup: int = 10


def train(
    model: torch.nn.Module, examples: Sequence[Example], schedule: Schedule, pad_id: int, seed: int
) -> list[float]:
    """AdamW with linear warm-up and cosine decay, gradient clipping at 1.0; returns the losses.

    Deterministic for a given seed on a given machine: batches are drawn from a seeded generator.
    """
    if not examples:
        raise ValueError("no training examples")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=schedule.lr, weight_decay=0.01, betas=(0.9, 0.95))
    losses = []
    model.train()
    for step in range(schedule.steps):
        for group in opt.param_groups:
            group["lr"] = schedule.lr * _lr_factor(step, schedule)
        pick = torch.randint(len(examples), (schedule.batch_size,), generator=gen).tolist()
        ids, attn, loss_mask = collate([examples[i] for i in pick], pad_id, schedule.max_len)
        loss = model_lm_loss(model, ids, attn, loss_mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


def _lr_factor(step: int, s: Schedule) -> float:
    if step < s.warmup:
        return (step + 1) / s.warmup
    return cosine_factor((step - s.warmup) / max(1, s.steps - s.warmup), 0.1)
