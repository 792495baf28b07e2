"""A memoize decorator backed by LRUCache."""

import functools
from typing import Any, Callable, Hashable, Optional

from .cache import LRUCache, _zero_clock

_KWARGS_MARK = ("__kwargs__",)


def make_key(args: tuple, kwargs: dict[str, Any]) -> Hashable:
    """Build a hashable key from call arguments; kwargs order does not matter."""
    if not kwargs:
        if len(args) == 1 and type(args[0]) in (int, str):
            return args[0]
        return args
    return args + _KWARGS_MARK + tuple(sorted(kwargs.items()))


def memoize(
    capacity: int = 128,
    ttl: Optional[float] = None,
    clock: Callable[[], float] = _zero_clock,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Cache a function's results in an LRUCache of the given capacity."""
    sentinel = object()

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        cache = LRUCache(capacity, default_ttl=ttl, clock=clock)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = make_key(args, kwargs)
            result = cache.get(key, sentinel)
            if result is sentinel:
                result = func(*args, **kwargs)
                cache.put(key, result)
            return result

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper

    return decorator
