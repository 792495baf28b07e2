"""An LRU cache with TTL support, statistics and a memoize decorator."""

from .cache import LRUCache
from .memo import make_key, memoize
from .stats import CacheStats

__all__ = ["LRUCache", "CacheStats", "memoize", "make_key"]
