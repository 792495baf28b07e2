import pytest

from ratelimit import Decision, RateLimitExceeded, TokenBucket


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_bucket_starts_full_and_allows_capacity_requests():
    """A fresh bucket allows exactly `capacity` unit requests, then refuses."""
    bucket = TokenBucket(3, 1, FakeClock())
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]


def test_bucket_initial_tokens_and_validation():
    """Initial tokens may be 0 or capacity but not outside that range."""
    clock = FakeClock()
    assert TokenBucket(5, 1, clock, initial=0).available == 0.0
    assert TokenBucket(5, 1, clock, initial=5).available == 5.0
    with pytest.raises(ValueError):
        TokenBucket(5, 1, clock, initial=6)
    with pytest.raises(ValueError):
        TokenBucket(5, 1, clock, initial=-1)


def test_bucket_rejects_non_positive_parameters():
    """Zero capacity or zero refill rate is invalid."""
    clock = FakeClock()
    with pytest.raises(ValueError):
        TokenBucket(0, 1, clock)
    with pytest.raises(ValueError):
        TokenBucket(1, 0, clock)


def test_bucket_refills_with_elapsed_time_up_to_capacity():
    """Tokens grow by rate * elapsed but never above capacity."""
    clock = FakeClock(10.0)
    bucket = TokenBucket(4, 2, clock, initial=0)
    clock.now = 11.5
    assert bucket.available == 3.0
    clock.now = 100.0
    assert bucket.available == 4.0


def test_bucket_ignores_clock_going_backwards():
    """A clock that moves backwards neither adds nor removes tokens."""
    clock = FakeClock(5.0)
    bucket = TokenBucket(4, 1, clock, initial=1)
    clock.now = 3.0
    assert bucket.available == 1.0
    clock.now = 6.0
    assert bucket.available == 2.0


def test_bucket_cost_is_all_or_nothing():
    """A request costing more than the tokens present takes nothing."""
    bucket = TokenBucket(5, 1, FakeClock(), initial=3)
    assert bucket.allow(4) is False
    assert bucket.available == 3.0
    assert bucket.allow(3) is True
    assert bucket.available == 0.0


def test_bucket_cost_bounds():
    """Cost must be between 1 and capacity inclusive."""
    bucket = TokenBucket(5, 1, FakeClock())
    with pytest.raises(ValueError):
        bucket.allow(0)
    with pytest.raises(ValueError):
        bucket.allow(6)
    assert bucket.allow(5) is True


def test_time_until_available():
    """The wait is the token deficit divided by the refill rate."""
    clock = FakeClock()
    bucket = TokenBucket(10, 4, clock, initial=1)
    assert bucket.time_until_available() == 0.0
    assert bucket.retry_after() == 0.0
    bucket.allow()
    assert bucket.time_until_available() == 0.25
    assert bucket.time_until_available(3) == 0.75
    assert bucket.retry_after(10) == 2.5
    clock.now = 1.0
    assert bucket.time_until_available(3) == 0.0


def test_time_until_available_with_surplus_is_zero():
    """Having more tokens than needed means no wait at all."""
    bucket = TokenBucket(8, 2, FakeClock(), initial=6)
    assert bucket.time_until_available(2) == 0.0
    assert bucket.retry_after(6) == 0.0
    assert bucket.retry_after(7) == 0.5


def test_try_acquire_returns_decision():
    """A refused request reports remaining tokens and how long to wait."""
    bucket = TokenBucket(2, 0.5, FakeClock(), initial=1)
    assert bucket.try_acquire() == Decision(True, 0.0, 0.0)
    assert bucket.try_acquire(2) == Decision(False, 0.0, 4.0)
    assert bucket.try_acquire() == Decision(False, 0.0, 2.0)


def test_check_raises_with_retry_after():
    """check consumes when possible and raises RateLimitExceeded otherwise."""
    bucket = TokenBucket(1, 1, FakeClock())
    bucket.check()
    with pytest.raises(RateLimitExceeded) as info:
        bucket.check()
    assert info.value.retry_after == 1.0
    assert str(info.value) == "rate limit exceeded, retry after 1s"
