"""Window based limiters: fixed window counter and sliding window log."""

from collections import deque
from typing import Optional

from .base import Clock, Decision, decide, enforce, require_positive, validate_cost


class FixedWindowCounter:
    """Allows `limit` units per aligned window [k*window, (k+1)*window)."""

    def __init__(self, limit: int, window: float, clock: Clock) -> None:
        require_positive("limit", limit)
        require_positive("window", window)
        self.limit = limit
        self.window = window
        self._clock = clock
        self._index: Optional[int] = None
        self._count = 0

    def _roll(self) -> float:
        """Reset the counter if the clock has entered a new window; return now."""
        now = self._clock()
        index = int(now // self.window)
        if index != self._index:
            self._index = index
            self._count = 0
        return now

    def remaining(self) -> float:
        """Units still allowed in the current window."""
        self._roll()
        return self.limit - self._count

    def allow(self, cost: int = 1) -> bool:
        """Count `cost` units if they fit in the current window."""
        validate_cost(cost, self.limit)
        self._roll()
        if self._count + cost <= self.limit:
            self._count += cost
            return True
        return False

    def retry_after(self, cost: int = 1) -> float:
        """Seconds until `cost` units fit: 0 now, else until the next window."""
        validate_cost(cost, self.limit)
        now = self._roll()
        if self._count + cost <= self.limit:
            return 0.0
        return (self._index + 1) * self.window - now

    def try_acquire(self, cost: int = 1) -> Decision:
        """Ask for `cost` units and return a full Decision."""
        return decide(self, cost)

    def check(self, cost: int = 1) -> None:
        """Count `cost` units or raise RateLimitExceeded."""
        enforce(self, cost)


class SlidingWindowLog:
    """Allows `limit` units in any period of `window` seconds, remembering each one."""

    def __init__(self, limit: int, window: float, clock: Clock) -> None:
        require_positive("limit", limit)
        require_positive("window", window)
        self.limit = limit
        self.window = window
        self._clock = clock
        self._log: deque[float] = deque()

    def _evict(self) -> float:
        """Forget timestamps that are `window` seconds old or older; return now."""
        now = self._clock()
        horizon = now - self.window
        for _ in range(len(self._log)):
            if self._log[0] > horizon:
                break
            self._log.popleft()
        return now

    def remaining(self) -> float:
        """Units still allowed right now."""
        self._evict()
        return self.limit - len(self._log)

    def allow(self, cost: int = 1) -> bool:
        """Record `cost` units at the current time if they fit."""
        validate_cost(cost, self.limit)
        now = self._evict()
        if len(self._log) + cost > self.limit:
            return False
        self._log.extend([now] * cost)
        return True

    def retry_after(self, cost: int = 1) -> float:
        """Seconds until enough old units have slid out of the window."""
        validate_cost(cost, self.limit)
        now = self._evict()
        excess = len(self._log) + cost - self.limit
        if excess <= 0:
            return 0.0
        return self._log[excess - 1] + self.window - now

    def try_acquire(self, cost: int = 1) -> Decision:
        """Ask for `cost` units and return a full Decision."""
        return decide(self, cost)

    def check(self, cost: int = 1) -> None:
        """Record `cost` units or raise RateLimitExceeded."""
        enforce(self, cost)
