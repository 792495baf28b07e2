import pytest

from ratelimit import Decision, FixedWindowCounter, RateLimitExceeded, SlidingWindowLog


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_fixed_window_allows_limit_per_window():
    """Exactly `limit` requests pass inside one window."""
    clock = FakeClock(0.0)
    counter = FixedWindowCounter(2, 10, clock)
    assert [counter.allow() for _ in range(3)] == [True, True, False]
    assert counter.remaining() == 0


def test_fixed_window_resets_exactly_at_boundary():
    """A new window starts at the boundary instant, not after it."""
    clock = FakeClock(9.5)
    counter = FixedWindowCounter(1, 10, clock)
    assert counter.allow() is True
    clock.now = 9.999
    assert counter.allow() is False
    clock.now = 10.0
    assert counter.allow() is True
    assert counter.remaining() == 0


def test_fixed_window_retry_after_is_time_to_next_window():
    """A blocked request waits until the start of the next aligned window."""
    clock = FakeClock(23.0)
    counter = FixedWindowCounter(3, 10, clock)
    assert counter.retry_after(3) == 0.0
    counter.allow(2)
    assert counter.retry_after(1) == 0.0
    assert counter.retry_after(2) == 7.0
    assert counter.retry_after() == 0.0
    assert counter.try_acquire(2) == Decision(False, 1, 7.0)
    assert counter.try_acquire() == Decision(True, 0)
    assert counter.retry_after() == 7.0


def test_fixed_window_cost_validation():
    """Cost above the limit or below one raises ValueError."""
    counter = FixedWindowCounter(3, 1, FakeClock())
    with pytest.raises(ValueError):
        counter.allow(4)
    with pytest.raises(ValueError):
        counter.retry_after(0)
    with pytest.raises(ValueError):
        FixedWindowCounter(0, 1, FakeClock())


def test_fixed_window_check_raises():
    """check raises once the window is used up."""
    counter = FixedWindowCounter(1, 5, FakeClock(1.0))
    counter.check()
    with pytest.raises(RateLimitExceeded) as info:
        counter.check()
    assert info.value.retry_after == 4.0


def test_sliding_log_limits_any_window():
    """Requests are refused while `limit` of them lie within the last window."""
    clock = FakeClock(0.0)
    log = SlidingWindowLog(2, 10, clock)
    assert log.allow() is True
    clock.now = 4.0
    assert log.allow() is True
    clock.now = 9.0
    assert log.allow() is False
    assert log.remaining() == 0


def test_sliding_log_entry_expires_exactly_after_window():
    """An entry stops counting exactly `window` seconds after it was made."""
    clock = FakeClock(0.0)
    log = SlidingWindowLog(1, 10, clock)
    log.allow()
    clock.now = 9.999
    assert log.remaining() == 0
    clock.now = 10.0
    assert log.remaining() == 1
    assert log.allow() is True


def test_sliding_log_retry_after_uses_oldest_needed_entry():
    """The wait depends on how many old entries must expire for the cost."""
    clock = FakeClock(0.0)
    log = SlidingWindowLog(3, 10, clock)
    log.allow()
    clock.now = 2.0
    log.allow()
    clock.now = 5.0
    log.allow()
    clock.now = 6.0
    assert log.retry_after(1) == 4.0
    assert log.retry_after(2) == 6.0
    assert log.retry_after(3) == 9.0
    assert log.retry_after() == 4.0


def test_sliding_log_cost_records_multiple_units():
    """A cost of n uses n slots at once and refuses partial fits."""
    clock = FakeClock(1.0)
    log = SlidingWindowLog(4, 5, clock)
    assert log.allow(3) is True
    assert log.allow(2) is False
    assert log.remaining() == 1
    assert log.retry_after(1) == 0.0
    assert log.try_acquire() == Decision(True, 0)
    assert log.try_acquire() == Decision(False, 0, 5.0)


def test_sliding_log_retry_after_is_zero_with_room():
    """With free slots the wait is zero, also on an empty log."""
    clock = FakeClock(3.0)
    log = SlidingWindowLog(3, 10, clock)
    assert log.retry_after(3) == 0.0
    log.allow()
    assert log.retry_after(2) == 0.0
    assert log.retry_after() == 0.0


def test_sliding_log_validation_and_check():
    """Invalid parameters raise ValueError; check raises when full."""
    clock = FakeClock(0.0)
    with pytest.raises(ValueError):
        SlidingWindowLog(1, 0, clock)
    log = SlidingWindowLog(1, 3, clock)
    with pytest.raises(ValueError):
        log.allow(2)
    log.check()
    with pytest.raises(RateLimitExceeded):
        log.check()
