"""Classic Bloom filter sizing formulas."""

from __future__ import annotations

import math

LN2 = math.log(2)


def optimal_num_bits(capacity: int, error_rate: float) -> int:
    """Bits needed for ``capacity`` items at ``error_rate``: ceil(-n ln p / ln(2)^2)."""
    if capacity < 1:
        raise ValueError("capacity must be at least 1")
    if not 0.0 < error_rate < 1.0:
        raise ValueError("error_rate must be strictly between 0 and 1")
    return math.ceil(-capacity * math.log(error_rate) / (LN2 * LN2))


def optimal_num_hashes(num_bits: int, capacity: int) -> int:
    """Best hash count (m / n) ln 2, rounded, and at least 1."""
    if num_bits < 1 or capacity < 1:
        raise ValueError("num_bits and capacity must be positive")
    return max(1, round(num_bits / capacity * LN2))


def false_positive_rate(num_bits: int, num_hashes: int, num_items: int) -> float:
    """Expected false-positive probability (1 - e^(-kn/m))^k."""
    if num_bits < 1 or num_hashes < 1:
        raise ValueError("num_bits and num_hashes must be positive")
    if num_items <= 0:
        return 0.0
    return (1.0 - math.exp(-num_hashes * num_items / num_bits)) ** num_hashes


def estimate_items(num_bits: int, num_hashes: int, bits_set: int) -> float:
    """Estimate of distinct items from the number of set bits (inf when full)."""
    if not 0 <= bits_set <= num_bits:
        raise ValueError("bits_set must be within 0..num_bits")
    if bits_set == num_bits:
        return math.inf
    return -num_bits / num_hashes * math.log(1.0 - bits_set / num_bits)
