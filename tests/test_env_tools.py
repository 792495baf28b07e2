"""File tools over an in-memory tree: view, search, str_replace, truncation, run_tests summary."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.config.env import EnvParams
from pappo.env.tools import Workspace, count_occurrences, summarize_tests, truncate
from pappo.sandbox.grading import Grade

SRC = "".join(f"x{i} = {i}\n" for i in range(1, 101))  # 100 lines
TREE = {
    "pkg/__init__.py": b"from pkg.core import add\n",
    "pkg/core.py": b"def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "pkg/long.py": SRC.encode(),
    "pkg/empty.py": b"",
    "tests/test_core.py": b"from pkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "README.md": b"abc a.c\n",
}


def ws(**params: int) -> Workspace:
    return Workspace(TREE, EnvParams(**params))


# -- view
def test_view_numbers_lines_from_one():
    out = ws().view("pkg/core.py")
    assert out.splitlines()[0] == "pkg/core.py (lines 1-6 of 6)"
    assert out.splitlines()[1] == "   1| def add(a, b):"
    assert out.splitlines()[6] == "   6|     return a - b"


def test_view_range_is_inclusive_and_end_minus_one_means_the_end():
    assert ws().view("pkg/long.py", 10, 12).splitlines()[1:] == [
        "  10| x10 = 10",
        "  11| x11 = 11",
        "  12| x12 = 12",
    ]
    assert ws().view("pkg/long.py", 99, -1).splitlines()[1:] == ["  99| x99 = 99", " 100| x100 = 100"]
    assert ws().view("pkg/long.py", 98, 500).splitlines()[0] == "pkg/long.py (lines 98-100 of 100)"


def test_view_caps_lines_and_says_how_to_see_more():
    out = ws(view_max_lines=20).view("pkg/long.py").splitlines()
    assert len(out) == 1 + 20 + 1
    assert out[0] == "pkg/long.py (lines 1-20 of 100)" and out[20] == "  20| x20 = 20"
    assert "start=21" in out[-1]
    assert len(ws(view_max_lines=20).view("pkg/long.py", 90, 100).splitlines()) == 12  # fits: no note


def test_view_bad_ranges_and_paths_are_errors_naming_the_problem():
    w = ws()
    assert "start=0 is out of range" in w.view("pkg/core.py", 0) and "6 lines" in w.view("pkg/core.py", 0)
    assert "start=7 is out of range" in w.view("pkg/core.py", 7, 9)
    assert "end=2 is before start=4" in w.view("pkg/core.py", 4, 2)
    missing = w.view("pkg/cor.py")
    assert missing.startswith("Error: no file or directory 'pkg/cor.py'") and "pkg/core.py" in missing
    assert w.view("pkg/empty.py") == "pkg/empty.py is empty."


def test_view_of_a_directory_lists_its_files():
    w = ws()
    assert w.view(".").splitlines()[1:] == sorted(TREE)
    assert w.view("/").splitlines()[1:] == sorted(TREE)
    assert w.view("pkg/").splitlines() == w.view("pkg").splitlines()
    assert w.view("pkg").splitlines()[1:] == sorted(p for p in TREE if p.startswith("pkg/"))
    assert w.view("./pkg/core.py") == w.view("pkg/core.py")


# -- search
def test_search_is_a_plain_substring_search():
    w = ws()
    assert w.search("return a - b").splitlines() == [
        "pkg/core.py:2: return a - b",
        "pkg/core.py:6: return a - b",
    ]
    assert w.search("a.c") == "README.md:1: abc a.c"  # '.' is not a regex wildcard
    assert w.search("nowhere") == "No matches for 'nowhere'."
    assert w.search("").startswith("Error:")


def test_search_caps_hits_and_counts_the_rest():
    out = ws(search_max_hits=5).search("x").splitlines()
    assert out[:5] == [f"pkg/long.py:{i}: x{i} = {i}" for i in range(1, 6)]
    assert out[5] == "[95 more matches omitted; use a more specific pattern]" and len(out) == 6


# -- str_replace
def test_str_replace_success_edits_and_shows_the_region():
    w = ws()
    r = w.str_replace("pkg/core.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")
    assert r.ok
    assert w.files["pkg/core.py"].startswith(b"def add(a, b):\n    return a + b\n")
    assert r.message.splitlines()[0] == "Edited pkg/core.py. Lines 1-4 now read:"
    assert "   2|     return a + b" in r.message.splitlines()


def test_str_replace_failures_leave_the_tree_unchanged_and_say_why():
    w = ws()
    cases = [
        (("pkg/nope.py", "a", "b"), "no file or directory"),
        (("tests/test_core.py", "== 3", "== 4"), "tests are read-only"),
        (("pkg/core.py", "", "x"), "old_str is empty"),
        (("pkg/core.py", "def add", "def add"), "the same"),
        (("pkg/core.py", "return a * b", "return a + b"), "was not found"),
        (
            ("pkg/core.py", "    return a - b", "    return a + b"),
            "occurs 2 times in pkg/core.py (lines 2, 6)",
        ),
        (("pkg/core.py", "def add(a, b):", "def add(a, b)"), "SyntaxError at line 1"),
        # deeper than the parser holds: a RecursionError, which must not escape into the trainer
        (("pkg/core.py", "def add(a, b):", "X = " + "-" * 5000 + "1\ndef add(a, b):"), "nested too deeply"),
    ]
    for args, reason in cases:
        r = w.str_replace(*args)
        assert not r.ok and reason in r.message, (args, r.message)
    assert w.files == TREE


def test_conftest_anywhere_is_read_only_too():
    w = Workspace({"pkg/conftest.py": b"X = 1\n"}, EnvParams())
    assert "read-only" in w.str_replace("pkg/conftest.py", "X = 1", "X = 2").message


def test_non_python_files_are_not_syntax_checked():
    w = ws()
    assert w.str_replace("README.md", "abc", "def (").ok


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="ab\n ", max_size=30),
    st.text(alphabet="ab\n ", max_size=4),
    st.text(alphabet="xb", max_size=3),
)
def test_str_replace_applies_only_a_unique_match(text: str, old: str, new: str):
    w = Workspace({"f.txt": text.encode()}, EnvParams())
    r = w.str_replace("f.txt", old, new)
    unique = len(count_occurrences(text, old)) == 1
    assert r.ok == (unique and old != new)
    expect = text.replace(old, new, 1) if r.ok else text
    assert w.files["f.txt"] == expect.encode()


def test_count_occurrences_counts_overlaps():
    assert count_occurrences("aaa", "aa") == [0, 1]
    assert count_occurrences("abc", "") == []


# -- truncation and the run_tests summary
@given(st.text(max_size=600), st.integers(min_value=200, max_value=400))
def test_truncate_respects_the_limit_and_marks_cuts(text: str, limit: int):
    out = truncate(text, limit)
    assert len(out) <= limit
    assert (
        out == text
        if len(text) <= limit
        else ("output truncated" in out and text.startswith(out.split("\n[...")[0]))
    )


def grade(n_failing: int, **kw: object) -> Grade:
    outcomes = {f"tests/test_a.py::t{i}": "failed" if i < n_failing else "passed" for i in range(5)}
    base = dict(
        instance_id="pkg-001",
        success=n_failing == 0,
        outcomes=outcomes,
        n_failing=n_failing,
        hack_attempt=False,
        hack_reasons=[],
        infra_error=None,
        restored=[],
        first_failure=None,
        duration_s=0.1,
        isolation="rlimits",
    )
    return Grade(**{**base, **kw})


def test_summary_of_a_failing_run_is_a_few_lines():
    failure = {
        "test": "tests/test_a.py::t0",
        "outcome": "failed",
        "exc_type": "AssertionError",
        "message": "assert 27 == 3\n +  where 27 = mean([1, 2, 6])\nmore\nand more",
        "compare": {"op": "==", "left": "27", "right": "3"},
        "test_file": "tests/test_a.py",
        "test_line": 14,
        "def_line": 12,
    }
    lines = summarize_tests(grade(2, first_failure=failure)).splitlines()
    assert lines == [
        "3 passed, 2 failed (of 5 graded tests).",
        "First failure: tests/test_a.py::t0 (failed)",
        "  AssertionError: assert 27 == 3",
        "     +  where 27 = mean([1, 2, 6])",
        "    more",
        "  compared: 27 == 3",
        "  at tests/test_a.py:14",
    ]
    same = dict(failure, message="assert 27 == 3")
    assert "compared" not in summarize_tests(grade(2, first_failure=same))  # the message said it
    bare = summarize_tests(grade(1, first_failure={"test": "tests/test_a.py::t0", "outcome": "timeout"}))
    assert bare.splitlines()[1] == "First failure: tests/test_a.py::t0 (timeout)"


def test_summary_of_passing_infra_and_hack_runs():
    assert (
        summarize_tests(grade(0))
        == "5 passed, 0 failed (of 5 graded tests). All tests pass; call submit() to finish."
    )
    assert summarize_tests(grade(5, infra_error="worker died")).startswith("Sandbox error, try again")
    not_run = {f"tests/test_a.py::t{i}": "not_run" for i in range(5)}
    hack = summarize_tests(
        grade(5, outcomes=not_run, hack_attempt=True, hack_reasons=["pkg/core.py: uses gc"])
    )
    assert "rejected the code without running it" in hack and "pkg/core.py: uses gc" in hack
    flagged = summarize_tests(grade(1, hack_attempt=True, hack_reasons=["typed: int subclass with __eq__"]))
    assert "without running" not in flagged and "flagged" in flagged and "int subclass" in flagged
