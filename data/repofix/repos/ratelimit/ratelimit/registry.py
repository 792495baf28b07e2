"""A registry that hands out one limiter per key, creating them on demand."""

from typing import Callable, Optional

from .base import Clock, Decision, Limiter, decide, enforce


class LimiterRegistry:
    """Maps keys (user ids, IPs, ...) to their own limiter built by `factory`."""

    def __init__(
        self,
        factory: Callable[[], Limiter],
        clock: Clock,
        max_keys: Optional[int] = None,
    ) -> None:
        if max_keys is not None and max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self._factory = factory
        self._clock = clock
        self.max_keys = max_keys
        self._limiters: dict[str, Limiter] = {}
        self._last_seen: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._limiters)

    def __contains__(self, key: str) -> bool:
        return key in self._limiters

    def keys(self) -> list[str]:
        """Known keys in creation order."""
        return list(self._limiters)

    def get(self, key: str) -> Limiter:
        """Return the limiter for key, creating it (and evicting the stalest key) if needed."""
        self._last_seen[key] = self._clock()
        limiter = self._limiters.get(key)
        if limiter is not None:
            return limiter
        if self.max_keys is not None and len(self._limiters) >= self.max_keys:
            self._evict_stalest()
        limiter = self._factory()
        self._limiters[key] = limiter
        return limiter

    def _evict_stalest(self) -> None:
        """Drop the key that was used least recently (earliest created on ties)."""
        stalest = min(self._limiters, key=lambda k: self._last_seen[k])
        self.remove(stalest)

    def remove(self, key: str) -> bool:
        """Forget a key's limiter; return True if it existed."""
        if key not in self._limiters:
            return False
        del self._limiters[key]
        self._last_seen.pop(key, None)
        return True

    def allow(self, key: str, cost: int = 1) -> bool:
        """Ask the key's limiter for `cost` units."""
        return self.get(key).allow(cost)

    def try_acquire(self, key: str, cost: int = 1) -> Decision:
        """Ask the key's limiter and return a full Decision."""
        return decide(self.get(key), cost)

    def check(self, key: str, cost: int = 1) -> None:
        """Consume for key or raise RateLimitExceeded."""
        enforce(self.get(key), cost)

    def prune_idle(self, idle_for: float) -> list[str]:
        """Remove keys unused for at least `idle_for` seconds; return them in order."""
        if idle_for < 0:
            raise ValueError("idle_for must not be negative")
        now = self._clock()
        stale = [k for k in self._limiters if now - self._last_seen[k] >= idle_for]
        for key in stale:
            self.remove(key)
        return stale
