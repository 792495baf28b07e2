"""Rate limiters with an injected clock and a per-key registry."""

from .base import Clock, Decision, Limiter, RateLimitExceeded
from .bucket import TokenBucket
from .registry import LimiterRegistry
from .window import FixedWindowCounter, SlidingWindowLog

__all__ = [
    "Clock",
    "Decision",
    "Limiter",
    "RateLimitExceeded",
    "TokenBucket",
    "FixedWindowCounter",
    "SlidingWindowLog",
    "LimiterRegistry",
]
