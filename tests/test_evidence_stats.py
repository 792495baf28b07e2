"""Report statistics: pass@k against brute-force enumeration, bootstrap intervals (determinism,
ordering, degenerate inputs, normal-approximation width, simulated coverage), the stratified
multi-seed and paired variants, seed wins, and the error messages for bad input."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.stats import (
    Interval,
    bootstrap_ci,
    bootstrap_ci_seeds,
    mean_pass_at_k,
    paired_diff_ci,
    paired_diff_ci_seeds,
    pass_at_k,
    seed_wins,
    wins,
)

SCORE = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
SCORES = st.lists(SCORE, min_size=1, max_size=30)


def brute_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Fraction of the k-subsets of n samples (the first c correct) that contain a correct sample."""
    subsets = list(itertools.combinations(range(n), k))
    hits = sum(1 for s in subsets if any(i < c for i in s))
    return Fraction(hits, len(subsets))


# --------------------------------------------------------------------------------------------- pass@k


def test_pass_at_k_matches_enumeration_for_all_small_n():
    checked = 0
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(brute_pass_at_k(n, c, k)), abs=1e-12), (
                    n,
                    c,
                    k,
                )
                checked += 1
    assert checked == sum((n + 1) * n for n in range(1, 9))


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_matches_exact_binomial_ratio(nck):
    n, c, k = nck
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-9, abs=1e-12)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_1_is_the_fraction_correct(nc):
    n, c = nc
    assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-12)


def test_pass_at_k_edges():
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 5) == 1.0
    assert pass_at_k(10, 6, 5) == 1.0  # fewer than k wrong samples: every k-subset holds a correct one
    assert pass_at_k(np.int64(4), np.int64(2), np.int64(2)) == pytest.approx(5 / 6)
    assert isinstance(pass_at_k(4, 2, 2), float)


def test_mean_pass_at_k_averages_tasks_with_their_own_n():
    counts = [(4, 2), (10, 0), (3, 3), (8, 1)]
    expected = sum(float(brute_pass_at_k(n, c, 2)) for n, c in counts) / len(counts)
    assert mean_pass_at_k(counts, 2) == pytest.approx(expected, abs=1e-12)
    assert mean_pass_at_k(np.array([[5, 1], [5, 4]]), 1) == pytest.approx((0.2 + 0.8) / 2)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((0, 0, 1), "n (samples per task) must be at least 1"),
        ((5, 6, 1), "0 <= c <= n = 5"),
        ((5, -1, 1), "0 <= c <= n = 5"),
        ((5, 2, 0), "1 <= k <= n = 5"),
        ((5, 2, 6), "1 <= k <= n = 5"),
        ((5.0, 2, 1), "n must be an integer count"),
        ((5, True, 1), "c must be an integer count"),
    ],
)
def test_pass_at_k_rejects_bad_counts(args, fragment):
    with pytest.raises(ValueError, match="pass_at_k") as err:
        pass_at_k(*args)
    assert fragment in str(err.value)


def test_mean_pass_at_k_rejects_bad_input():
    with pytest.raises(ValueError, match="counts is empty"):
        mean_pass_at_k([], 1)
    with pytest.raises(ValueError, match=r"counts\[1\] = \(3, 1\).*1 <= k <= n = 3"):
        mean_pass_at_k([(10, 2), (3, 1)], 5)
    with pytest.raises(ValueError, match=r"counts\[0\] must be an \(n, c\) pair"):
        mean_pass_at_k([(10, 2, 1)], 1)


# --------------------------------------------------------------------------------------------- bootstrap_ci


def test_bootstrap_ci_is_deterministic_for_a_seed():
    values = np.random.default_rng(7).random(60).tolist()
    first = bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) == first
    assert bootstrap_ci(values, seed=4) != first
    assert first.mean == pytest.approx(float(np.mean(values)), abs=1e-15)
    assert first.lo < first.mean < first.hi


@settings(max_examples=60, deadline=None)
@given(SCORES, st.integers(0, 2**32), st.sampled_from([0.01, 0.05, 0.32, 0.9]))
def test_bootstrap_ci_orders_lo_mean_hi(values, seed, alpha):
    iv = bootstrap_ci(values, n_boot=200, alpha=alpha, seed=seed)
    assert iv.lo <= iv.mean <= iv.hi
    slack = 1e-12 * max(1.0, max(abs(v) for v in values))  # resampled means round by an ulp or so
    assert min(values) - slack <= iv.lo and iv.hi <= max(values) + slack
    assert iv.mean == pytest.approx(float(np.mean(values)), abs=1e-12)


@given(SCORE, st.integers(1, 40))
def test_bootstrap_ci_all_equal_values_give_zero_width(value, n):
    iv = bootstrap_ci([value] * n, n_boot=100)
    assert iv == Interval(value, value, value)


def test_bootstrap_ci_single_value():
    assert bootstrap_ci([0.7]) == Interval(0.7, 0.7, 0.7)


