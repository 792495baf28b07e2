"""Shared types and validation helpers for the limiters."""

from dataclasses import dataclass
from typing import Callable, Protocol

Clock = Callable[[], float]


class RateLimitExceeded(Exception):
    """Raised by `Limiter.check` style helpers when a request is refused."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limit exceeded, retry after {retry_after:g}s")
        self.retry_after = retry_after


@dataclass(frozen=True)
class Decision:
    """The outcome of asking a limiter for permission."""

    allowed: bool
    remaining: float
    retry_after: float = 0.0


class Limiter(Protocol):
    """What every limiter offers."""

    def allow(self, cost: int) -> bool: ...

    def retry_after(self, cost: int) -> float: ...

    def remaining(self) -> float: ...


def require_positive(name: str, value: float) -> None:
    """Raise ValueError unless value is strictly positive."""
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


def validate_cost(cost: int, limit: float) -> None:
    """A cost must be at least one and never exceed what the limiter can hold."""
    if cost < 1:
        raise ValueError("cost must be at least 1")
    if cost > limit:
        raise ValueError(f"cost {cost} exceeds limit {limit:g}")


def decide(limiter: Limiter, cost: int) -> Decision:
    """Ask a limiter and package the answer as a Decision."""
    if limiter.allow(cost):
        return Decision(True, limiter.remaining())
    return Decision(False, limiter.remaining(), limiter.retry_after(cost))


def enforce(limiter: Limiter, cost: int) -> None:
    """Consume cost or raise RateLimitExceeded with the wait time."""
    decision = decide(limiter, cost)
    if not decision.allowed:
        raise RateLimitExceeded(decision.retry_after)
