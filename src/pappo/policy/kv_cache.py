"""The rollout decoder's KV cache: keys and values of every layer, preallocated, written in place.

Shapes: B rows, Hkv key/value heads, D head dim; positions along dim 2.
"""

from __future__ import annotations

import torch


class KVCache:
    """Keys and values of every layer, (B, Hkv, capacity, D), written in place; `n` used.

    capacity None: the capacity doubles as positions come (`reserve`); an int (rollout.kv_cache
    static): the first allocation is `capacity` positions, made once, and grows only past it
    (which the rollout's `DecodeBatch.limit` keeps it from). Either way only the first `n`
    positions are ever read, so the outputs are the same.

    Only `reserve` changes the capacity. Every method that reallocates (`reserve`, `keep`,
    `split`, `absorb`, `repack`) replaces one layer's buffer at a time, so the old cache is freed
    layer by layer: the memory held at once is the cache at its capacity plus one layer
    (`policy/memory.py` counts it so)."""

    def __init__(self, n_layers: int, capacity: int | None = None) -> None:
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self.n_layers, self.n, self.capacity = n_layers, 0, capacity

    def size_for(self, needed: int) -> int:
        """Positions to allocate for `needed`: the fixed capacity if it holds them, else doubling."""
        if self.capacity is not None and needed <= self.capacity:
            return self.capacity
        return max(2 * needed, 64)

    def reserve(self, like: torch.Tensor, extra: int) -> None:
        """Make room for `extra` more positions (`size_for`); like: (B, Hkv, T, D)."""
        if self.k and self.n + extra <= self.k[0].shape[2]:
            return
        b, h, _, d = like.shape
        cap = self.size_for(self.n + extra)
        if not self.k:
            self.k = [like.new_zeros(b, h, cap, d) for _ in range(self.n_layers)]
            self.v = [like.new_zeros(b, h, cap, d) for _ in range(self.n_layers)]
            return
        for store in (self.k, self.v):
            for i, old in enumerate(store):
                new = old.new_zeros(b, h, cap, d)
                new[:, :, : self.n] = old[:, :, : self.n]
                store[i] = new

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store T new positions of one layer at [n, n+T); returns its keys and values so far."""
        end = self.n + k.shape[2]
        self.k[layer][:, :, self.n : end] = k
        self.v[layer][:, :, self.n : end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    def write_at(
        self, layer: int, k: torch.Tensor, v: torch.Tensor, at: torch.Tensor, window: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store one new position of one layer at the device index `at` (1,) and return the first
        `window` positions: `write` without a host-side length, for a CUDA graph (`decode_graphs`)."""
        self.k[layer].index_copy_(2, at, k)
        self.v[layer].index_copy_(2, at, v)
        return self.k[layer][:, :, :window], self.v[layer][:, :, :window]

    def repack(self, mask: torch.Tensor, min_holes: float = 0.25) -> torch.Tensor:
        """Drop the masked-out positions (padding of idle rows) once they are `min_holes` of the
        cache; returns the new mask (B, n). Exact: positions are explicit (position_ids), and a
        masked position contributes nothing, so only attention's cost changes.

        Each row's real positions keep their order and move to the right end (left padding)."""
        real = mask.bool()  # (B, n)
        width = int(real.sum(1).max()) if real.numel() else 0
        if not self.k or width == self.n or width > (1.0 - min_holes) * self.n:
            return mask
        order = torch.sort(real.to(torch.int8), dim=1, stable=True).indices[:, self.n - width :]  # (B, width)
        b, h, _, d = self.k[0].shape
        index = order.to(self.k[0].device)[:, None, :, None].expand(b, h, width, d)
        for store in (self.k, self.v):
            for i, old in enumerate(store):
                packed = torch.zeros_like(old)  # the same capacity: only `reserve` changes it
                packed[:, :, :width] = old[:, :, : self.n].gather(2, index)
                store[i] = packed
        self.n = width
        return real.gather(1, order).to(mask.dtype)

    def keep(self, index: torch.Tensor) -> None:
        """Keep only the rows in `index` (in that order; a repeated row is copied)."""
        index = self._on_device(index)
        for store in (self.k, self.v):
            for i, old in enumerate(store):
                store[i] = old[index]

    def split(self, rows: torch.Tensor) -> KVCache:
        """Move the rows `rows` into a new cache, returned; this one keeps the others, in order.
        `absorb` puts them back. No row is held twice."""
        rows = self._on_device(rows)
        sub = KVCache(self.n_layers, self.capacity)
        sub.n = self.n
        if self.k:
            rest = _complement(rows, self.k[0].shape[0])
            for mine, theirs in ((self.k, sub.k), (self.v, sub.v)):
                for i, old in enumerate(mine):
                    theirs.append(old[rows])
                    mine[i] = old[rest]
        return sub

    def absorb(self, sub: KVCache, rows: torch.Tensor, total: int) -> None:
        """Put back the rows `split(rows)` moved into `sub`, after `sub` was fed (and perhaps
        repacked, so narrower): row j of `sub` becomes row rows[j] of `total`; each side's rows get
        zeros (masked out) at the positions only the other has. `sub` is emptied."""
        n0, n1 = self.n, sub.n
        rows = self._on_device(rows)
        rest = _complement(rows, total)
        for mine, theirs in ((self.k, sub.k), (self.v, sub.v)):
            for i, part in enumerate(theirs):
                _, h, cap, d = part.shape  # split copies, reserve grows: the sub-batch's is the larger
                merged = part.new_zeros(total, h, cap, d)
                merged[rows, :, :n1] = part[:, :, :n1]
                if i < len(mine):
                    merged[rest, :, :n0] = mine[i][:, :, :n0]
                    mine[i] = merged
                else:  # this cache held no layer yet: split before its first feed
                    mine.append(merged)
                theirs[i] = part.new_empty(0)
        self.n = max(n0, n1)

    def _on_device(self, index: torch.Tensor) -> torch.Tensor:
        return index.to(self.k[0].device) if self.k else index


def _complement(rows: torch.Tensor, total: int) -> torch.Tensor:
    """The indices of range(total) not in `rows`, in order, on rows' device."""
    keep = torch.ones(total, dtype=torch.bool, device=rows.device)
    keep[rows] = False
    return keep.nonzero().squeeze(-1)
