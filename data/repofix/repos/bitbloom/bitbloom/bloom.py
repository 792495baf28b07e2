"""A Bloom filter on top of :class:`BitSet`."""

from __future__ import annotations

import struct
from typing import Iterable

from .bitset import BitSet
from .hashing import Item, hash_indices
from .sizing import estimate_items, false_positive_rate, optimal_num_bits, optimal_num_hashes

HEADER = struct.Struct(">IHII")  # num_bits, num_hashes, seed, count


class BloomFilter:
    """Probabilistic set membership: no false negatives, tunable false positives."""

    def __init__(self, num_bits: int, num_hashes: int, seed: int = 0) -> None:
        if num_bits < 1:
            raise ValueError("num_bits must be at least 1")
        if num_hashes < 1:
            raise ValueError("num_hashes must be at least 1")
        self.bits = BitSet(num_bits)
        self.num_hashes = num_hashes
        self.seed = seed
        self.count = 0

    @classmethod
    def for_capacity(cls, capacity: int, error_rate: float = 0.01, seed: int = 0) -> BloomFilter:
        """A filter sized for ``capacity`` items at the target ``error_rate``."""
        num_bits = optimal_num_bits(capacity, error_rate)
        return cls(num_bits, optimal_num_hashes(num_bits, capacity), seed)

    @property
    def num_bits(self) -> int:
        return self.bits.size

    def _positions(self, item: Item) -> list[int]:
        return hash_indices(item, self.num_hashes, self.num_bits, self.seed)

    def add(self, item: Item) -> bool:
        """Insert ``item``; returns False if it was (probably) already present."""
        positions = self._positions(item)
        is_new = not all(self.bits.test(p) for p in positions)
        for p in positions:
            self.bits.set(p)
        if is_new:
            self.count += 1
        return is_new

    def update(self, items: Iterable[Item]) -> int:
        """Add several items; returns how many were new."""
        return sum(1 for item in items if self.add(item))

    def __contains__(self, item: Item) -> bool:
        return all(self.bits.test(p) for p in self._positions(item))

    def __len__(self) -> int:
        return self.count

    def fill_ratio(self) -> float:
        """Fraction of bits that are on."""
        return self.bits.popcount() / self.num_bits

    def estimated_false_positive_rate(self) -> float:
        """Theoretical false-positive rate for the number of items added."""
        return false_positive_rate(self.num_bits, self.num_hashes, self.count)

    def approximate_count(self) -> float:
        """Distinct-item estimate derived from the fill ratio."""
        return estimate_items(self.num_bits, self.num_hashes, self.bits.popcount())

    def _check_compatible(self, other: BloomFilter) -> None:
        same = (self.num_bits, self.num_hashes, self.seed) == (
            other.num_bits,
            other.num_hashes,
            other.seed,
        )
        if not same:
            raise ValueError("filters differ in size, hash count or seed")

    def union(self, other: BloomFilter) -> BloomFilter:
        """Filter containing both; ``count`` is the (upper-bound) sum of counts."""
        self._check_compatible(other)
        result = BloomFilter(self.num_bits, self.num_hashes, self.seed)
        result.bits = self.bits | other.bits
        result.count = self.count + other.count
        return result

    def to_bytes(self) -> bytes:
        """Header (bits, hashes, seed, count) followed by the packed bits."""
        header = HEADER.pack(self.num_bits, self.num_hashes, self.seed, self.count)
        return header + self.bits.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        """Rebuild a filter written by :meth:`to_bytes`."""
        if len(data) < HEADER.size:
            raise ValueError("data too short for a Bloom filter header")
        num_bits, num_hashes, seed, count = HEADER.unpack(data[: HEADER.size])
        result = cls(num_bits, num_hashes, seed)
        result.bits = BitSet.from_bytes(data[HEADER.size :], num_bits)
        result.count = count
        return result
