"""The token bucket algorithm."""

from typing import Optional

from .base import Clock, Decision, decide, enforce, require_positive, validate_cost


class TokenBucket:
    """Holds up to `capacity` tokens, refilled continuously at `refill_rate` per second."""

    def __init__(
        self,
        capacity: float,
        refill_rate: float,
        clock: Clock,
        initial: Optional[float] = None,
    ) -> None:
        require_positive("capacity", capacity)
        require_positive("refill_rate", refill_rate)
        if initial is not None and not 0 <= initial <= capacity:
            raise ValueError("initial tokens must lie between 0 and capacity")
        self.capacity = capacity
        self.refill_rate = refill_rate
        self._clock = clock
        self._tokens = float(capacity if initial is None else initial)
        self._last = clock()

    def _refill(self) -> None:
        """Add tokens for the time elapsed since the last refill."""
        now = self._clock()
        elapsed = now - self._last
        if elapsed <= 0:
            return
        self._tokens = min(float(self.capacity), self._tokens + elapsed * self.refill_rate)
        self._last = now

    @property
    def available(self) -> float:
        """Tokens currently in the bucket."""
        self._refill()
        return self._tokens

    def remaining(self) -> float:
        """Alias of `available` so the bucket satisfies the Limiter protocol."""
        return self.available

    def allow(self, cost: int = 1) -> bool:
        """Take `cost` tokens if they are all there; never take a partial amount."""
        validate_cost(cost, self.capacity)
        self._refill()
        if self._tokens >= cost:
            self._tokens -= cost
            return True
        return False

    def time_until_available(self, cost: int = 1) -> float:
        """Seconds until `cost` tokens will be present (0.0 if they already are)."""
        validate_cost(cost, self.capacity)
        self._refill()
        deficit = cost - self._tokens
        if deficit <= 0:
            return 0.0
        return deficit / self.refill_rate

    def retry_after(self, cost: int = 1) -> float:
        """Alias of `time_until_available` for the Limiter protocol."""
        return self.time_until_available(cost)

    def try_acquire(self, cost: int = 1) -> Decision:
        """Ask for `cost` tokens and return a full Decision."""
        return decide(self, cost)

    def check(self, cost: int = 1) -> None:
        """Take `cost` tokens or raise RateLimitExceeded."""
        enforce(self, cost)
