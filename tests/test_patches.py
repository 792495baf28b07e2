"""Unified diffs: round trips (property), strictness, and files without a final newline."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.io import PappoError
from pappo.tasks.patches import apply_patch, changed_lines, make_patch

lines = st.lists(st.sampled_from(["a", "b", "c", "x = 1", "", "  pass", "return y"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(old=lines, new=lines, eol_old=st.booleans(), eol_new=st.booleans())
def test_round_trip(old: list[str], new: list[str], eol_old: bool, eol_new: bool) -> None:
    """make_patch(a, b) applied to a gives b, for any pair of texts."""
    a = "\n".join(old) + ("\n" if eol_old and old else "")
    b = "\n".join(new) + ("\n" if eol_new and new else "")
    trees = {"f.py": a.encode()}, {"f.py": b.encode()}
    patch = make_patch(*trees)
    assert apply_patch(trees[0], patch) == trees[1]


def test_strict_context_mismatch_is_refused():
    old = {"m.py": b"one\ntwo\nthree\n"}
    patch = make_patch(old, {"m.py": b"one\nTWO\nthree\n"})
    with pytest.raises(PappoError, match="does not apply: line 2"):
        apply_patch({"m.py": b"one\n2\nthree\n"}, patch)


def test_unknown_file_and_garbage_are_refused():
    patch = make_patch({"m.py": b"a\n"}, {"m.py": b"b\n"})
    with pytest.raises(PappoError, match="not in the tree"):
        apply_patch({"other.py": b"a\n"}, patch)
    with pytest.raises(PappoError, match="expected '--- a/<path>'"):
        apply_patch({"m.py": b"a\n"}, "hello\n")
    with pytest.raises(PappoError, match="wrong line counts"):
        apply_patch({"m.py": b"a\n"}, patch.replace("@@ -1 +1 @@", "@@ -1,3 +1 @@"))


def test_changed_lines_excludes_headers():
    patch = make_patch({"m.py": b"x = 1\n"}, {"m.py": b"x = 2\n"})
    assert changed_lines(patch) == ["x = 1", "x = 2"]
