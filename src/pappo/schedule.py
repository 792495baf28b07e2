"""Learning-rate schedules as pure functions of progress: one cosine for SFT and RL."""

from __future__ import annotations

import math
from typing import Literal


def cosine_factor(progress: float, floor: float) -> float:
    """A fraction of the peak rate: 1 at `progress` 0, `floor` at 1 (half a cosine period;
    Loshchilov & Hutter 2017, SGDR, without restarts)."""
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def lr_factor(u: int, updates: int, kind: Literal["constant", "cosine"], min_ratio: float) -> float:
    """The actor's learning rate at update `u` of `updates`, a fraction of `actor_lr`: 1, or the
    cosine from 1 at u = 0 towards `min_ratio` (never reached: the last update still steps)."""
    if kind == "constant":
        return 1.0
    return cosine_factor(u / updates, min_ratio)
