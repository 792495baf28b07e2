"""The running episodes of a batched rollout: one KV cache, the attention mask, next positions.

A turn's observation is fed as a left-padded chunk whose padding is masked out, with positions
counted over real tokens only, so each row sees exactly what it would see alone; rows that idle
move to a sub-batch and back (`compact`, `absorb`), rows that end are dropped (`keep`). Shapes: B
rows, T tokens of a chunk, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pappo.policy.kv_cache import KVCache
from pappo.policy.prefix import MIN_SHARED_PREFIX, common_prefix_len

# `feed_split`: two sub-batches when they feed at most this share of one left-padded block's tokens.
SPLIT_AT = 0.9

# forward(input_ids (B, T), attention_mask (B, T_total), position_ids (B, T), cache, last_only)
#   -> logits (B, T, V), or (B, 1, V) when last_only
Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any, bool], torch.Tensor]


def _shared_len(prompts: list[list[int]]) -> int:
    """The prefix every prompt starts with (`common_prefix_len`); 0 below MIN_SHARED_PREFIX."""
    shared = common_prefix_len(prompts)
    return shared if shared >= MIN_SHARED_PREFIX else 0


def _runs(prompts: list[list[int]], shared: int) -> list[tuple[int, int, int]]:
    """Runs of consecutive prompts that share at least MIN_SHARED_PREFIX tokens beyond `shared`:
    (first row, end row, the run's common prefix), each row keeping at least one token of its own.
    A prompt alone keeps `shared`."""
    runs: list[tuple[int, int, int]] = []
    for i, p in enumerate(prompts):
        if runs:
            first, _, prefix = runs[-1]
            common = min(prefix, common_prefix_len([prompts[first], p]))
            if common >= shared + MIN_SHARED_PREFIX:
                runs[-1] = (first, i + 1, common)
                continue
        runs.append((i, i + 1, len(p) - 1))
    return [(first, end, prefix if end - first > 1 else shared) for first, end, prefix in runs]


class DecodeBatch:
    """The running episodes' shared state: the cache, the attention mask and next positions.

    The mask lives on the model's device in a buffer that grows as the KV cache does, so a decode step
    writes one column: concatenating it on the host and copying it over cost O(T) a step (0.94 ms
    host time at 64 rows x 8192 positions on CPU, and 4 MB host-to-device on a GPU;
    `benchmarks/decode_host.py`)."""

    def __init__(self, rows: list[int], cache: KVCache, device: torch.device) -> None:
        self.rows = rows  # env index of each batch row
        self.cache = cache
        self.device = device
        self._mask = torch.zeros(len(rows), 0, dtype=torch.long, device=device)  # (B, capacity)
        self.width = 0  # positions fed so far: the mask's columns in use
        self.next_pos = torch.zeros(len(rows), dtype=torch.long)  # (B,)

    @property
    def mask(self) -> torch.Tensor:
        """The attention mask over the positions fed (B, T_total), 1 where a position is real."""
        return self._mask[:, : self.width]

    @mask.setter
    def mask(self, mask: torch.Tensor) -> None:
        self._mask, self.width = mask.to(self.device), mask.shape[1]

    def _extend(self, chunk_mask: torch.Tensor) -> None:
        """Append the columns chunk_mask (B, T) to the mask, its buffer grown as the KV cache grows
        (`KVCache.size_for`: the cache's fixed capacity, else doubling)."""
        need = self.width + chunk_mask.shape[1]
        if need > self._mask.shape[1]:
            grown = self._mask.new_zeros(self._mask.shape[0], self.cache.size_for(need))
            grown[:, : self.width] = self.mask
            self._mask = grown
        self._mask[:, self.width : need] = chunk_mask
        self.width = need

    def feed(self, forward: Forward, chunks: list[list[int]], pad_id: int) -> torch.Tensor:
        """Feed one left-padded chunk per row; returns each row's last logits (B, V)."""
        width = max(len(c) for c in chunks)
        ids = torch.tensor([[pad_id] * (width - len(c)) + c for c in chunks], dtype=torch.long)  # (B, T)
        chunk_mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in chunks], dtype=torch.long)
        pos = self.next_pos[:, None] + (chunk_mask.cumsum(-1) - 1).clamp(min=0)  # (B, T)
        self._extend(chunk_mask)
        self.next_pos = self.next_pos + chunk_mask.sum(-1)
        logits = forward(ids, self.mask, pos, self.cache, True)  # (B, 1, V)
        return logits[:, -1, :]

    def feed_prompts(self, forward: Forward, prompts: list[list[int]], pad_id: int) -> torch.Tensor:
        """Feed every row's prompt, each shared prefix once: the prefix every row starts with (system
        prompt, tools) in one row, then the longer prefix a run of consecutive rows shares (a task's
        statement: an evaluation task's boards, a training group's episodes) once per run, each
        cache copied to the rows that share it. Returns each row's last logits (B, V)."""
        rows = self.rows
        shared = _shared_len(prompts)
        runs = _runs(prompts, shared)
        start = [prefix for first, end, prefix in runs for _ in range(first, end)]  # each row's own part
        owner = [n for n, (first, end, _) in enumerate(runs) for _ in range(first, end)]
        self._spread([0] if shared else list(range(len(runs))))
        if shared:
            self.feed(forward, [prompts[0][:shared]], pad_id)
            self._spread([0] * len(runs))
        if any(prefix > shared for _, _, prefix in runs):
            self.feed(forward, [prompts[first][shared:prefix] for first, _, prefix in runs], pad_id)
        self._spread(owner)
        self.rows = rows
        return self.feed_split(forward, [p[s:] for p, s in zip(prompts, start)], pad_id)

    def feed_split(self, forward: Forward, chunks: list[list[int]], pad_id: int) -> torch.Tensor:
        """`feed`, in two sub-batches by chunk length where that feeds at most SPLIT_AT of one
        left-padded block's tokens (rows' own prompt parts of different tasks; a test report among
        one-line replies): each padded to its own longest, merged, the holes repacked once they are
        a quarter of the cache (`KVCache.repack`). Returns each row's last logits (B, V)."""
        n = len(chunks)
        order = sorted(range(n), key=lambda r: len(chunks[r]))
        widths = [len(chunks[r]) for r in order]
        cost, k = min(((j * widths[j - 1] + (n - j) * widths[-1], j) for j in range(1, n)), default=(0, 0))
        if n < 2 or not widths[0] or cost > SPLIT_AT * n * widths[-1]:
            return self.feed(forward, chunks, pad_id)
        out: torch.Tensor | None = None
        for keep in (sorted(order[:k]), sorted(order[k:])):
            sub = self.compact(keep)
            logits = sub.feed(forward, [chunks[r] for r in keep], pad_id)  # (len(keep), V)
            self.absorb(sub, keep)
            out = logits.new_empty(n, logits.shape[-1]) if out is None else out
            out[keep] = logits
        self.mask = self.cache.repack(self.mask)
        assert out is not None
        return out

    def _spread(self, index: list[int]) -> None:
        """Rows `index` of the current ones (repeats copy a row), before the rows are the episodes."""
        at = torch.tensor(index, dtype=torch.long)
        self.cache.keep(at)
        self.mask, self.next_pos = self.mask[at], self.next_pos[at]
        self.rows = list(range(len(index)))

    def compact(self, keep: list[int]) -> DecodeBatch:
        """A sub-batch of the rows `keep`, to decode without the rows that are idle. Their cache
        moves to the sub-batch (`KVCache.split`): this batch is not fed until `absorb`."""
        index = torch.tensor(keep, dtype=torch.long)
        sub = DecodeBatch([self.rows[k] for k in keep], self.cache.split(index), self.device)
        sub.mask, sub.next_pos = self.mask[index], self.next_pos[index]
        return sub

    def absorb(self, sub: DecodeBatch, keep: list[int]) -> None:
        """Merge back a sub-batch made by `compact(keep)` after it decoded further."""
        index = torch.tensor(keep, dtype=torch.long)
        self.cache.absorb(sub.cache, index, len(self.rows))
        extra = self._mask.new_zeros(len(self.rows), sub.width - self.width)
        extra[index.to(self.device)] = sub.mask[:, self.width :]
        self._extend(extra)
        self.next_pos[index] = sub.next_pos

    def keep(self, keep: list[int]) -> None:
        """Drop the rows not in `keep` (indices into the current rows)."""
        index = torch.tensor(keep, dtype=torch.long)
        self.cache.keep(index)
        self.mask, self.next_pos = self.mask[index], self.next_pos[index]
        self.rows = [self.rows[k] for k in keep]
