import pytest

from textdiff import PatchError, apply_patch, parse_range, parse_unified, unified_diff

OLD = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
NEW = ["one", "2", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"]


def test_parse_range():
    """Header ranges become 0-based starts; a missing count means 1."""
    assert parse_range("3", None) == (2, 1)
    assert parse_range("1", "4") == (0, 4)
    assert parse_range("3", "0") == (3, 0)
    assert parse_range("0", "0") == (0, 0)
    with pytest.raises(PatchError):
        parse_range("0", "2")


def test_parse_unified_reads_hunks():
    """Hunks keep their ranges and bodies; file headers and other text are skipped."""
    diff = ["diff -u a b", "--- a", "+++ b", "@@ -2,2 +2 @@", " x", "-y", "\\ No newline at end of file"]
    (hunk,) = parse_unified(diff)
    assert (hunk.a_start, hunk.a_count, hunk.b_start, hunk.b_count) == (1, 2, 1, 1)
    assert hunk.lines == [" x", "-y"]


def test_no_newline_marker_inside_hunk_is_ignored():
    """A backslash marker between body lines is skipped and not counted."""
    diff = ["@@ -1,2 +1,2 @@", " x", "-y", "\\ No newline at end of file", "+z"]
    assert apply_patch(["x", "y"], diff) == ["x", "z"]


def test_parse_body_lines_starting_with_dashes():
    """Inside a hunk, '--- x' is a deleted line, not a file header."""
    (hunk,) = parse_unified(["@@ -1 +1 @@", "--- x", "+++ y"])
    assert hunk.old_lines() == ["-- x"]
    assert hunk.new_lines() == ["++ y"]


def test_empty_body_line_is_blank_context():
    """An empty line inside a hunk counts as an unchanged blank line."""
    (hunk,) = parse_unified(["@@ -1,2 +1,2 @@", "", "-a", "+b"])
    assert hunk.lines == [" ", "-a", "+b"]
    assert apply_patch(["", "a"], ["@@ -1,2 +1,2 @@", "", "-a", "+b"]) == ["", "b"]


def test_parse_unified_errors():
    """Bad body lines, over-long bodies and truncated hunks raise PatchError."""
    with pytest.raises(PatchError):
        parse_unified(["@@ -1 +1 @@", "*x"])
    with pytest.raises(PatchError, match="longer"):
        parse_unified(["@@ -1 +1,2 @@", "-x", "-y", "+a"])
    with pytest.raises(PatchError, match="longer"):
        parse_unified(["@@ -1,3 +1 @@", " x", "+y"])
    with pytest.raises(PatchError, match="middle"):
        parse_unified(["@@ -1,2 +1 @@", " a"])
    with pytest.raises(PatchError, match="middle"):
        parse_unified(["@@ -1 +1,2 @@", " a"])
    assert parse_unified([]) == []


def test_apply_patch_forward_and_reverse():
    """Applying a generated diff yields the new text; reverse restores the old."""
    diff = unified_diff(OLD, NEW, context=2)
    assert apply_patch(OLD, diff) == NEW
    assert apply_patch(NEW, diff, reverse=True) == OLD


def test_apply_patch_pure_insertions():
    """Insert-only hunks (count 0 on the old side) land at the right place."""
    assert apply_patch(["a", "c"], ["@@ -1,0 +2 @@", "+b"]) == ["a", "b", "c"]
    assert apply_patch([], ["@@ -0,0 +1,2 @@", "+x", "+y"]) == ["x", "y"]
    assert apply_patch(["a"], ["@@ -1,0 +2 @@", "+z"]) == ["a", "z"]


def test_apply_patch_deleting_everything_and_reverse():
    """A full deletion empties the input and its reverse recreates it."""
    diff = unified_diff(["p", "q"], [])
    assert apply_patch(["p", "q"], diff) == []
    assert apply_patch([], diff, reverse=True) == ["p", "q"]


def test_apply_patch_context_mismatch():
    """A hunk whose context does not match the input is refused with its line number."""
    diff = unified_diff(OLD, NEW, context=1)
    changed = list(OLD)
    changed[0] = "uno"
    with pytest.raises(PatchError, match="line 1"):
        apply_patch(changed, diff)
    with pytest.raises(PatchError):
        apply_patch(OLD[:9], diff)


def test_apply_patch_rejects_out_of_order_hunks():
    """Hunks must be in increasing order without overlap."""
    diff = ["@@ -3 +3 @@", "-c", "+C", "@@ -1 +1 @@", "-a", "+A"]
    with pytest.raises(PatchError, match="order"):
        apply_patch(["a", "b", "c"], diff)
    ok = ["@@ -1 +1 @@", "-a", "+A", "@@ -2 +2 @@", "-b", "+B"]
    assert apply_patch(["a", "b", "c"], ok) == ["A", "B", "c"]
