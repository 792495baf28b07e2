"""Unified diffs: round trips (property), strictness, and files without a final newline."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.io import PappoError
from pappo.tasks.patches import apply_git_patch, apply_patch, changed_lines, make_patch
from pappo.tasks.run_tests import apply_patch_file

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


# `pappo run-tests --patch FILE` (src/pappo/tasks/run_tests.py): the file is read as bytes, and bad
# files are named with the fix.


def test_a_crlf_diff_file_applies_to_a_crlf_tree(tmp_path: Path):
    old = {"pkg/m.py": b"a = 1\r\nb = 2\r\nc = 3\r\n"}
    new = {"pkg/m.py": b"a = 1\r\nb = 4\r\nc = 3\r\n"}
    diff = tmp_path / "fix.diff"
    diff.write_bytes(make_patch(old, new).encode())
    assert b"\r\n" in diff.read_bytes()
    assert apply_patch_file(old, diff) == new


def test_bad_patch_files_are_named_with_the_fix(tmp_path: Path):
    tree = {"pkg/m.py": b"a = 1\n"}
    binary = tmp_path / "bin.diff"
    binary.write_bytes(b"--- a/pkg/m.py\n\xff\xfe\x00")
    stale = tmp_path / "stale.diff"
    stale.write_text("--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-a = 2\n+a = 3\n")
    for path, needles in [
        (binary, ["not a UTF-8 text diff (byte 15); pass a git diff"]),
        (tmp_path, ["is a directory; pass a diff file"]),
        (stale, ["patch does not apply", "make the diff against the task's buggy tree"]),
    ]:
        with pytest.raises(PappoError) as e:
            apply_patch_file(tree, path)
        assert str(e.value).startswith(f"--patch {path}: ") and all(n in str(e.value) for n in needles)


def test_a_diff_that_creates_a_symbolic_link_is_refused(tmp_path: Path):
    """The applied tree is read outside the sandbox: a link would bring in any file of the machine
    (a host secret in a failure message, or the reference source in place of a fix)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    link = (
        "diff --git a/pkg/leak.txt b/pkg/leak.txt\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        "+++ b/pkg/leak.txt\n"
        "@@ -0,0 +1 @@\n"
        f"+{secret}\n"
        "\\ No newline at end of file\n"
    )
    with pytest.raises(PappoError, match="creates symbolic links \\(pkg/leak.txt\\)"):
        apply_git_patch({"pkg/a.py": b"x = 1\n"}, link)


# Characters `str.splitlines` breaks lines at, but diff(1), git and patch(1) do not.
_ODD_BREAKS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]


@pytest.mark.parametrize("odd", _ODD_BREAKS)
def test_patches_count_lines_at_newlines_only(odd: str):
    """A form feed (page break) between functions, or any other character `str.splitlines` breaks
    at: pappo's diff must apply with pappo and git, both ways, and locate the bug's function."""
    from pappo.tasks.hidden import bug_function

    line = odd if odd == "\x0c" else f"# page{odd}break"  # most are legal in comments only
    for src in (
        f"def f(a, b):\n    return a + b\n{line}\ndef g(x):\n    if x > 1:\n        return 2\n    return x * 3\n",
        f"def f(a, b):\n    return a + b\n{line}\ndef g(x):\n    return x * 3\n",  # odd line in the hunk
    ):
        clean = {"p/m.py": src.encode()}
        buggy = {"p/m.py": src.replace("x * 3", "x / 3").encode()}
        bug_patch, patch = make_patch(clean, buggy), make_patch(buggy, clean)
        for apply in (apply_patch, apply_git_patch):
            assert apply(clean, bug_patch) == buggy and apply(buggy, patch) == clean
        if odd != "\r":  # Python itself ends a line at a lone \r, so its line numbers differ
            assert bug_function(clean, bug_patch) == "p.m:g"
        assert changed_lines(bug_patch) == ["    return x * 3", "    return x / 3"]


def test_synthesis_refuses_a_bug_whose_diffs_do_not_round_trip():
    from pappo.tasks.synthesize import check_round_trip

    clean, buggy = {"p/m.py": b"a = 1\nb = 2\n"}, {"p/m.py": b"a = 1\nb = 3\n"}
    patch = make_patch(buggy, clean)
    check_round_trip("family ffkit", clean, buggy, make_patch(clean, buggy), patch)
    wrong = make_patch(clean, {"p/m.py": b"a = 1\nb = 4\n"})  # applies, to other bytes
    with pytest.raises(PappoError, match=r"^family ffkit: its bug_patch/patch do not round-trip"):
        check_round_trip("family ffkit", clean, buggy, wrong, patch)
