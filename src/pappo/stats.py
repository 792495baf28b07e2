"""Statistics shared by evaluation (rl) and evidence: bootstrap intervals, paired differences, pass@k, seed wins.

Every bootstrap here is a percentile bootstrap (Efron & Tibshirani 1993,
"An Introduction to the Bootstrap", ch. 13) over tasks, drawn from
``numpy.random.Generator(PCG64(seed))`` so a report is reproducible bit for bit. Multi-seed
variants resample tasks within each seed independently and keep the seeds fixed (a stratified
bootstrap, Davison & Hinkley 1997, "Bootstrap Methods and their Application", sec. 3.7), so the
interval reflects task sampling only: evaluation noise within fixed seeds, never the variation
between trained policies.

The seed is the unit that was randomised (one trained policy per seed plays every eval task), so
claims are judged on the per-seed paired differences: a t interval with n_seeds - 1 degrees of
freedom (`seed_interval`) and its power (`mde`, `seeds_needed`; noncentral t, scipy.stats).
Miller 2024, "Adding error bars to evals", sec. 2-4 (cluster on the unit of randomisation, paired
differences, power); Colas et al. 2018, "How many random seeds?" (power, then the number of seeds).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Interval",
    "bootstrap_ci",
    "bootstrap_ci_seeds",
    "paired_diff_ci",
    "paired_diff_ci_seeds",
    "pass_at_k",
    "mean_pass_at_k",
    "TIE",
    "above",
    "wins",
    "seed_wins",
    "SeedLevel",
    "seed_interval",
    "power",
    "mde",
    "seeds_needed",
]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval, lo <= mean <= hi."""

    mean: float
    lo: float
    hi: float

    def to_json(self) -> dict[str, float]:
        """The interval as a JSON-ready dict {"mean", "lo", "hi"} of plain floats."""
        return {"mean": float(self.mean), "lo": float(self.lo), "hi": float(self.hi)}


# ---------------------------------------------------------------------------------------------
# input checks


