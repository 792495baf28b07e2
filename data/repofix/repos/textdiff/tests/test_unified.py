import pytest

from textdiff import EQUAL, Edit, Hunk, edit_script, format_range, group_hunks, make_hunk, unified_diff

TEN = [f"l{i}" for i in range(1, 11)]


@pytest.mark.parametrize(
    "start,count,expected",
    [(0, 0, "0,0"), (2, 0, "2,0"), (0, 1, "1"), (4, 1, "5"), (0, 3, "1,3"), (6, 2, "7,2")],
    ids=["empty_at_start", "empty_after_two", "single_first", "single_fifth", "three", "two"],
)
def test_format_range(start, count, expected):
    """Ranges are 1-based, omit a count of 1 and point before the gap when empty."""
    assert format_range(start, count) == expected


def test_equal_inputs_give_no_diff():
    """Identical inputs produce an empty diff."""
    assert unified_diff(TEN, list(TEN)) == []
    assert unified_diff([], []) == []


def test_single_change_with_default_context():
    """Three context lines surround a change in the middle of the file."""
    new = list(TEN)
    new[4] = "L5"
    assert unified_diff(TEN, new) == [
        "--- a", "+++ b", "@@ -2,7 +2,7 @@",
        " l2", " l3", " l4", "-l5", "+L5", " l6", " l7", " l8",
    ]


def test_context_clipped_at_file_edges_and_names():
    """Hunks at the first and last line are clipped; file names go in the header."""
    new = list(TEN)
    new[0], new[9] = "L1", "L10"
    assert unified_diff(TEN, new, "old.txt", "new.txt") == [
        "--- old.txt", "+++ new.txt",
        "@@ -1,4 +1,4 @@", "-l1", "+L1", " l2", " l3", " l4",
        "@@ -7,4 +7,4 @@", " l7", " l8", " l9", "-l10", "+L10",
    ]


def test_gap_of_twice_context_merges_hunks():
    """Changes separated by exactly 2*context equal lines share one hunk."""
    assert unified_diff(list("abcde"), list("aXcdY"), context=1) == [
        "--- a", "+++ b", "@@ -1,5 +1,5 @@", " a", "-b", "+X", " c", " d", "-e", "+Y",
    ]


def test_larger_gap_splits_hunks():
    """One more equal line than 2*context splits the changes into two hunks."""
    assert unified_diff(list("abcdef"), list("aXcdeY"), context=1) == [
        "--- a", "+++ b", "@@ -1,3 +1,3 @@", " a", "-b", "+X", " c",
        "@@ -5,2 +5,2 @@", " e", "-f", "+Y",
    ]


def test_zero_context():
    """With context 0 hunks hold only changed lines and single counts are omitted."""
    assert unified_diff(list("abcde"), list("aXcdY"), context=0) == [
        "--- a", "+++ b", "@@ -2 +2 @@", "-b", "+X", "@@ -5 +5 @@", "-e", "+Y",
    ]
    assert unified_diff(list("abc"), list("abXc"), context=0) == [
        "--- a", "+++ b", "@@ -2,0 +3 @@", "+X",
    ]


def test_whole_file_added_or_removed():
    """Creating or deleting every line uses a 0,0 range on the empty side."""
    assert unified_diff([], ["a", "b"]) == ["--- a", "+++ b", "@@ -0,0 +1,2 @@", "+a", "+b"]
    assert unified_diff(["a"], []) == ["--- a", "+++ b", "@@ -1 +0,0 @@", "-a"]


def test_group_hunks_default_context_is_three():
    """By default six equal lines between changes merge, seven split."""
    common = [f"c{i}" for i in range(7)]
    six = edit_script(["x"] + common[:6] + ["y"], ["X"] + common[:6] + ["Y"])
    seven = edit_script(["x"] + common + ["y"], ["X"] + common + ["Y"])
    assert [len(group) for group in group_hunks(six)] == [10]
    assert [len(group) for group in group_hunks(seven)] == [5, 5]


def test_group_hunks_and_validation():
    """Only-equal scripts have no hunks; negative context is rejected."""
    ops = [Edit(EQUAL, "a", 0, 0)]
    assert group_hunks(ops) == []
    with pytest.raises(ValueError):
        group_hunks(ops, context=-1)
    with pytest.raises(ValueError):
        make_hunk([])


def test_hunk_old_and_new_lines():
    """A hunk splits its body into the lines it expects and the lines it produces."""
    hunk = Hunk(0, 3, 0, 3, [" a", "-b", "+X", " c"])
    assert hunk.old_lines() == ["a", "b", "c"]
    assert hunk.new_lines() == ["a", "X", "c"]
    assert hunk.header() == "@@ -1,3 +1,3 @@"
