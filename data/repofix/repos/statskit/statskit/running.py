"""Online (single-pass) mean and variance accumulator."""

from __future__ import annotations

import math
from typing import Iterable

from .descriptive import StatsError


class RunningStats:
    """Welford's algorithm: numerically stable streaming mean/variance."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self._m2 = 0.0
        self.minimum = math.inf
        self.maximum = -math.inf

    def push(self, x: float) -> None:
        """Add one observation."""
        self.count += 1
        delta = x - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (x - self.mean)
        self.minimum = min(self.minimum, x)
        self.maximum = max(self.maximum, x)

    def extend(self, values: Iterable[float]) -> "RunningStats":
        """Add many observations; returns self for chaining."""
        for x in values:
            self.push(x)
        return self

    def variance(self, sample: bool = True) -> float:
        """Current sample or population variance."""
        ddof = 1 if sample else 0
        if self.count <= ddof:
            raise StatsError(f"need more than {ddof} observation(s)")
        return self._m2 / (self.count - ddof)

    def stdev(self, sample: bool = True) -> float:
        """Current sample or population standard deviation."""
        return math.sqrt(self.variance(sample=sample))

    def merge(self, other: "RunningStats") -> "RunningStats":
        """Combine two accumulators into a new one (Chan et al.)."""
        result = RunningStats()
        total = self.count + other.count
        if total == 0:
            return result
        delta = other.mean - self.mean
        result.count = total
        result.mean = self.mean + delta * other.count / total
        result._m2 = self._m2 + other._m2 + delta * delta * self.count * other.count / total
        result.minimum = min(self.minimum, other.minimum)
        result.maximum = max(self.maximum, other.maximum)
        return result
