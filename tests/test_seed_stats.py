"""The seed as the unit: the t interval and the power numbers against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pappo.evidence.power import power_of
from pappo.stats import mde, power, seed_interval, seeds_needed


def test_the_t_interval_of_three_seeds_matches_the_hand_computation():
    # the published run's per-seed differences (issue 40): mean 0.1, sd sqrt(0.0139/2) = 0.117898,
    # t_{0.975, 2} = 4.302653 (tables), half width 4.302653 * 0.117898 / sqrt(3) = 0.292876
    level = seed_interval([0.07, 0.00, 0.23])
    assert level.mean == pytest.approx(0.1)
    assert level.sd == pytest.approx(0.117898, abs=1e-6)
    assert level.lo == pytest.approx(0.1 - 0.292876, abs=1e-5) and level.hi == pytest.approx(
        0.1 + 0.292876, abs=1e-5
    )
    assert level.n == 3 and "2 degrees of freedom" in level.note


def test_the_t_interval_of_two_seeds_uses_one_degree_of_freedom():
    # mean 0.2, sd 0.141421, t_{0.975, 1} = 12.706205: half width 12.706205 * 0.141421 / sqrt(2) = 1.270620
    level = seed_interval([0.1, 0.3])
    assert (level.lo, level.hi) == pytest.approx((0.2 - 1.270620, 0.2 + 1.270620), abs=1e-5)


def test_one_seed_and_zero_spread_are_said_not_divided_by():
    one = seed_interval([0.2])
    assert (one.lo, one.hi, one.sd) == (None, None, None) and "one seed" in one.note
    flat = seed_interval([0.1, 0.1, 0.1])
    assert flat.lo == flat.hi == pytest.approx(0.1) and flat.sd == 0.0 and "zero observed spread" in flat.note
    assert power_of([0.2]).mde is None and "one seed" in power_of([0.2]).note
    p = power_of([0.1, 0.1, 0.1])
    assert p.mde is None and set(p.seeds_needed.values()) == {None} and "zero observed SD" in p.note


def test_power_at_no_effect_is_the_test_level():
    assert power(0.0, 0.1, 3) == pytest.approx(0.05, abs=1e-12)
    assert power(0.0, 2.0, 40, alpha=0.1) == pytest.approx(0.1, abs=1e-12)


def test_mde_tends_to_the_normal_formula_for_many_seeds():
    # (z_0.975 + z_0.8) sd / sqrt(n) = (1.959964 + 0.841621) / sqrt(n): the t test's own limit
    big = mde(1.0, 2000)
    assert big == pytest.approx(2.801585 / math.sqrt(2000), rel=2e-3)
    assert power(big, 1.0, 2000) == pytest.approx(0.8, abs=1e-8)
    assert math.isfinite(mde(0.1, 1000))  # scipy's nct tail returns nan there; the guard keeps it finite


def test_mde_of_three_seeds_is_what_a_simulated_t_test_detects_80_percent_of_the_time():
    sd, n = 0.1, 3
    effect = mde(sd, n)
    assert effect == pytest.approx(0.3264, abs=1e-4)  # issue 40: three seeds detect only about 0.3-0.4
    rng = np.random.default_rng(0)
    draws = rng.normal(effect, sd, size=(400_000, n))
    t = draws.mean(axis=1) / (draws.std(axis=1, ddof=1) / math.sqrt(n))
    assert np.mean(np.abs(t) > 4.302653) == pytest.approx(0.8, abs=0.004)


def test_seeds_needed_is_the_smallest_count_with_enough_power():
    # normal approximation (2.8016 * 0.1 / 0.1)^2 = 7.8; the t test's heavier tails need 10
    assert seeds_needed(0.10, 0.1) == 10
    assert power(0.10, 0.1, 10) >= 0.8 > power(0.10, 0.1, 9)
    assert seeds_needed(0.05, 0.1) == 34 and seeds_needed(0.15, 0.1) == 6
    assert seeds_needed(1e-4, 1.0) is None  # beyond any feasible experiment
    with pytest.raises(ValueError, match="effect > 0"):
        seeds_needed(0.0, 0.1)
