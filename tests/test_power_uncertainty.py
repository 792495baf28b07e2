"""A power figure from a few seeds is itself uncertain: each is also given at the two ends of the
true SD's 80% interval (chi-square with n - 1 degrees of freedom), which covers the figure the true
SD gives in 80% of experiments (the review's simulation: at 7 seeds and a true SD of 0.1 the printed
MDE ranged 0.075 to 0.167 over experiments, around a true 0.127)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pappo.evidence.power import power_of, ranged, rule_mde, sd_interval
from pappo.stats import mde
from test_claim_family import CLAIM


def test_the_sd_interval_at_seven_seeds_on_worked_numbers():
    # chi-square, 6 df: 10% quantile 2.2041, 90% quantile 10.6446 -> sqrt(6 / 10.6446), sqrt(6 / 2.2041)
    lo, hi = sd_interval(1.0, 7)
    assert lo == pytest.approx(0.75078, abs=2e-4) and hi == pytest.approx(1.64989, abs=2e-4)
    lo2, hi2 = sd_interval(0.5, 7)
    assert (lo2, hi2) == pytest.approx((lo / 2, hi / 2))  # proportional to the observed SD


def test_the_mde_range_covers_the_true_sds_mde_in_about_80_percent_of_experiments():
    rng, sd, n, reps = np.random.default_rng(11), 0.1, 7, 600
    truth = mde(sd, n)
    hits = 0
    for _ in range(reps):
        p = power_of(list(rng.normal(0.05, sd, n)))
        hits += p.mde_range[0] <= truth <= p.mde_range[1]
    rate = hits / reps
    assert abs(rate - 0.80) <= 3 * math.sqrt(0.8 * 0.2 / reps), rate


def test_a_claims_rule_figure_is_ranged_too_and_the_ends_bracket_it():
    diffs = [0.175, 0.008, 0.15, -0.017, 0.108, 0.1, 0.058]  # cpu-ppo-beats-base's published seeds
    claim = CLAIM.model_copy(update={"min_delta": 0.15, "min_seed_wins": 4})
    p = power_of(diffs, claim, 5)
    lo, hi = p.rule_mde_range
    assert lo < p.rule_mde < hi
    ends = sd_interval(p.sd, 7)
    assert (lo, hi) == pytest.approx([rule_mde(x, 7, claim, 5) for x in ends])
    assert ranged(p.rule_mde, p.rule_mde_range) == f"{p.rule_mde:.3f} ({lo:.3f} to {hi:.3f})"
    assert power_of(diffs).rule_mde_range is None  # no claim, no rule
