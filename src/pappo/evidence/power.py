"""What the seeds run could detect: the minimum detectable effect and the seeds an effect needs.

From the observed SD of the per-seed paired differences, with the two-sided 5% t test at 80%
power (`stats.mde`, `stats.seeds_needed`: noncentral t). Colas et al. 2018, "How many random
seeds?" (a pilot's spread, then power, then the number of seeds); Miller 2024, "Adding error bars
to evals", sec. 4 (the power formula).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from pappo.stats import mde, seed_interval, seeds_needed

EFFECTS: tuple[float, ...] = (0.05, 0.10, 0.15)  # absolute effects whose seed counts are reported


class Power(BaseModel):
    """What the seeds run could detect, from the observed SD of the per-seed differences."""

    model_config = ConfigDict(extra="forbid")
    n_seeds: int
    sd: float | None = Field(description="SD (ddof 1) of the per-seed differences; None with one seed.")
    mde: float | None = Field(
        description="Smallest true mean difference detected with 80% power by a two-sided "
        "5% t test on n_seeds seeds; None when the SD is unknown or zero."
    )
    seeds_needed: dict[str, int | None] = Field(
        description="Effect ('0.05', '0.10', '0.15') -> seeds for 80% "
        "power at this SD; None: not computable or above 10000."
    )
    note: str = Field(description="Why a number is missing, or '' when all are there.")


def power_of(diffs: Sequence[float]) -> Power:
    """MDE and seeds needed from per-seed differences (n,); one seed or zero SD say so instead."""
    level = seed_interval(diffs)
    keys = [f"{e:.2f}" for e in EFFECTS]
    if level.sd is None or level.sd == 0.0:
        why = level.note if level.sd is None else "zero observed SD between seeds: power cannot be estimated"
        return Power(n_seeds=level.n, sd=level.sd, mde=None, seeds_needed=dict.fromkeys(keys), note=why)
    needed = {k: seeds_needed(e, level.sd) for k, e in zip(keys, EFFECTS)}
    return Power(n_seeds=level.n, sd=level.sd, mde=mde(level.sd, level.n), seeds_needed=needed, note="")
