import math

import pytest

from bitbloom import estimate_items, false_positive_rate, optimal_num_bits, optimal_num_hashes


def test_optimal_num_bits_values():
    """Bits follow ceil(-n ln p / ln(2)^2)."""
    assert optimal_num_bits(1000, 0.01) == 9586
    assert optimal_num_bits(100, 0.05) == 624
    assert optimal_num_bits(1, 0.5) == 2


@pytest.mark.parametrize(
    "capacity,rate",
    [(0, 0.01), (10, 0.0), (10, 1.0), (10, -0.5), (10, 1.5)],
    ids=["zero_capacity", "rate_zero", "rate_one", "rate_negative", "rate_above_one"],
)
def test_optimal_num_bits_validation(capacity, rate):
    """Capacity below 1 or a rate outside (0, 1) is rejected."""
    with pytest.raises(ValueError, match="must"):
        optimal_num_bits(capacity, rate)


def test_optimal_num_hashes_values():
    """Hash count is round((m / n) ln 2) but never below 1."""
    assert optimal_num_hashes(9586, 1000) == 7
    assert optimal_num_hashes(624, 100) == 4
    assert optimal_num_hashes(1, 10) == 1
    assert optimal_num_hashes(3, 1) == 2
    with pytest.raises(ValueError):
        optimal_num_hashes(0, 10)
    with pytest.raises(ValueError):
        optimal_num_hashes(10, 0)


def test_false_positive_rate_values():
    """The rate follows (1 - e^(-kn/m))^k and is zero for an empty filter."""
    assert false_positive_rate(100, 3, 10) == pytest.approx(0.0174105865)
    assert false_positive_rate(9586, 7, 1000) == pytest.approx(0.0100345320)
    assert false_positive_rate(100, 1, 100) == pytest.approx(1 - math.exp(-1))
    assert false_positive_rate(100, 3, 0) == 0.0


def test_false_positive_rate_edges():
    """One bit, one hash and one item are valid; negative counts clamp to zero."""
    assert false_positive_rate(1, 1, 1) == pytest.approx(1 - math.exp(-1))
    assert false_positive_rate(100, 1, 1) == pytest.approx(1 - math.exp(-0.01))
    assert false_positive_rate(100, 3, -5) == 0.0
    with pytest.raises(ValueError):
        false_positive_rate(0, 3, 1)
    with pytest.raises(ValueError):
        false_positive_rate(10, 0, 1)


def test_estimate_items_values():
    """The estimate is -(m/k) ln(1 - X/m), zero when empty and infinite when full."""
    assert estimate_items(100, 3, 20) == pytest.approx(7.4381183771)
    assert estimate_items(100, 1, 50) == pytest.approx(100 * math.log(2))
    assert estimate_items(100, 3, 0) == 0.0
    assert estimate_items(100, 3, 100) == math.inf
    with pytest.raises(ValueError):
        estimate_items(100, 3, 101)
    with pytest.raises(ValueError):
        estimate_items(100, 3, -1)
