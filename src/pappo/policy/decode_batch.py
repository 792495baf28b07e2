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
    `benchmarks/decode_host.py`).

    `limit` (rollout.max_tokens_per_episode): the real positions a row can hold. The batch's width
    also holds padding (idle rows, chunks of unequal length), so it can pass the limit while every
    row is within it; a feed that would take it past `limit` repacks the cache first and, where the
    rows' lengths still do not fit side by side, feeds them in groups that do (`_fit`). So a static
    cache (rollout.kv_cache static, `limit` positions) is never reallocated larger, and a growing
    one never passes what a row needs: what `policy/memory.py` counts. Without it a static cache
    of 64 rows at 4,096 positions doubled to 8,194 in a tiny-model run of the hub profile's shape."""

    def __init__(
        self, rows: list[int], cache: KVCache, device: torch.device, limit: int | None = None
    ) -> None:
        self.rows = rows  # env index of each batch row
        self.cache = cache
        self.device = device
        self.limit = limit
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

    def repack(self, min_holes: float = 0.25) -> None:
        """Drop the cache's masked-out positions once they are `min_holes` of it (`KVCache.repack`),
        the mask with them."""
        self.mask = self.cache.repack(self.mask, min_holes)

    def fits(self, width: int) -> bool:
        """Whether `width` more columns keep the batch within `limit`."""
        return self.limit is None or self.width + width <= self.limit

    def feed(self, forward: Forward, chunks: list[list[int]], pad_id: int) -> torch.Tensor:
        """Feed one left-padded chunk per row; returns each row's last logits (B, V) (zeros for a
        row with no chunk that `_fit` left out). Past `limit`: repacked, or fed in groups."""
        width = max(len(c) for c in chunks)
        if not self.fits(width):
            self.repack(min_holes=0.0)
            if not self.fits(width) and len(chunks) > 1:
                return self._feed_parts(forward, chunks, pad_id, self._fit(chunks))
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
        return self._feed_parts(forward, chunks, pad_id, [sorted(order[:k]), sorted(order[k:])])

    def _fit(self, chunks: list[list[int]]) -> list[list[int]]:
        """The rows with a chunk, in groups that fit in `limit` once each is repacked (its longest
        row's real positions plus its longest chunk): longest rows first, a new group where the
        next row would not fit. A row fits alone (the rollout keeps each within the limit)."""
        assert self.limit is not None
        real = self.mask.sum(1).tolist()
        groups: list[list[int]] = []
        top = wide = 0  # the open group's longest row (its first) and longest chunk
        for r in sorted((r for r in range(len(chunks)) if chunks[r]), key=lambda r: -real[r]):
            if groups and top + max(wide, len(chunks[r])) <= self.limit:
                groups[-1].append(r)
                wide = max(wide, len(chunks[r]))
            else:
                groups.append([r])
                top, wide = real[r], len(chunks[r])
        return [sorted(g) for g in groups]

    def _feed_parts(
        self, forward: Forward, chunks: list[list[int]], pad_id: int, parts: list[list[int]]
    ) -> torch.Tensor:
        """Feed the rows of each part as a sub-batch of its own (`compact`, `feed`, `absorb`); the
        holes repacked once they are a quarter of the cache. Returns each row's last logits (B, V),
        zeros for a row in no part."""
        out: torch.Tensor | None = None
        for keep in parts:
            sub = self.compact(keep)
            logits = sub.feed(forward, [chunks[r] for r in keep], pad_id)  # (len(keep), V)
            self.absorb(sub, keep)
            out = logits.new_zeros(len(chunks), logits.shape[-1]) if out is None else out
            out[keep] = logits
        self.repack()
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
        sub = DecodeBatch([self.rows[k] for k in keep], self.cache.split(index), self.device, self.limit)
        sub.mask, sub.next_pos = self.mask[index], self.next_pos[index]
        return sub

    def absorb(self, sub: DecodeBatch, keep: list[int]) -> None:
        """Merge back a sub-batch made by `compact(keep)` after it decoded further (or was
        repacked: narrower). Its rows take its mask; the others, zeros where only it has columns."""
        index = torch.tensor(keep, dtype=torch.long)
        self.cache.absorb(sub.cache, index, len(self.rows))
        self._extend(self._mask.new_zeros(len(self.rows), max(sub.width - self.width, 0)))
        rows = index.to(self.device)
        self._mask[rows, : self.width] = 0
        self._mask[rows, : sub.width] = sub.mask
        self.next_pos[index] = sub.next_pos

    def keep(self, keep: list[int]) -> None:
        """Drop the rows not in `keep` (indices into the current rows)."""
        index = torch.tensor(keep, dtype=torch.long)
        self.cache.keep(index)
        self.mask, self.next_pos = self.mask[index], self.next_pos[index]
        self.rows = [self.rows[k] for k in keep]
