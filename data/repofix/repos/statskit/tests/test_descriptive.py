import math

import pytest

from statskit import StatsError, data_range, frequencies, mean, median, mode, modes, stdev, variance, zscores

CLASSIC = [2, 4, 4, 4, 5, 5, 7, 9]


def test_mean():
    """Mean of integers may be fractional; a single value is its own mean."""
    assert mean([1, 2, 3, 4]) == 2.5
    assert mean([7]) == 7
    assert mean([-3, 3, -6]) == -2


def test_median_odd_and_even():
    """Odd sizes pick the middle value, even sizes average the middle pair."""
    assert median([5, 1, 3]) == 3
    assert median([4, 1, 3, 2]) == 2.5
    assert median([10]) == 10
    assert median([1, 100]) == 50.5


def test_modes_report_ties_in_first_seen_order():
    """All tied most-frequent values are returned in order of appearance."""
    assert modes([3, 1, 1, 3, 2]) == [3, 1]
    assert modes([1, 2, 2, 2, 3, 3]) == [2]
    assert modes([9, 8, 7]) == [9, 8, 7]


def test_frequencies_count_each_value():
    """Counts start at one per value and keep first-seen order."""
    assert frequencies([3, 1, 3, 3, 2]) == {3: 3, 1: 1, 2: 1}
    assert frequencies([]) == {}


def test_mode_single():
    """mode() returns the first of the tied modes."""
    assert mode([4, 5, 5, 4]) == 4
    assert mode([1, 6, 6]) == 6


def test_empty_data_raises():
    """Statistics of no data are undefined."""
    for func in (mean, median, modes, data_range):
        with pytest.raises(StatsError):
            func([])


def test_population_variance_and_stdev():
    """The classic textbook sample has population variance 4 and stdev 2."""
    assert variance(CLASSIC, sample=False) == 4.0
    assert stdev(CLASSIC, sample=False) == 2.0
    assert variance([5], sample=False) == 0.0


def test_sample_variance_uses_n_minus_one():
    """Sample variance divides by n - 1 and needs two values."""
    assert variance(CLASSIC) == pytest.approx(32 / 7)
    assert stdev([1, 3]) == pytest.approx(math.sqrt(2))
    assert variance([1, 2, 3, 4]) == pytest.approx(5 / 3)
    with pytest.raises(StatsError):
        variance([5])


def test_data_range():
    """Range is max minus min, including negatives."""
    assert data_range([3, -2, 8, 0]) == 10
    assert data_range([4]) == 0


def test_zscores_population():
    """Z-scores use the population stdev by default."""
    assert zscores(CLASSIC) == [-1.5, -0.5, -0.5, -0.5, 0.0, 0.0, 1.0, 2.0]


def test_zscores_sample_and_constant():
    """Sample z-scores use n - 1; constant data has no z-scores."""
    assert zscores([1, 3], sample=True) == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)])
    with pytest.raises(StatsError):
        zscores([4, 4, 4])
    with pytest.raises(StatsError):
        zscores([4], sample=True)
    with pytest.raises(StatsError):
        zscores([])
    assert zscores([1, 3]) == [-1.0, 1.0]
