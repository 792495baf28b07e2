"""The least-recently-used cache itself."""

from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator, Optional

from .entry import Entry, deadline
from .stats import CacheStats

_MISSING = object()


def _zero_clock() -> float:
    """Default clock that never advances, so entries only expire if a clock is given."""
    return 0.0


class LRUCache:
    """A bounded mapping that evicts the least recently used key when full."""

    def __init__(
        self,
        capacity: int,
        default_ttl: Optional[float] = None,
        clock: Callable[[], float] = _zero_clock,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if default_ttl is not None and default_ttl <= 0:
            raise ValueError("default_ttl must be positive")
        self.capacity = capacity
        self.default_ttl = default_ttl
        self._clock = clock
        self._data: "OrderedDict[Hashable, Entry]" = OrderedDict()
        self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        entry = self._data.get(key)
        return entry is not None and not entry.is_expired(self._clock())

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.keys())

    def _live_entry(self, key: Hashable) -> Optional[Entry]:
        """Return the entry for key, dropping it if it has expired."""
        entry = self._data.get(key)
        if entry is None:
            return None
        if entry.is_expired(self._clock()):
            del self._data[key]
            self.stats.record_miss(expired=True)
            return None
        return entry

    def get(self, key: Hashable, default: Any = None) -> Any:
        """Return the value for key and mark it most recently used."""
        had_key = key in self._data
        entry = self._live_entry(key)
        if entry is None:
            if not had_key:
                self.stats.record_miss()
            return default
        self._data.move_to_end(key)
        self.stats.record_hit()
        return entry.value

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """Return the value for key without changing recency or statistics."""
        entry = self._data.get(key)
        if entry is None or entry.is_expired(self._clock()):
            return default
        return entry.value

    def put(self, key: Hashable, value: Any, ttl: Optional[float] = None) -> None:
        """Insert or replace key, evicting least recently used keys if needed."""
        now = self._clock()
        effective = ttl if ttl is not None else self.default_ttl
        entry = Entry(value, deadline(now, effective))
        if key in self._data:
            self._data[key] = entry
            self._data.move_to_end(key)
            return
        self._purge_expired(now)
        evicted = 0
        while len(self._data) >= self.capacity:
            self._data.popitem(last=False)
            evicted += 1
        if evicted:
            self.stats.record_eviction(evicted)
        self._data[key] = entry

    def delete(self, key: Hashable) -> bool:
        """Remove key; return True if it was present."""
        if key in self._data:
            del self._data[key]
            return True
        return False

    def ttl(self, key: Hashable) -> Optional[float]:
        """Seconds left for key, or None if it has no expiry or is absent."""
        entry = self._data.get(key)
        if entry is None:
            return None
        return entry.remaining(self._clock())

    def _purge_expired(self, now: float) -> int:
        """Drop every expired entry and return how many were removed."""
        stale = [k for k, e in self._data.items() if e.is_expired(now)]
        for key in stale:
            del self._data[key]
        return len(stale)

    def keys(self) -> list[Hashable]:
        """Live keys from least to most recently used."""
        now = self._clock()
        return [k for k, e in self._data.items() if not e.is_expired(now)]

    def items(self) -> list[tuple[Hashable, Any]]:
        """Live (key, value) pairs from least to most recently used."""
        now = self._clock()
        return [(k, e.value) for k, e in self._data.items() if not e.is_expired(now)]

    def resize(self, capacity: int) -> int:
        """Change capacity, evicting oldest keys; return how many were evicted."""
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        overflow = len(self._data) - capacity
        for _ in range(max(0, overflow)):
            self._data.popitem(last=False)
        if overflow > 0:
            self.stats.record_eviction(overflow)
            return overflow
        return 0

    def clear(self) -> None:
        """Remove every entry; statistics are kept."""
        self._data.clear()
