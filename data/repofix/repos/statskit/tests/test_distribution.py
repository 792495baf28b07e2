import pytest

from statskit import RunningStats, StatsError, bin_edges, histogram, iqr, percentile, quartiles

DATA = [15, 20, 35, 40, 50]


@pytest.mark.parametrize(
    "p,expected",
    [(0, 15), (100, 50), (50, 35), (25, 20), (40, 29), (90, 46), (10, 17)],
    ids=["p0", "p100", "p50", "p25", "p40", "p90", "p10"],
)
def test_percentile_linear_interpolation(p, expected):
    """Percentiles interpolate linearly between sorted neighbours."""
    assert percentile(DATA, p) == pytest.approx(expected)


def test_percentile_unsorted_and_single():
    """Input order does not matter; a single value is every percentile."""
    assert percentile([50, 15, 40, 20, 35], 75) == 40
    assert percentile([7], 0) == 7
    assert percentile([7], 100) == 7


def test_percentile_out_of_range_raises():
    """p must lie in 0..100 and data must not be empty."""
    with pytest.raises(StatsError):
        percentile(DATA, -0.1)
    with pytest.raises(StatsError):
        percentile(DATA, 100.5)
    with pytest.raises(StatsError):
        percentile([], 50)


def test_quartiles_and_iqr():
    """Quartiles of 1..9 are 3, 5, 7 and the IQR is 4."""
    data = list(range(1, 10))
    assert quartiles(data) == (3, 5, 7)
    assert iqr(data) == 4
    assert quartiles([1, 2, 3, 4]) == (1.75, 2.5, 3.25)


def test_bin_edges():
    """Edges are evenly spaced and end exactly at the upper bound."""
    assert bin_edges(0, 10, 5) == [0, 2, 4, 6, 8, 10]
    assert bin_edges(-1, 1, 1) == [-1, 1]
    with pytest.raises(StatsError):
        bin_edges(0, 10, 0)
    with pytest.raises(StatsError):
        bin_edges(3, 3, 2)


def test_histogram_edge_rules():
    """Left edges are inclusive, right edges exclusive, except the last bin."""
    data = [0, 1.9, 2, 4, 5.5, 8, 9.99, 10]
    assert histogram(data, bins=5, lo=0, hi=10) == [2, 1, 2, 0, 3]


def test_histogram_ignores_out_of_range():
    """Values below lo or above hi are not counted."""
    assert histogram([-1, 0, 5, 10, 10.5], bins=2, lo=0, hi=10) == [1, 2]


def test_histogram_default_bounds():
    """Without bounds the data's min and max are used; default is ten bins."""
    assert histogram([1, 2, 3, 4, 5], bins=4) == [1, 1, 1, 2]
    assert histogram(range(10)) == [1] * 10
    assert histogram([3, 3, 3], bins=2) == [3, 0]
    assert histogram([], bins=3) == [0, 0, 0]


def test_histogram_invalid_bounds():
    """An explicit upper bound below the lower bound is an error."""
    with pytest.raises(StatsError):
        histogram([1, 2], bins=2, lo=5, hi=1)
    with pytest.raises(StatsError):
        histogram([1, 2], bins=0)


def test_running_stats_matches_batch():
    """Streaming mean/variance equal the batch results."""
    rs = RunningStats().extend([2, 4, 4, 4, 5, 5, 7, 9])
    assert (rs.count, rs.mean) == (8, 5.0)
    assert rs.variance(sample=False) == pytest.approx(4.0)
    assert rs.variance() == pytest.approx(32 / 7)
    assert rs.stdev(sample=False) == pytest.approx(2.0)
    assert (rs.minimum, rs.maximum) == (2, 9)


def test_running_stats_needs_enough_data():
    """Variance needs one value (population) or two values (sample)."""
    rs = RunningStats()
    with pytest.raises(StatsError):
        rs.variance(sample=False)
    rs.push(3)
    assert rs.variance(sample=False) == 0.0
    with pytest.raises(StatsError):
        rs.stdev()
    rs.push(5)
    assert rs.variance() == 2.0


def test_running_stats_merge():
    """Merging two accumulators equals accumulating all values at once."""
    left = RunningStats().extend([1, 2, 3])
    right = RunningStats().extend([10, 20])
    merged = left.merge(right)
    assert (merged.count, merged.mean) == (5, 7.2)
    assert merged.variance(sample=False) == pytest.approx(50.96)
    assert (merged.minimum, merged.maximum) == (1, 20)
    assert left.count == 3


def test_running_stats_merge_with_empty():
    """Merging with an empty accumulator keeps the other's values."""
    full = RunningStats().extend([4, 8])
    merged = RunningStats().merge(full)
    assert (merged.count, merged.mean, merged.variance()) == (2, 6.0, 8.0)
    empty = RunningStats().merge(RunningStats())
    assert (empty.count, empty.mean) == (0, 0.0)