def test_interval_to_json():
    iv = bootstrap_ci([0.0, 1.0, 1.0, 0.0, 1.0], n_boot=300)
    out = iv.to_json()
    assert out == {"mean": iv.mean, "lo": iv.lo, "hi": iv.hi}
    assert all(type(v) is float for v in out.values())
    assert json.loads(json.dumps(out)) == out
    with pytest.raises(AttributeError):
        iv.mean = 0.0  # frozen


def test_bootstrap_ci_width_matches_normal_approximation():
    # A Bernoulli(0.3) sample with exactly 120 successes in 400, shuffled: a raw random draw
    # can land 2 standard errors off 0.3, which would test the dice rather than the code.
    p, n = 0.3, 400
    values = np.random.default_rng(2024).permutation(np.r_[np.ones(120), np.zeros(280)])
    iv = bootstrap_ci(values.tolist(), n_boot=2000, seed=0)
    assert iv.mean == pytest.approx(p)
    assert iv.lo < p < iv.hi
    normal_width = 2 * 1.96 * math.sqrt(p * (1 - p) / n)
    assert (iv.hi - iv.lo) == pytest.approx(normal_width, rel=0.25)


def test_bootstrap_ci_width_tracks_normal_approximation_on_random_draws():
    # Random Bernoulli(0.3) draws: the width matches the normal width at the sample proportion.
    rng = np.random.default_rng(77)
    for trial in range(5):
        values = (rng.random(400) < 0.3).astype(float)
        p_hat = float(values.mean())
        iv = bootstrap_ci(values, n_boot=1000, seed=trial)
        assert (iv.hi - iv.lo) == pytest.approx(2 * 1.96 * math.sqrt(p_hat * (1 - p_hat) / 400), rel=0.25)


def test_bootstrap_ci_coverage_on_simulated_bernoulli_data():
    p, n, trials = 0.4, 50, 200
    rng = np.random.default_rng(12345)
    covered = 0
    for t in range(trials):
        values = (rng.random(n) < p).astype(float)
        iv = bootstrap_ci(values, n_boot=500, alpha=0.05, seed=t)
        covered += iv.lo <= p <= iv.hi
    assert 0.88 <= covered / trials <= 0.99


def test_bootstrap_ci_narrows_with_larger_alpha():
    values = np.random.default_rng(1).normal(size=80)
    wide = bootstrap_ci(values, alpha=0.01)
    narrow = bootstrap_ci(values, alpha=0.32)
    assert wide.lo < narrow.lo < narrow.hi < wide.hi


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"values": []}, "values is empty; pass at least one per-task score"),
        ({"values": [0.1, float("nan")]}, "values[1] is nan"),
        ({"values": [0.1, float("inf")]}, "values[1] is inf"),
        ({"values": [[0.1, 0.2], [0.3, 0.4]]}, "must be 1-D"),
        ({"values": ["x"]}, "flat sequence of numbers"),
        ({"values": [0.1], "n_boot": 0}, "n_boot must be a positive integer"),
        ({"values": [0.1], "n_boot": 10.5}, "n_boot must be a positive integer"),
        ({"values": [0.1], "alpha": 0.0}, "alpha must lie strictly between 0 and 1"),
        ({"values": [0.1], "alpha": 1.0}, "alpha must lie strictly between 0 and 1"),
        ({"values": [0.1], "seed": -1}, "seed must be a non-negative integer"),
    ],
)
def test_bootstrap_ci_rejects_bad_input(kwargs, fragment):
    with pytest.raises(ValueError, match="bootstrap_ci") as err:
        bootstrap_ci(**kwargs)
    assert fragment in str(err.value)


# --------------------------------------------------------------------------------------------- multi-seed


@settings(max_examples=40, deadline=None)
@given(SCORES, st.integers(0, 2**32))
def test_bootstrap_ci_seeds_with_one_seed_equals_bootstrap_ci(values, seed):
    assert bootstrap_ci_seeds([values], n_boot=300, seed=seed) == bootstrap_ci(values, n_boot=300, seed=seed)


def test_bootstrap_ci_seeds_mean_is_mean_of_seed_means_not_pooled():
    per_seed = [[1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0]]
    iv = bootstrap_ci_seeds(per_seed, n_boot=500)
    assert iv.mean == pytest.approx((7 / 8 + 0.0) / 2)
    assert iv.mean != pytest.approx(7 / 10)  # the pooled mean
    assert iv.lo <= iv.mean <= iv.hi
    assert iv.hi - iv.lo > 0  # seed 0 varies under resampling


def test_bootstrap_ci_seeds_keeps_seeds_fixed():
    # Each seed is constant, so resampling tasks within seeds cannot move the mean: zero width,
    # although resampling the seeds themselves would.
    iv = bootstrap_ci_seeds([[0.2, 0.2, 0.2], [0.8] * 5, [0.5]], n_boot=500)
    assert iv.mean == pytest.approx(0.5)
    assert iv.lo == iv.mean == iv.hi


