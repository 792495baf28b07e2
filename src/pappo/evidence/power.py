"""What the seeds run could detect: the minimum detectable effect and the seeds an effect needs.

From the observed SD of the per-seed paired differences, with the two-sided 5% t test at 80%
power (`stats.mde`, `stats.seeds_needed`: noncentral t), and for a claim the effect its whole
registered rule detects (`rule_mde`: the mean above min_delta, the seed wins and the family's test
together). Colas et al. 2018, "How many random
seeds?" (a pilot's spread, then power, then the number of seeds); Miller 2024, "Adding error bars
to evals", sec. 4 (the power formula).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pappo.config.evidence import ClaimParams
from pappo.evidence.family import ALPHA, settled
from pappo.stats import POWER, mde, seed_interval, seeds_needed

EFFECTS: tuple[float, ...] = (0.05, 0.10, 0.15)  # absolute effects whose seed counts are reported
SD_LEVEL = 0.80  # the interval of the true SD whose ends bound each power figure (`sd_interval`)
RULE_DRAWS = 100_000  # simulated experiments behind `rule_mde` (its Monte Carlo error: under 1% of an SD)


class Power(BaseModel):
    """What the seeds run could detect, from the observed SD of the per-seed differences."""

    model_config = ConfigDict(extra="forbid")
    n_seeds: int
    sd: float | None = Field(description="SD (ddof 1) of the per-seed differences; None with one seed.")
    mde: float | None = Field(
        description="Single test, not a claim's rule: the smallest true mean difference detected "
        "with 80% power by one two-sided 5% t test against 0 on n_seeds seeds; None when the SD is "
        "unknown or zero. A claim's own power is rule_mde."
    )
    seeds_needed: dict[str, int | None] = Field(
        description="Single test, not a claim's rule: effect ('0.05', '0.10', '0.15') -> seeds for "
        "80% power of one two-sided 5% t test at this SD; None: not computable or above 10000."
    )
    note: str = Field(description="Why a number is missing, or '' when all are there.")
    rule_mde: float | None = Field(
        None,
        description="A claim's: the true mean improvement at which its registered rule says holds "
        "with 80% probability (normal seeds at this SD, its family's test at the Bonferroni level); "
        "None for a claim without an interval rule, or where mde is None.",
    )
    family: int = Field(1, description="Claims judged together with this one (the rule_mde's level).")
    mde_range: list[float] | None = Field(
        None,
        description="mde at the two ends of the true SD's 80% interval from n_seeds seeds (`sd_interval`): "
        "the observed SD of a few seeds is itself uncertain, and so is every power figure from it.",
    )
    rule_mde_range: list[float] | None = Field(
        None, description="rule_mde at the two ends of the same SD interval; None where rule_mde is."
    )


def power_of(diffs: Sequence[float], claim: ClaimParams | None = None, family: int = 1) -> Power:
    """MDE and seeds needed from per-seed differences (n,), and a claim's `rule_mde` in a family of
    `family` claims; one seed or zero SD (up to float residue) say so instead."""
    level = seed_interval(settled(diffs))
    keys = [f"{e:.2f}" for e in EFFECTS]
    if level.sd is None or level.sd == 0.0:
        why = level.note if level.sd is None else "zero observed SD between seeds: power cannot be estimated"
        return Power(n_seeds=level.n, sd=level.sd, mde=None, seeds_needed=dict.fromkeys(keys), note=why)
    needed = {k: seeds_needed(e, level.sd) for k, e in zip(keys, EFFECTS)}
    ends = sd_interval(level.sd, level.n)
    rule = None if claim is None else rule_mde(level.sd, level.n, claim, family)
    rule_ends = None if claim is None or rule is None else [rule_mde(x, level.n, claim, family) for x in ends]
    return Power(
        n_seeds=level.n,
        sd=level.sd,
        mde=mde(level.sd, level.n),
        seeds_needed=needed,
        note="",
        rule_mde=rule,
        family=family,
        mde_range=[mde(x, level.n) for x in ends],
        rule_mde_range=None if rule_ends is None or None in rule_ends else rule_ends,
    )


def ranged(value: float, ends: list[float] | None, spec: str = ".3f") -> str:
    """A power figure and, where known, its values at the ends of the SD's 80% interval:
    "0.182 (0.145 to 0.287)"."""
    if ends is None:
        return format(value, spec)
    return f"{value:{spec}} ({ends[0]:{spec}} to {ends[1]:{spec}})"


def sd_interval(sd: float, n: int, level: float = SD_LEVEL) -> tuple[float, float]:
    """The central `level` interval of the true SD behind an observed `sd` of n normal seeds:
    (n - 1) s^2 / sigma^2 is chi-square with n - 1 degrees of freedom. At 7 seeds it spans 0.75 to
    1.65 times the observed SD, so a power figure from 7 seeds is good to a factor of about two."""
    from scipy import stats as sps

    tail = (1.0 - level) / 2.0
    lo = sd * math.sqrt((n - 1) / float(sps.chi2.ppf(1.0 - tail, n - 1)))
    hi = sd * math.sqrt((n - 1) / float(sps.chi2.ppf(tail, n - 1)))
    return lo, hi


def rule_mde(sd: float, n: int, claim: ClaimParams, family: int, target: float = POWER) -> float | None:
    """The true mean improvement at which the claim's rule holds with probability `target`, seeds'
    differences normal with this SD, the test at ALPHA / family (Holm is never stricter). None
    without an interval rule (such a claim never holds) or when min_seed_wins exceeds n.

    For a fixed draw z (n,) the differences are delta + sd z, and each condition of the rule is a
    threshold on delta: mean above min_delta (delta > bar - sd mean(z)), the t test
    (delta > c sd sd(z) / sqrt(n) - sd mean(z)) and k seed wins (delta > bar - sd z_(k), the k-th
    largest). A draw holds above the largest threshold, so the answer is their `target` quantile:
    exact for the fixed draws, with no search."""
    from scipy import stats as sps

    k = claim.min_seed_wins
    if claim.ci_rule == "none" or n < 2 or not sd > 0 or k > n:
        return None
    z = _draws(n)
    zbar, zsd = z.mean(axis=1), z.std(axis=1, ddof=1)
    c = float(sps.t.ppf(1.0 - ALPHA / family, n - 1))
    need = np.maximum(claim.min_delta - sd * zbar, c * sd * zsd / math.sqrt(n) - sd * zbar)
    if k > 0:
        need = np.maximum(need, claim.min_delta - sd * np.sort(z, axis=1)[:, n - k])
    return float(np.quantile(need, target))


@lru_cache(maxsize=16)
def _draws(n: int) -> np.ndarray:
    """Fixed standard normal draws (RULE_DRAWS, n): the same numbers on every machine (PCG64)."""
    z = np.random.default_rng(20261205).standard_normal((RULE_DRAWS, n))
    z.flags.writeable = False
    return z
