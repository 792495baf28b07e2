import pytest

from ratelimit import FixedWindowCounter, LimiterRegistry, RateLimitExceeded, TokenBucket


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_registry(clock: FakeClock, max_keys=None) -> LimiterRegistry:
    return LimiterRegistry(lambda: TokenBucket(2, 1, clock), clock, max_keys=max_keys)


def test_registry_creates_limiters_lazily_per_key():
    """Limiters appear only when a key is first used, one per key."""
    clock = FakeClock()
    registry = make_registry(clock)
    assert len(registry) == 0
    first = registry.get("alice")
    assert registry.get("alice") is first
    assert registry.get("bob") is not first
    assert registry.keys() == ["alice", "bob"]


def test_registry_keys_are_limited_independently():
    """Exhausting one key does not affect another."""
    clock = FakeClock()
    registry = make_registry(clock)
    results = [registry.allow("a") for _ in range(3)]
    assert results == [True, True, False]
    assert registry.allow("b") is True


def test_registry_decision_and_check():
    """try_acquire and check delegate to the key's limiter."""
    clock = FakeClock()
    registry = LimiterRegistry(lambda: FixedWindowCounter(1, 60, clock), clock)
    assert registry.try_acquire("k").allowed is True
    decision = registry.try_acquire("k")
    assert (decision.allowed, decision.retry_after) == (False, 60.0)
    with pytest.raises(RateLimitExceeded):
        registry.check("k")
    registry.check("other")


def test_registry_max_keys_evicts_least_recently_used():
    """When full, the key unused for longest is dropped for the new one."""
    clock = FakeClock()
    registry = make_registry(clock, max_keys=2)
    registry.get("a")
    clock.now = 1
    registry.get("b")
    clock.now = 2
    registry.get("a")
    clock.now = 3
    registry.get("c")
    assert registry.keys() == ["a", "c"]
    assert "b" not in registry


def test_registry_max_keys_tie_evicts_earliest_created():
    """Keys last used at the same instant are evicted in creation order."""
    clock = FakeClock(5.0)
    registry = make_registry(clock, max_keys=2)
    registry.get("x")
    registry.get("y")
    registry.get("z")
    assert registry.keys() == ["y", "z"]


def test_registry_max_keys_validation():
    """max_keys must be at least one; exactly one keeps only the newest key."""
    clock = FakeClock()
    with pytest.raises(ValueError):
        make_registry(clock, max_keys=0)
    registry = make_registry(clock, max_keys=1)
    registry.get("a")
    registry.get("b")
    assert registry.keys() == ["b"]


def test_registry_remove():
    """Removing reports whether the key existed and resets its limiter."""
    clock = FakeClock()
    registry = make_registry(clock)
    registry.allow("a", 2)
    assert registry.allow("a") is False
    assert registry.remove("a") is True
    assert registry.remove("a") is False
    assert registry.allow("a") is True


def test_registry_prune_idle():
    """Keys idle for at least the threshold are removed, newer ones kept."""
    clock = FakeClock(0.0)
    registry = make_registry(clock)
    registry.get("old")
    clock.now = 5.0
    registry.get("mid")
    clock.now = 8.0
    registry.get("new")
    clock.now = 10.0
    assert registry.prune_idle(5.0) == ["old", "mid"]
    assert registry.keys() == ["new"]
    assert registry.prune_idle(0) == ["new"]
    with pytest.raises(ValueError):
        registry.prune_idle(-1)
