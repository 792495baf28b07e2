"""Where a comparison's noise comes from: between seeds (training) or within a seed (evaluation).

A seed's difference d_s is the mean over its n_s eval tasks of the paired per-task differences
x_si = a_si - b_si. Its variance across seeds has two parts (a one-way random-effects
decomposition by the method of moments; Searle, Casella & McCulloch 1992, "Variance Components",
ch. 3): the spread of the seeds' true differences (each seed trains its own policies on its own
split: more seeds is the only cure) and the evaluation noise of each d_s given its policies
(finite tasks, and boards per task: more boards or tasks shrink it),

    within  = mean_s var_i(x_si) / n_s           (ddof 1: the squared standard error of d_s)
    total   = var_s(d_s)                         (ddof 1, over seeds)
    between = max(total - within, 0)

and the larger part limits the comparison. Needs two seeds and two tasks per seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class VarianceSplit(BaseModel):
    """Variance of the per-seed differences, split into its between-seed and within-seed parts."""

    model_config = ConfigDict(extra="forbid")
    total: float = Field(description="Variance (ddof 1) of the per-seed differences over seeds.")
    within: float = Field(description="Mean over seeds of the squared standard error of d_s over tasks.")
    between: float = Field(description="max(total - within, 0): the seeds' own spread (training).")
    limited_by: Literal["between seeds (training)", "within seeds (evaluation)"] = Field(
        description="The larger part: more seeds help the first, more boards or tasks the second."
    )


def variance_split(pairs_per_seed: Sequence[tuple[Sequence[float], Sequence[float]]]) -> VarianceSplit | None:
    """The split of `pairs_per_seed` [(a (n_s,), b (n_s,)) per seed]; None with < 2 seeds or a seed
    with < 2 tasks (no variance to split)."""
    diffs = [np.asarray(a, dtype=float) - np.asarray(b, dtype=float) for a, b in pairs_per_seed]
    if len(diffs) < 2 or any(d.size < 2 for d in diffs):
        return None
    total = float(np.var([d.mean() for d in diffs], ddof=1))
    within = float(np.mean([d.var(ddof=1) / d.size for d in diffs]))
    between = max(total - within, 0.0)
    limited = "within seeds (evaluation)" if within >= between else "between seeds (training)"
    return VarianceSplit(total=total, within=within, between=between, limited_by=limited)


def describe(v: VarianceSplit | None) -> str:
    """One line for summary.md."""
    if v is None:
        return "variance split: needs 2 seeds and 2 tasks per seed"
    return (
        f"SD over seeds {v.total**0.5:.3f}: between seeds {v.between**0.5:.3f}, within seeds "
        f"(evaluation) {v.within**0.5:.3f}; limited by {v.limited_by}"
    )
