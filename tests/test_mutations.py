"""Each mutation operator: the exact edit it makes, what it must leave alone, and invariants."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.tasks.models import OPERATORS
from pappo.tasks.mutations import enumerate_mutants
from pappo.tasks.patches import apply_patch, make_patch

ROOT = Path(__file__).resolve().parents[1]


def mutated_lines(src: str, op: str) -> set[str]:
    """The set of changed lines (stripped) over all mutants of `op`."""
    out = set()
    for m in enumerate_mutants("m.py", src, (op,)):
        old, new = src.splitlines(), m.source.splitlines()
        out |= (
            {b.strip() for a, b in zip(old, new) if a != b} if len(old) == len(new) else {"<lines removed>"}
        )
    return out


def test_comparison_flip():
    src = "def f(a: int, b: int) -> bool:\n    return a < b and a == b and a in (1,)\n"
    lines = mutated_lines(src, "comparison_flip")
    assert "return a <= b and a == b and a in (1,)" in lines
    assert "return a < b and a != b and a in (1,)" in lines
    assert "return a < b and a == b and a not in (1,)" in lines
    assert len(lines) == 3


def test_off_by_one_range_slice_index():
    src = "def f(xs: list[int], n: int) -> int:\n    for i in range(n):\n        xs[i] = xs[0]\n    return sum(xs[1:n])\n"
    lines = mutated_lines(src, "off_by_one")
    assert "for i in range(n + 1):" in lines and "for i in range(n - 1):" in lines
    assert "xs[i + 1] = xs[0]" in lines  # loop index
    assert "xs[i] = xs[1]" in lines  # constant index
    assert "return sum(xs[2:n])" in lines and "return sum(xs[1:n - 1])" in lines


def test_off_by_one_skips_non_integer_keys():
    src = "def f(d: dict, key: str) -> int:\n    return d[key] + d['x']\n"
    assert mutated_lines(src, "off_by_one") == set()


def test_bool_op_swap():
    src = "def f(a: bool, b: bool) -> bool:\n    return a and b or not a\n"
    lines = mutated_lines(src, "bool_op_swap")
    assert lines == {"return (a or b) or not a", "return a and b and not a"} or lines == {
        "return a or b or not a",
        "return a and b and not a",
    }


def test_dropped_negation():
    src = "def f(xs: list) -> bool:\n    return not xs\n"
    assert mutated_lines(src, "dropped_negation") == {"return xs"}


def test_wrong_variable_same_type_only():
    src = "def f(lo: int, hi: int, name: str) -> int:\n    return hi - lo\n"
    lines = mutated_lines(src, "wrong_variable")
    assert lines == {"return lo - lo", "return hi - hi"}  # `name` (str) is never swapped in


def test_wrong_variable_not_before_definition():
    src = "def f(a: int) -> int:\n    b = a\n    c: int = 2\n    return c + a\n"
    lines = mutated_lines(src, "wrong_variable")
    assert "b = c" not in lines  # c is assigned after line 2
    assert "return a + a" in lines and "return c + c" in lines


def test_wrong_constant_skips_docstrings_defaults_and_indices():
    src = 'def f(x: int, k: int = 4) -> int:\n    """Doc 7."""\n    return x * 3 + [1][0]\n'
    lines = mutated_lines(src, "wrong_constant")
    assert lines == {
        "return x * 4 + [1][0]",
        "return x * 2 + [1][0]",
        "return x * 3 + [2][0]",
        "return x * 3 + [0][0]",
    }


def test_swapped_arguments():
    src = "def f(a: int, b: int) -> int:\n    return pow(a, b, 7)\n"
    assert mutated_lines(src, "swapped_arguments") == {"return pow(b, a, 7)", "return pow(a, 7, b)"}


def test_removed_branch_guard_and_else():
    src = (
        "def f(x: int) -> int:\n"
        "    if x < 0:\n"
        "        return 0\n"
        "    if x > 5:\n"
        "        y = 1\n"
        "    else:\n"
        "        y = 2\n"
        "    return y\n"
    )
    mutants = enumerate_mutants("m.py", src, ("removed_branch",))
    sources = {m.source for m in mutants}
    assert src.replace("    if x < 0:\n        return 0\n", "") in sources
    assert src.replace("    else:\n        y = 2\n", "") in sources
    assert all(ast.parse(s) for s in sources)


def test_removed_branch_keeps_block_non_empty():
    src = (
        "def f(x: int) -> int:\n    for i in range(x):\n        if i == 2:\n            break\n    return x\n"
    )
    (m,) = enumerate_mutants("m.py", src, ("removed_branch",))
    assert "        pass\n" in m.source


def test_arithmetic_op_skips_strings():
    src = "def f(a: int, s: str) -> str:\n    a += 2\n    return s + 'x' + str(a * 3)\n"
    lines = mutated_lines(src, "arithmetic_op")
    assert lines == {"a -= 2", "return s + 'x' + str(a / 3)"}


def test_wrong_default():
    src = "def f(a: int = 3, b: bool = False, c: str = 'x', d=None) -> int:\n    return a\n"
    lines = mutated_lines(src, "wrong_default")
    assert lines == {
        "def f(a: int = 4, b: bool = False, c: str = 'x', d=None) -> int:",
        "def f(a: int = 3, b: bool = True, c: str = 'x', d=None) -> int:",
    }


def test_every_operator_has_sites_in_the_benchmark():
    """All ten operators apply somewhere in the real families."""
    seen = set()
    for path in (ROOT / "data" / "repofix" / "repos").glob("*/*/*.py"):
        if path.parent.name == "tests":
            continue
        seen |= {m.operator for m in enumerate_mutants(path.name, path.read_text())}
    assert seen == set(OPERATORS)


def _real_sources() -> list[Path]:
    return sorted(p for p in (ROOT / "data").glob("*/repos/*/*/*.py") if p.parent.name != "tests")


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_mutants_parse_differ_and_round_trip(data: st.DataObject) -> None:
    """Property: any mutant of any real module parses, changes the AST, and its bug patch
    applies and reverts exactly."""
    path = data.draw(st.sampled_from(_real_sources()))
    text = path.read_text()
    mutants = enumerate_mutants(path.name, text)
    if not mutants:
        return
    m = data.draw(st.sampled_from(mutants))
    assert ast.dump(ast.parse(m.source)) != ast.dump(ast.parse(text))
    clean, buggy = {"p.py": text.encode()}, {"p.py": m.source.encode()}
    bug = make_patch(clean, buggy)
    assert apply_patch(clean, bug) == buggy
    assert apply_patch(buggy, make_patch(buggy, clean)) == clean
    changed = [ln for ln in bug.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    assert 1 <= len(changed) <= 2 * (m.source.count("\n") + 1)  # a local edit, not a rewrite
