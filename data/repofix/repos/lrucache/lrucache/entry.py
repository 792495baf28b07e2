"""A single cache slot with an optional expiry deadline."""

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class Entry:
    """A cached value and the moment (exclusive) after which it is stale."""

    value: Any
    expires_at: Optional[float] = None

    def is_expired(self, now: float) -> bool:
        """An entry expires once the clock reaches its deadline."""
        if self.expires_at is None:
            return False
        return now >= self.expires_at

    def remaining(self, now: float) -> Optional[float]:
        """Seconds left before expiry, never negative; None if it never expires."""
        if self.expires_at is None:
            return None
        return max(0.0, self.expires_at - now)


def deadline(now: float, ttl: Optional[float]) -> Optional[float]:
    """Compute the expiry moment for a time-to-live, validating it."""
    if ttl is None:
        return None
    if ttl <= 0:
        raise ValueError("ttl must be positive")
    return now + ttl
