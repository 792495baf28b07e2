"""Hit/miss/eviction bookkeeping for caches."""

from dataclasses import dataclass


@dataclass
class CacheStats:
    """Counters describing how a cache has been used."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0

    @property
    def lookups(self) -> int:
        """Total number of lookups (hits plus misses)."""
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float:
        """Fraction of lookups that were hits, 0.0 when there were none."""
        total = self.lookups
        if total == 0:
            return 0.0
        return self.hits / total

    def record_hit(self) -> None:
        """Count one successful lookup."""
        self.hits += 1

    def record_miss(self, expired: bool = False) -> None:
        """Count one failed lookup, noting whether it was caused by expiry."""
        self.misses += 1
        if expired:
            self.expirations += 1

    def record_eviction(self, count: int = 1) -> None:
        """Count entries pushed out because the cache was full."""
        if count < 0:
            raise ValueError("eviction count must be non-negative")
        self.evictions += count

    def reset(self) -> None:
        """Set every counter back to zero."""
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.expirations = 0

    def snapshot(self) -> dict[str, int]:
        """Return the raw counters as a plain dictionary."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "evictions": self.evictions,
            "expirations": self.expirations,
        }
