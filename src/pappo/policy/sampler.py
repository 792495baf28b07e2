"""Sampling the next token of each running episode: temperature, top-p, greedy, a call trie's mask."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from pappo.config.policy import RolloutParams


class Sampler:
    """Temperature / top-p sampling; greedy when `greedy`.

    Each episode draws from its own seeded generator, so what an episode samples does not depend
    on which other episodes share its batch (or on sub-batching).
    """

    def __init__(self, params: RolloutParams, seeds: Sequence[int], greedy: bool = False) -> None:
        self.temperature, self.top_p, self.greedy = params.temperature, params.top_p, greedy
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]

    def __call__(
        self, logits: torch.Tensor, episodes: Sequence[int], allowed: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """logits (B, V) of the given episodes -> sampled ids (B,), their log-probs (B,) under the
        temperature-scaled softmax, restricted to `allowed` (B, V) bool when given."""
        logits = logits.float()
        if allowed is not None:
            logits = logits.masked_fill(~allowed.to(logits.device), float("-inf"))
        logp = torch.log_softmax(logits / (1.0 if self.greedy else self.temperature), dim=-1)  # (B, V)
        if self.greedy:
            ids = logp.argmax(dim=-1)
        else:
            probs = logp.exp()
            if self.top_p < 1.0:
                probs = _top_p(probs, self.top_p)
            # Inverse CDF: one uniform per row (multinomial drew V randoms per row: 5x slower here).
            cdf = probs.cumsum(dim=-1)  # (B, V)
            u = torch.cat([torch.rand(1, generator=self.generators[e]) for e in episodes])[:, None]  # (B, 1)
            u = u.to(cdf.device)  # CPU generators: the same draws on any device
            ids = (
                torch.searchsorted(cdf, u * cdf[:, -1:], right=True)
                .squeeze(-1)
                .clamp(max=probs.shape[-1] - 1)
            )
        return ids, logp.gather(-1, ids[:, None]).squeeze(-1)

    def skip(self, episode: int) -> None:
        """A forced token of `episode` (probability 1): draw and discard its uniform, as sampling it
        would, so the episode's later draws do not depend on whether forced tokens were sampled."""
        if not self.greedy:
            torch.rand(1, generator=self.generators[episode])


def _top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p (nucleus sampling)."""
    sorted_p, order = probs.sort(dim=-1, descending=True)  # (B, V)
    drop = sorted_p.cumsum(-1) - sorted_p > top_p  # mass before a token already reaches top_p
    sorted_p = sorted_p.masked_fill(drop, 0.0)
    return torch.zeros_like(probs).scatter(-1, order, sorted_p)
