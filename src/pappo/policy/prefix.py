"""The prompt prefix rows share: the sampler (`rollout`) feeds it once per batch or run of
prompts, the trainer (`adapters`) runs it once per micro-batch. One rule for both sides."""

from __future__ import annotations

from collections.abc import Sequence

# A prefix shared by fewer tokens goes with the rest of each row: its own forward costs more.
MIN_SHARED_PREFIX = 16


def common_prefix_len(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix every row starts with, leaving every row at least one token of
    its own; 0 for fewer than two rows (nothing to share)."""
    if len(rows) < 2:
        return 0
    limit = min(len(r) for r in rows) - 1
    first = rows[0]
    for i in range(max(limit, 0)):
        if any(r[i] != first[i] for r in rows):
            return i
    return max(limit, 0)
