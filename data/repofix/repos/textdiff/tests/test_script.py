import pytest

from textdiff import DELETE, EQUAL, INSERT, Edit, apply_script, count_changes, edit_script


def test_identical_inputs_are_all_equal():
    """Equal inputs produce only equal operations with matching indices."""
    assert edit_script(["a", "b"], ["a", "b"]) == [
        Edit(EQUAL, "a", 0, 0),
        Edit(EQUAL, "b", 1, 1),
    ]
    assert edit_script([], []) == []
    assert len(set(edit_script(["a", "a"], ["a", "a"]))) == 2


def test_replacement_deletes_before_inserting():
    """A changed middle line becomes a delete followed by an insert."""
    assert edit_script(["a", "b", "c"], ["a", "x", "c"]) == [
        Edit(EQUAL, "a", 0, 0),
        Edit(DELETE, "b", 1, 1),
        Edit(INSERT, "x", 2, 1),
        Edit(EQUAL, "c", 2, 2),
    ]


def test_pure_insertions_and_deletions():
    """Diffing against an empty side yields only inserts or only deletes."""
    assert edit_script([], ["x", "y"]) == [Edit(INSERT, "x", 0, 0), Edit(INSERT, "y", 0, 1)]
    assert edit_script(["x", "y"], []) == [Edit(DELETE, "x", 0, 0), Edit(DELETE, "y", 1, 0)]


def test_insert_at_end_and_delete_at_start():
    """Changes at either end keep the common lines as equal operations."""
    assert [op.tag for op in edit_script(["a", "b"], ["a", "b", "c"])] == [EQUAL, EQUAL, INSERT]
    assert [op.tag for op in edit_script(["z", "a"], ["a"])] == [DELETE, EQUAL]
    assert edit_script(["a"], ["a", "c"])[-1] == Edit(INSERT, "c", 1, 1)


def test_script_is_minimal():
    """The number of changes equals the lines outside the LCS."""
    ops = edit_script(list("ABCBDAB"), list("BDCABA"))
    assert count_changes(ops) == (2, 3)
    assert count_changes(edit_script(["a"], ["a"])) == (0, 0)


def test_apply_script_rebuilds_target():
    """Replaying an edit script on the source yields the target."""
    a, b = ["1", "2", "3", "4"], ["0", "2", "4", "5"]
    assert apply_script(a, edit_script(a, b)) == b
    assert apply_script([], edit_script([], ["n"])) == ["n"]


def test_apply_script_rejects_mismatches():
    """A script for different input, or one that stops early, is rejected."""
    ops = edit_script(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="line 1"):
        apply_script(["x", "b"], ops)
    with pytest.raises(ValueError):
        apply_script(["a", "b", "c"], ops)
    with pytest.raises(ValueError):
        apply_script(["a"], ops)