def _scores(values: Sequence[float], name: str, fn: str, unit: str = "task") -> np.ndarray:
    """`values` as a non-empty, finite, 1-D float64 array, or a ValueError that says how to fix it."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{fn}: {name} must be a flat sequence of numbers (one score per {unit}); {exc}"
        ) from None
    if arr.ndim != 1:
        raise ValueError(
            f"{fn}: {name} must be 1-D (one score per {unit}), got shape {arr.shape}; flatten it first"
        )
    if arr.size == 0:
        raise ValueError(f"{fn}: {name} is empty; pass at least one per-{unit} score")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(
            f"{fn}: {name}[{bad}] is {arr[bad]}; drop or score that {unit} before computing statistics"
        )
    return arr


def _boot_params(n_boot: int, alpha: float, seed: int, fn: str) -> None:
    """Check the bootstrap knobs shared by every interval function."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"{fn}: n_boot must be a positive integer (e.g. 2000), got {n_boot!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0.0 < alpha < 1.0:
        raise ValueError(
            f"{fn}: alpha must lie strictly between 0 and 1 (0.05 for a 95% interval), got {alpha!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{fn}: seed must be a non-negative integer, got {seed!r}")


def _is_seq(x: object) -> bool:
    """True for lists, tuples, numpy arrays and other sequences, but not for strings."""
    return not isinstance(x, (str, bytes)) and isinstance(x, (Sequence, np.ndarray))


def _strata(per_seed: Sequence[Sequence[float]], name: str, fn: str) -> list[np.ndarray]:
    """Each seed's task scores checked by `_scores`; at least one seed."""
    if not _is_seq(per_seed):
        raise ValueError(f"{fn}: {name} must be a sequence with one sequence of task scores per seed")
    if len(per_seed) == 0:
        raise ValueError(f"{fn}: {name} is empty; pass one sequence of task scores per seed")
    return [_scores(s, f"{name}[{i}]", fn) for i, s in enumerate(per_seed)]


# ---------------------------------------------------------------------------------------------
# bootstrap core


def _stratified_interval(strata: list[np.ndarray], n_boot: int, alpha: float, seed: int) -> Interval:
    """Percentile interval of the mean over strata of within-stratum means.

    Efron & Tibshirani (1993) ch. 13 percentile method: lo/hi are the alpha/2 and 1 - alpha/2
    quantiles of the bootstrap replicates. Tasks are resampled with replacement within each
    stratum (one (n_boot, n_s) index draw per stratum, in stratum order, from one PCG64 stream);
    strata stay fixed (Davison & Hinkley 1997, sec. 3.7). A constant stratum contributes its
    value exactly, so all-equal input gives lo == mean == hi. The interval is widened, if need
    be, to contain the point estimate (only reachable with extreme alpha or tiny samples).
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    # column 0 is the point estimate, columns 1.. the replicates: one reduction for both, so a
    # constant input yields bit-identical point and replicates.
    table = np.empty((len(strata), n_boot + 1), dtype=np.float64)
    for row, values in enumerate(strata):
        idx = rng.integers(0, values.size, size=(n_boot, values.size))
        if np.ptp(values) == 0.0:
            table[row] = values[0]
        else:
            table[row, 0] = values.mean()
            table[row, 1:] = values[idx].mean(axis=1)
    stats = table.mean(axis=0)
    point = float(stats[0])
    lo, hi = np.quantile(stats[1:], [alpha / 2.0, 1.0 - alpha / 2.0])
    return Interval(mean=point, lo=min(float(lo), point), hi=max(float(hi), point))


def bootstrap_ci(values: Sequence[float], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> Interval:
    """Sample mean of per-task scores with a percentile-bootstrap (1 - alpha) interval.

    Percentile bootstrap (Efron & Tibshirani 1993, ch. 13): resample the n tasks with
    replacement n_boot times, take the alpha/2 and 1 - alpha/2 quantiles of the resampled means.
    Deterministic for a given seed (numpy Generator(PCG64(seed))). One value, or all-equal
    values, gives lo == hi == mean. Raises ValueError on empty or non-finite input.
    """
    fn = "bootstrap_ci"
    _boot_params(n_boot, alpha, seed, fn)
    return _stratified_interval([_scores(values, "values", fn)], n_boot, alpha, seed)


def bootstrap_ci_seeds(
    per_seed: Sequence[Sequence[float]], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0
) -> Interval:
    """Mean over seeds of per-seed task means, with a stratified percentile-bootstrap interval.

    Tasks are resampled within each seed independently and the seeds are held fixed (stratified
    bootstrap, Davison & Hinkley 1997, sec. 3.7; percentile interval, Efron & Tibshirani 1993,
    ch. 13). Seeds may have different task counts; each seed weighs equally (this is not the
    pooled mean). With a single seed the result equals ``bootstrap_ci(per_seed[0], ...)``.
    """
    fn = "bootstrap_ci_seeds"
    _boot_params(n_boot, alpha, seed, fn)
    return _stratified_interval(_strata(per_seed, "per_seed", fn), n_boot, alpha, seed)


def _paired(
    a: Sequence[float], b: Sequence[float], fn: str, names: tuple[str, str] = ("a", "b"), unit: str = "tasks"
) -> np.ndarray:
    """Per-item differences a_i - b_i after checking both sides and their lengths."""
    xa = _scores(a, names[0], fn, unit.rstrip("s"))
    xb = _scores(b, names[1], fn, unit.rstrip("s"))
    if xa.size != xb.size:
        raise ValueError(
            f"{fn}: {names[0]} has {xa.size} {unit} but {names[1]} has {xb.size}; paired differences need "
            f"the same {unit} in the same order on both sides"
        )
    return xa - xb


def paired_diff_ci(
    a: Sequence[float], b: Sequence[float], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0
) -> Interval:
    """Mean paired difference mean(a_i - b_i) over tasks, with a percentile-bootstrap interval.

    Paired bootstrap over tasks (Efron & Tibshirani 1993, ch. 13 percentile method applied to the
    per-task differences), so task difficulty cancels between the two arms. a and b must list
    the same tasks in the same order; mismatched lengths raise ValueError.
    """
    fn = "paired_diff_ci"
    _boot_params(n_boot, alpha, seed, fn)
    return _stratified_interval([_paired(a, b, fn)], n_boot, alpha, seed)


def paired_diff_ci_seeds(
    pairs_per_seed: Sequence[tuple[Sequence[float], Sequence[float]]],
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Interval:
    """Mean over seeds of per-seed mean paired differences, stratified by seed.

    Each seed contributes a pair (a, b) of per-task scores over the same tasks; differences are
    resampled within each seed, seeds fixed (Davison & Hinkley 1997, sec. 3.7; percentile
    interval, Efron & Tibshirani 1993, ch. 13). Seeds may have different task counts.
    """
    fn = "paired_diff_ci_seeds"
    _boot_params(n_boot, alpha, seed, fn)
    if not _is_seq(pairs_per_seed):
        raise ValueError(f"{fn}: pairs_per_seed must be a sequence of (a, b) pairs, one per seed")
    if len(pairs_per_seed) == 0:
        raise ValueError(f"{fn}: pairs_per_seed is empty; pass one (a, b) pair of task scores per seed")
    strata = []
    for i, pair in enumerate(pairs_per_seed):
        if not _is_seq(pair) or len(pair) != 2:
            raise ValueError(f"{fn}: pairs_per_seed[{i}] must be an (a, b) pair of task-score sequences")
        names = (f"pairs_per_seed[{i}][0] (a)", f"pairs_per_seed[{i}][1] (b)")
        strata.append(_paired(pair[0], pair[1], fn, names))
    return _stratified_interval(strata, n_boot, alpha, seed)


# ---------------------------------------------------------------------------------------------
# pass@k and seed wins


def _count(value: int, name: str, fn: str) -> int:
    """`value` as a Python int (bools and floats rejected)."""
    if isinstance(value, bool):
        raise ValueError(f"{fn}: {name} must be an integer count, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{fn}: {name} must be an integer count, got {value!r}") from None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct.

    Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1 and fig. 3):
    pass@k = 1 - C(n - c, k) / C(n, k), computed stably as 1 - prod_{i=n-c+1}^{n} (1 - k / i);
    exactly 1.0 when n - c < k. Requires 0 <= c <= n and 1 <= k <= n.
    """
    fn = "pass_at_k"
    n, c, k = _count(n, "n", fn), _count(c, "c", fn), _count(k, "k", fn)
    if n < 1:
        raise ValueError(f"{fn}: n (samples per task) must be at least 1, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"{fn}: c (correct samples) must satisfy 0 <= c <= n = {n}, got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"{fn}: k must satisfy 1 <= k <= n = {n}, got {k}; draw at least k samples per task")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Mean over tasks of the unbiased pass@k (Chen et al. 2021, eq. 1) from (n, c) per task.

    Each task may have its own sample count n, but every n must be at least k.
    """
    fn = "mean_pass_at_k"
    if not _is_seq(counts):
        raise ValueError(f"{fn}: counts must be a sequence of (n, c) pairs, one per task")
    if len(counts) == 0:
        raise ValueError(f"{fn}: counts is empty; pass one (n, c) pair per task")
    total = 0.0
    for i, pair in enumerate(counts):
        if not _is_seq(pair) or len(pair) != 2:
            raise ValueError(f"{fn}: counts[{i}] must be an (n, c) pair of integers, got {pair!r}")
        try:
            total += pass_at_k(pair[0], pair[1], k)
        except ValueError as exc:
            raise ValueError(f"{fn}: counts[{i}] = {tuple(pair)!r}: {exc}") from None
    return total / len(counts)


# Per-seed differences are means of 0/1 outcomes (or of rates): two that should be equal can differ
# by a rounding residue (18/120 computed as 0.14999999999999997); closer than this is equal.
TIE = 1e-9


def above(x: float, bar: float) -> bool:
    """x is above `bar` by more than a rounding residue (`TIE`)."""
    return x - bar > TIE


def wins(diffs: Sequence[float], min_delta: float = 0.0) -> int:
    """Seed wins of per-seed differences (n,): #{s : d_s above min_delta}, ties within `TIE` not
    counted. The one count of seed wins, for the summary's comparisons and the claims' rules."""
    return sum(above(float(d), min_delta) for d in diffs)


def seed_wins(a_per_seed: Sequence[float], b_per_seed: Sequence[float], min_delta: float = 0.0) -> int:
    """Number of seeds where a beats b by more than min_delta: `wins` of the differences a_s - b_s.

    A sign-test style count over paired seeds (Conover 1999, "Practical Nonparametric
    Statistics", sec. 3.4); a and b must list the same seeds in the same order.
    """
    fn = "seed_wins"
    diffs = _paired(a_per_seed, b_per_seed, fn, ("a_per_seed", "b_per_seed"), unit="seeds")
    if isinstance(min_delta, bool) or not isinstance(min_delta, (int, float, np.integer, np.floating)):
        raise ValueError(f"{fn}: min_delta must be a finite number, got {min_delta!r}")
    if not math.isfinite(min_delta):
        raise ValueError(f"{fn}: min_delta must be a finite number, got {min_delta!r}")
    return wins(diffs, float(min_delta))


# ---------------------------------------------------------------------------------------------
# the seed as the unit: t interval and power
# scipy is imported inside the functions: evaluation (rl) imports this module and never needs it.

POWER = 0.8  # the conventional target (Cohen 1988, sec. 2.4); Colas et al. 2018 use it for RL seeds
MAX_SEEDS = 10_000  # seeds_needed answers None beyond this: no feasible experiment


@dataclass(frozen=True)
class SeedLevel:
    """Mean of per-seed differences, its (1 - alpha) t interval and their SD; lo/hi None with one seed."""

    mean: float
    lo: float | None
    hi: float | None
    sd: float | None
    n: int
    note: str


def seed_interval(diffs: Sequence[float], alpha: float = 0.05) -> SeedLevel:
    """t interval of the mean of per-seed differences `diffs` (n,), n - 1 degrees of freedom.

    mean +- t_{1 - alpha/2, n-1} * sd / sqrt(n), sd with ddof 1 (Student 1908; Miller 2024, sec. 2).
    One seed: no interval (lo = hi = sd = None) and a note saying so. Zero SD: the interval is the
    point itself, and the note says that n equal differences cannot show the spread is small.
    """
    from scipy import stats as sps

    fn = "seed_interval"
    d = _scores(diffs, "diffs", fn, "seed")
    _boot_params(1, alpha, 0, fn)
    mean, n = float(d.mean()), int(d.size)
    if n == 1:
        return SeedLevel(mean, None, None, None, 1, "one seed: no interval between seeds can be computed")
    if np.ptp(d) == 0.0:  # equal values: exactly zero spread (std() leaves a rounding residue)
        return SeedLevel(
            mean,
            mean,
            mean,
            0.0,
            n,
            f"the {n} seeds differ by exactly the same amount: zero "
            "observed spread, so the interval has no width (more seeds would show their spread)",
        )
    sd = float(d.std(ddof=1))
    half = float(sps.t.ppf(1.0 - alpha / 2.0, n - 1)) * sd / math.sqrt(n)
    return SeedLevel(mean, mean - half, mean + half, sd, n, f"t interval, {n - 1} degrees of freedom")


def power(effect: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided one-sample (paired) t test at level alpha to detect a true mean `effect`.

    With noncentrality nc = effect * sqrt(n) / sd and c = t_{1 - alpha/2, n-1}:
    power = P(T' > c) + P(T' < -c), T' noncentral t(n - 1, nc) (Cohen 1988, sec. 2.5).
    """
    from scipy import stats as sps

    if n < 2 or not sd > 0:
        raise ValueError(f"power: needs n >= 2 seeds and sd > 0, got n={n}, sd={sd}")
    df, nc = n - 1, abs(effect) * math.sqrt(n) / sd  # symmetric in the sign of the effect
    c = float(sps.t.ppf(1.0 - alpha / 2.0, df))
    wrong_side = float(sps.nct.cdf(-c, df, nc))
    # scipy 1.17's nct.cdf returns nan deep in this tail (df 999, nc 25: the true value is < 1e-100)
    return float(sps.nct.sf(c, df, nc)) + (0.0 if math.isnan(wrong_side) else wrong_side)


def mde(sd: float, n: int, alpha: float = 0.05, target: float = POWER) -> float:
    """Minimum detectable effect: the true mean difference that `n` seeds detect with power `target`.

    Solves power(effect, sd, n) = target for effect > 0 (scipy.optimize.brentq). For large n it
    tends to (z_{1 - alpha/2} + z_target) * sd / sqrt(n) = 2.80 sd / sqrt(n) (alpha 0.05, power 0.8).
    """
    from scipy.optimize import brentq

    if n < 2 or not sd > 0:
        raise ValueError(f"mde: needs n >= 2 seeds and sd > 0, got n={n}, sd={sd}")
    hi = sd
    while power(hi, sd, n, alpha) < target:  # power grows with the effect: bracket, then solve
        hi *= 2.0
    return float(brentq(lambda e: power(e, sd, n, alpha) - target, 0.0, hi, xtol=1e-10))


def seeds_needed(effect: float, sd: float, alpha: float = 0.05, target: float = POWER) -> int | None:
    """Smallest n >= 2 whose two-sided t test detects `effect` with power `target`; None above MAX_SEEDS."""
    if not effect > 0 or not sd > 0:
        raise ValueError(f"seeds_needed: needs effect > 0 and sd > 0, got effect={effect}, sd={sd}")
    lo, hi = 1, 2
    while power(effect, sd, hi, alpha) < target:  # doubling, then bisection on n (power grows with n)
        lo, hi = hi, hi * 2
        if hi > MAX_SEEDS:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(effect, sd, mid, alpha) >= target else (mid, hi)
    return hi
