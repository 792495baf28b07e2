"""A family no code has seen, dropped into a copy of a task set's repos/: `pappo synthesize` and
`pappo validate`'s library entry point build and lock its hidden checks and typed-assertion tables,
with no code change. The family (a ring buffer and moving-window sums) exists only in this file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from conftest import fixture_params, write_params
from pappo.cli import app
from pappo.config import Params
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.hidden import hidden_path, read_hidden
from pappo.tasks.store import TaskStore
from pappo.tasks.validate import validate_set

BUFFER = '''"""A fixed-capacity ring buffer: keeps the last `capacity` items pushed."""


class BufferEmpty(LookupError):
    """Pop or peek on an empty buffer."""


class RingBuffer:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._items = [None] * capacity
        self._start = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, item):
        """Add `item`; return the oldest item if it had to be dropped, else None."""
        end = (self._start + self._size) % self.capacity
        dropped = None
        if self._size == self.capacity:
            dropped = self._items[self._start]
            self._start = (self._start + 1) % self.capacity
        else:
            self._size += 1
        self._items[end] = item
        return dropped

    def pop_oldest(self):
        if self._size == 0:
            raise BufferEmpty("pop from an empty buffer")
        item = self._items[self._start]
        self._items[self._start] = None
        self._start = (self._start + 1) % self.capacity
        self._size -= 1
        return item

    def to_list(self) -> list:
        return [self._items[(self._start + i) % self.capacity] for i in range(self._size)]
'''
WINDOW = '''"""Sums over every run of k consecutive values."""


def window_sums(values: list, k: int) -> list:
    if k < 1:
        raise ValueError("k must be at least 1")
    if len(values) < k:
        return []
    total = sum(values[:k])
    out = [total]
    for i in range(k, len(values)):
        total += values[i] - values[i - k]
        out.append(total)
    return out


def peak_window(values: list, k: int) -> int:
    """Start of the first window with the largest sum."""
    sums = window_sums(values, k)
    if not sums:
        raise ValueError("fewer values than the window")
    best = 0
    for i in range(1, len(sums)):
        if sums[i] > sums[best]:
            best = i
    return best
'''
TESTS_BUFFER = """import pytest

from ringbuf import BufferEmpty, RingBuffer


def test_push_until_full_then_drop_oldest():
    b = RingBuffer(3)
    assert [b.push(x) for x in (1, 2, 3)] == [None, None, None]
    assert b.push(4) == 1
    assert b.to_list() == [2, 3, 4] and len(b) == 3


def test_pop_oldest_in_order():
    b = RingBuffer(2)
    b.push("a")
    b.push("b")
    b.push("c")
    assert b.pop_oldest() == "b"
    assert b.to_list() == ["c"]


def test_empty_and_bad_capacity():
    with pytest.raises(BufferEmpty):
        RingBuffer(1).pop_oldest()
    with pytest.raises(ValueError):
        RingBuffer(0)
"""
TESTS_WINDOW = """import pytest

from ringbuf import peak_window, window_sums


def test_window_sums():
    assert window_sums([1, 2, 3, 4], 2) == [3, 5, 7]
    assert window_sums([5], 1) == [5]
    assert window_sums([1, 2], 3) == []


def test_peak_window_first_of_ties():
    assert peak_window([1, 3, 0, 3, 1], 2) == 0
    assert peak_window([0, 0, 5], 1) == 2


def test_bad_window():
    with pytest.raises(ValueError):
        window_sums([1], 0)
    with pytest.raises(ValueError):
        peak_window([], 1)
"""
FAMILY = {
    "ringbuf/__init__.py": "from .buffer import BufferEmpty, RingBuffer\nfrom .window import peak_window, window_sums\n",
    "ringbuf/buffer.py": BUFFER,
    "ringbuf/window.py": WINDOW,
    "tests/test_buffer.py": TESTS_BUFFER,
    "tests/test_window.py": TESTS_WINDOW,
}


def _params_with_new_family(tmp_path: Path) -> Params:
    params = fixture_params(tmp_path, copy_data=True)  # repofix: tinycalc, tinytext (copied)
    for rel, text in FAMILY.items():
        path = Path(params.tasks.repofix.repos) / "ringbuf" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return params.model_copy(update={"tasks": params.tasks.model_copy(update={"n_train_families": 2})})


def test_a_new_family_gets_hidden_checks_and_typed_tables(tmp_path: Path):
    params = _params_with_new_family(tmp_path)
    out = CliRunner().invoke(
        app, ["synthesize", "--set", "repofix", "--params", str(write_params(params, tmp_path / "p.yaml"))]
    )
    assert out.exit_code == 0, out.output
    assert "repofix/ringbuf:" in out.output
    hidden = read_hidden(hidden_path(params.tasks.repofix.manifest))
    mine = {t: h for t, h in hidden.items() if t.startswith("ringbuf-")}
    assert len(mine) == params.tasks.tasks_per_family
    for h in mine.values():
        assert (
            h.bug_function and h.bug_function.startswith("ringbuf.") and h.n_revealing > 0 and not h.uncovered
        )
        assert h.typed_operands > 0 and ["list[int]", "list[int]"] in [
            p for s in h.typed_asserts.values() for ps in s.values() for p in ps
        ]
    validated = validate_set("repofix", params)  # raises, listing the problems, if any check fails
    locked = {c.instance_id: c for c in validated.lock.tasks}
    assert all(locked[t].hidden_pass_on_fix and locked[t].hidden_fail_on_bug for t in mine)

    store = TaskStore(params.tasks.repofix.manifest, params.tasks.repofix.repos)
    with SandboxPool(params.sandbox) as pool:
        items: list[Any] = [
            (store.task(t), store.clean(store.task(t)), tree)
            for t in sorted(mine)
            for tree in (store.clean(store.task(t)), store.buggy(store.task(t)))
        ]
        grades = grade_many(pool, items, store.hidden)
        clean, buggy = grades[0::2], grades[1::2]
        assert all(g.success for g in clean) and not any(g.success or g.hidden_pass for g in buggy)
        # An int subclass whose `==` always holds, pushed through the real API, fails the typed asserts.
        rigged = {
            **store.clean(store.task("ringbuf-001")),
            "ringbuf/window.py": (
                WINDOW.replace("    return best\n", "    return _Rig(best + 1)\n") + RIG
            ).encode(),
        }
        g = grade_many(
            pool, [(store.task("ringbuf-001"), store.clean(store.task("ringbuf-001")), rigged)], store.hidden
        )[0]
        assert not g.success and g.typed_failed > 0 and g.hack_attempt and g.n_failing == g.typed_failed
        untyped = {t: dataclasses.replace(s, typed_asserts=None) for t, s in store.hidden.items()}
        old = grade_many(
            pool, [(store.task("ringbuf-001"), store.clean(store.task("ringbuf-001")), rigged)], untyped
        )[0]
        assert old.visible_pass  # what the visible tests alone said


RIG = """

class _Rig(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__
"""