def test_bootstrap_ci_seeds_is_narrower_than_one_seed_alone():
    rng = np.random.default_rng(5)
    per_seed = [(rng.random(40) < 0.5).astype(float) for _ in range(4)]
    combined = bootstrap_ci_seeds(per_seed)
    single = bootstrap_ci(per_seed[0])
    assert combined.hi - combined.lo < single.hi - single.lo
    assert bootstrap_ci_seeds(per_seed) == combined


def test_bootstrap_ci_seeds_rejects_bad_input():
    with pytest.raises(ValueError, match="bootstrap_ci_seeds: per_seed is empty"):
        bootstrap_ci_seeds([])
    with pytest.raises(ValueError, match=r"bootstrap_ci_seeds: per_seed\[1\] is empty"):
        bootstrap_ci_seeds([[0.1], []])
    with pytest.raises(ValueError, match="one sequence of task scores per seed"):
        bootstrap_ci_seeds("abc")


# --------------------------------------------------------------------------------------------- paired


@given(SCORES)
def test_paired_diff_ci_of_identical_arms_is_zero(values):
    assert paired_diff_ci(values, list(values), n_boot=100) == Interval(0.0, 0.0, 0.0)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_paired_diff_ci_of_a_constant_shift(b):
    a = [x + 0.5 for x in b]
    iv = paired_diff_ci(a, b, n_boot=200)
    assert iv.mean == pytest.approx(0.5, abs=1e-12)
    assert iv.hi - iv.lo == pytest.approx(0.0, abs=1e-12)


def test_paired_diff_ci_is_the_bootstrap_of_differences():
    rng = np.random.default_rng(9)
    a, b = rng.random(30), rng.random(30)
    assert paired_diff_ci(a, b, seed=4) == bootstrap_ci(a - b, seed=4)


def test_paired_diff_ci_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="a has 3 tasks but b has 2.*same tasks in the same order"):
        paired_diff_ci([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match="paired_diff_ci: b is empty"):
        paired_diff_ci([0.1], [])


def test_paired_diff_ci_seeds_stratifies_by_seed():
    pairs = [([1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]), ([0.5, 0.5], [0.5, 0.0])]
    iv = paired_diff_ci_seeds(pairs, n_boot=500, seed=2)
    diffs = [[1.0, 0.0, 0.0, 1.0], [0.0, 0.5]]
    assert iv == bootstrap_ci_seeds(diffs, n_boot=500, seed=2)
    assert iv.mean == pytest.approx((0.5 + 0.25) / 2)
    assert paired_diff_ci_seeds([(pairs[0][0], pairs[0][1])], seed=1) == paired_diff_ci(*pairs[0], seed=1)


def test_paired_diff_ci_seeds_rejects_bad_input():
    with pytest.raises(ValueError, match="pairs_per_seed is empty"):
        paired_diff_ci_seeds([])
    with pytest.raises(ValueError, match=r"pairs_per_seed\[0\] must be an \(a, b\) pair"):
        paired_diff_ci_seeds([([0.1], [0.2], [0.3])])
    with pytest.raises(ValueError, match=r"pairs_per_seed\[1\]\[0\] \(a\) has 2 tasks but .* has 1"):
        paired_diff_ci_seeds([([0.1], [0.2]), ([0.1, 0.2], [0.3])])


# --------------------------------------------------------------------------------------------- seed wins


def test_seed_wins_counts_strictly_greater_than_min_delta():
    a = [0.5, 0.6, 0.7, 0.4, 0.9]
    b = [0.5, 0.5, 0.5, 0.5, 0.5]
    assert seed_wins(a, b) == 3  # ties (0.5 vs 0.5) are not wins
    assert seed_wins(a, b, min_delta=0.25) == 1  # 0.9 - 0.5 = 0.4
    assert seed_wins([1.0, 2.0], [0.0, 1.0], min_delta=1.0) == 0  # difference exactly min_delta: no win
    assert seed_wins([0.5], [0.6], min_delta=-0.2) == 1
    assert isinstance(seed_wins(a, b), int)


def test_a_rounding_residue_is_a_tie_not_a_win():
    """0.45 - 0.3 is 0.15000000000000002 and 0.3 - 0.2 - 0.1 is -2.8e-17: a seed at the bar is not a
    win whichever way its float rounds, in the summary's count and the claims' alike (one `wins`)."""
    assert 0.45 - 0.3 > 0.15 and seed_wins([0.45], [0.3], min_delta=0.15) == 0
    assert seed_wins([0.1 + 0.2], [0.3]) == 0  # 0.30000000000000004 vs 0.3
    assert wins([0.45 - 0.3, 0.15 + 2e-9], 0.15) == 1


def test_seed_wins_rejects_bad_input():
    with pytest.raises(ValueError, match="a_per_seed has 2 seeds but b_per_seed has 1"):
        seed_wins([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="a_per_seed is empty; pass at least one per-seed score"):
        seed_wins([], [])
    with pytest.raises(ValueError, match="min_delta must be a finite number"):
        seed_wins([0.1], [0.2], min_delta=float("nan"))
