import pytest

from lrucache import CacheStats, LRUCache


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_capacity_must_be_positive():
    """A capacity below one is rejected, but exactly one is allowed."""
    with pytest.raises(ValueError):
        LRUCache(0)
    assert LRUCache(1).capacity == 1


def test_default_ttl_must_be_positive():
    """A zero default TTL is rejected."""
    with pytest.raises(ValueError):
        LRUCache(2, default_ttl=0)
    assert LRUCache(2, default_ttl=1).default_ttl == 1


def test_evicts_least_recently_used_when_full():
    """Adding one more key than capacity evicts the oldest key only."""
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.keys() == ["b", "c"]
    assert cache.stats.evictions == 1


def test_filling_to_capacity_evicts_nothing():
    """Exactly capacity keys fit without eviction."""
    cache = LRUCache(3)
    for i in range(3):
        cache.put(i, i * 10)
    assert (len(cache), cache.stats.evictions) == (3, 0)


def test_get_refreshes_recency():
    """Reading a key protects it from the next eviction."""
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]


def test_peek_does_not_touch_recency_or_stats():
    """Peeking returns the value but leaves order and counters alone."""
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek("a") == 1
    assert cache.peek("zz", "none") == "none"
    cache.put("c", 3)
    assert cache.keys() == ["b", "c"]
    assert cache.stats.snapshot() == {"hits": 0, "misses": 0, "evictions": 1, "expirations": 0}


def test_replacing_existing_key_moves_it_to_end_without_eviction():
    """Updating a present key keeps the size and makes it most recent."""
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    assert cache.items() == [("b", 2), ("a", 10)]
    assert cache.stats.evictions == 0


def test_hits_and_misses_are_counted():
    """Get on a present key is a hit, on a missing key a miss with default."""
    cache = LRUCache(4)
    cache.put("x", 0)
    assert cache.get("x", 99) == 0
    assert cache.get("y", 99) == 99
    assert cache.get("y") is None
    assert (cache.stats.hits, cache.stats.misses) == (1, 2)


def test_entry_expires_exactly_at_ttl():
    """An entry is live just before its TTL and gone exactly at it."""
    clock = FakeClock(100.0)
    cache = LRUCache(4, clock=clock)
    cache.put("k", "v", ttl=5)
    clock.now = 104.999
    assert cache.get("k") == "v"
    clock.now = 105.0
    assert cache.get("k", "gone") == "gone"
    assert cache.stats.snapshot() == {"hits": 1, "misses": 1, "evictions": 0, "expirations": 1}
    assert len(cache) == 0


def test_default_ttl_applies_and_explicit_ttl_overrides():
    """Per-entry TTL wins over the cache default."""
    clock = FakeClock()
    cache = LRUCache(4, default_ttl=10, clock=clock)
    cache.put("short", 1, ttl=2)
    cache.put("long", 2)
    clock.now = 3
    assert "short" not in cache
    assert "long" in cache
    assert cache.ttl("long") == 7


def test_ttl_reports_remaining_time():
    """Remaining TTL is never negative and None for keys without expiry."""
    clock = FakeClock(1.0)
    cache = LRUCache(4, clock=clock)
    cache.put("a", 1, ttl=4)
    cache.put("b", 2)
    clock.now = 2.5
    assert cache.ttl("a") == 2.5
    assert cache.ttl("b") is None
    assert cache.ttl("missing") is None
    clock.now = 9.0
    assert cache.ttl("a") == 0.0


def test_invalid_entry_ttl_rejected():
    """A zero or negative per-entry TTL raises ValueError."""
    cache = LRUCache(2)
    with pytest.raises(ValueError):
        cache.put("a", 1, ttl=-1)
    with pytest.raises(ValueError):
        cache.put("a", 1, ttl=0)
    assert len(cache) == 0


def test_expired_entries_are_purged_before_evicting():
    """Inserting into a full cache reuses expired slots instead of evicting live keys."""
    clock = FakeClock()
    cache = LRUCache(2, clock=clock)
    cache.put("old", 1, ttl=1)
    cache.put("live", 2)
    clock.now = 1
    cache.put("new", 3)
    assert cache.keys() == ["live", "new"]
    assert cache.stats.evictions == 0


def test_peek_on_expired_key_returns_default():
    """Peek does not return values whose TTL has run out."""
    clock = FakeClock()
    cache = LRUCache(2, clock=clock)
    cache.put("a", 1, ttl=1)
    clock.now = 1
    assert cache.peek("a", -1) == -1


def test_delete_and_clear():
    """Delete reports presence; clear empties the cache but keeps stats."""
    cache = LRUCache(3)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    assert cache.delete("a") is True
    assert cache.delete("a") is False
    cache.clear()
    assert (len(cache), list(cache), cache.stats.hits) == (0, [], 1)


def test_resize_evicts_oldest_keys():
    """Shrinking evicts exactly the overflow from the old end."""
    cache = LRUCache(4)
    for key in "abcd":
        cache.put(key, key.upper())
    assert cache.resize(2) == 2
    assert cache.keys() == ["c", "d"]
    assert cache.resize(5) == 0
    assert cache.stats.evictions == 2
    with pytest.raises(ValueError):
        cache.resize(0)


def test_resize_to_one_keeps_only_newest():
    """Shrinking to capacity one keeps the most recent key and counts evictions."""
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.resize(1) == 1
    assert cache.keys() == ["b"]
    assert cache.stats.evictions == 1


def test_resize_to_current_size_evicts_nothing():
    """Resizing to exactly the current length keeps every key."""
    cache = LRUCache(5)
    for key in "xyz":
        cache.put(key, 0)
    assert cache.resize(3) == 0
    assert cache.keys() == ["x", "y", "z"]


def test_stats_hit_rate_and_reset():
    """Hit rate is hits over lookups and zero when nothing was looked up."""
    stats = CacheStats()
    assert stats.hit_rate == 0.0
    stats.record_hit()
    stats.record_hit()
    stats.record_hit()
    stats.record_miss()
    assert stats.lookups == 4
    assert stats.hit_rate == 0.75
    stats.reset()
    assert stats.snapshot() == {"hits": 0, "misses": 0, "evictions": 0, "expirations": 0}


def test_stats_reject_negative_eviction_count():
    """Recording a negative number of evictions is an error; zero is allowed."""
    stats = CacheStats()
    stats.record_eviction(0)
    assert stats.evictions == 0
    stats.record_eviction()
    assert stats.evictions == 1
    with pytest.raises(ValueError):
        stats.record_eviction(-1)
