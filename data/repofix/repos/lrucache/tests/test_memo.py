from lrucache import make_key, memoize


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_memoize_calls_function_once_per_argument():
    """Repeated calls with the same argument reuse the cached result."""
    calls = []

    @memoize(capacity=4)
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]
    assert (square.cache.stats.hits, square.cache.stats.misses) == (1, 2)


def test_memoize_evicts_with_small_capacity():
    """With capacity one, alternating arguments recompute every time."""
    calls = []

    @memoize(capacity=1)
    def ident(x: int) -> int:
        calls.append(x)
        return x

    for x in (1, 2, 1):
        ident(x)
    assert calls == [1, 2, 1]


def test_memoize_respects_ttl():
    """Cached results are recomputed once their TTL has elapsed."""
    clock = FakeClock()
    calls = []

    @memoize(ttl=10, clock=clock)
    def load(name: str) -> str:
        calls.append(name)
        return name.upper()

    load("a")
    clock.now = 9.5
    load("a")
    clock.now = 10
    assert load("a") == "A"
    assert calls == ["a", "a"]


def test_memoize_preserves_metadata_and_cache_clear():
    """The wrapper keeps the function name and can be cleared."""
    calls = []

    @memoize()
    def compute(a: int, b: int = 0) -> int:
        """Add two numbers."""
        calls.append((a, b))
        return a + b

    assert compute.__name__ == "compute"
    assert compute.cache.capacity == 128
    assert compute(1, b=2) == 3
    compute.cache_clear()
    assert compute(1, b=2) == 3
    assert calls == [(1, 2), (1, 2)]


def test_make_key_single_simple_argument_is_itself():
    """A lone int or str argument is used directly as the key."""
    assert make_key((5,), {}) == 5
    assert make_key(("s",), {}) == "s"
    assert make_key((1.5,), {}) == (1.5,)
    assert make_key((), {}) == ()


def test_make_key_kwargs_order_is_irrelevant():
    """Keyword arguments produce the same key regardless of order."""
    first = make_key((1,), {"b": 2, "a": 1})
    second = make_key((1,), {"a": 1, "b": 2})
    assert first == second == (1, "__kwargs__", ("a", 1), ("b", 2))


def test_memoize_distinguishes_positional_and_keyword():
    """f(1, 2) and f(1, b=2) are cached under different keys."""
    calls = []

    @memoize()
    def f(a: int, b: int = 0) -> int:
        calls.append(1)
        return a - b

    assert f(1, 2) == -1
    assert f(1, b=2) == -1
    assert len(calls) == 2
