"""The between/within split of a comparison's variance: worked numbers, a naive loop, a simulation."""

from __future__ import annotations

import numpy as np
import pytest

from pappo.evidence.variance import describe, variance_split


def test_worked_numbers():
    # seed 0: per-task differences [1, 0, 0, -1] -> mean 0, var (ddof 1) 2/3, SE^2 = 2/3 / 4 = 1/6
    # seed 1: [1, 1, 1, 1] -> mean 1, var 0
    pairs = [([1, 0, 1, 0], [0, 0, 1, 1]), ([1, 1, 1, 1], [0, 0, 0, 0])]
    v = variance_split(pairs)
    assert v is not None
    assert v.total == pytest.approx(0.5)  # var([0, 1], ddof 1)
    assert v.within == pytest.approx((1 / 6 + 0) / 2)
    assert v.between == pytest.approx(0.5 - 1 / 12)
    assert v.limited_by == "between seeds (training)"
    assert "limited by between seeds" in describe(v)


def test_matches_a_naive_loop():
    rng = np.random.default_rng(1)
    pairs = [(list(rng.random(n)), list(rng.random(n))) for n in (5, 7, 6)]
    means, ses = [], []
    for a, b in pairs:
        d = [x - y for x, y in zip(a, b)]
        m = sum(d) / len(d)
        means.append(m)
        ses.append(sum((x - m) ** 2 for x in d) / (len(d) - 1) / len(d))
    grand = sum(means) / 3
    total = sum((m - grand) ** 2 for m in means) / 2
    v = variance_split(pairs)
    assert v is not None
    assert (v.total, v.within) == pytest.approx((total, sum(ses) / 3))
    assert v.between == pytest.approx(max(total - sum(ses) / 3, 0.0))


def test_too_little_to_split_says_so():
    assert variance_split([([1, 0], [0, 0])]) is None  # one seed
    assert variance_split([([1], [0]), ([0], [0])]) is None  # one task per seed
    assert "needs 2 seeds" in describe(None)


@pytest.mark.parametrize(
    ("between_sd", "limited"), [(0.0, "within seeds (evaluation)"), (0.3, "between seeds (training)")]
)
def test_simulation_recovers_the_parts_and_names_the_larger(between_sd, limited):
    """Seeds with a true difference drawn with SD `between_sd`, tasks scored 0/1 around it: on
    average the split recovers the between-seed variance and the evaluation variance, and a
    comparison with no seed effect is named as evaluation-limited, one with a large one as training."""
    rng = np.random.default_rng(0)
    n_seeds, n_tasks, p = 8, 40, 0.5
    est_between, est_within, labels, true_within = [], [], [], []
    for _ in range(400):
        pairs = []
        for effect in rng.normal(0.0, between_sd, n_seeds):
            pa = float(np.clip(p + effect, 0, 1))
            a = rng.random(n_tasks) < pa
            b = rng.random(n_tasks) < p
            pairs.append((a.astype(float), b.astype(float)))
            true_within.append((pa * (1 - pa) + p * (1 - p)) / n_tasks)  # two Bernoulli arms per task
        v = variance_split(pairs)
        assert v is not None
        est_between.append(v.total - v.within)  # unclipped: unbiased
        est_within.append(v.within)
        labels.append(v.limited_by)
    assert np.mean(est_within) == pytest.approx(np.mean(true_within), rel=0.1)
    # the between part: clipping of p + effect at [0, 1] shrinks it a little for SD 0.3
    scale = max(between_sd**2, float(np.mean(true_within)))
    assert np.mean(est_between) == pytest.approx(between_sd**2, abs=0.2 * scale)
    assert max(set(labels), key=labels.count) == limited
