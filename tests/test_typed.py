"""Typed visible assertions (`sandbox.typed`): operand signatures, the AST pass, the grader's rule."""

from __future__ import annotations

import ast

import pytest
from _pytest.assertion.rewrite import rewrite_asserts

from pappo.config.data import SandboxParams
from pappo.sandbox import typed
from pappo.sandbox.grading import HiddenSuite, _grade
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.models import Task

FAST = SandboxParams(timeout_s=10, test_timeout_s=2, memory_mb=512, workers=1)


class _Loud:
    """Every method a careless recorder might call raises."""

    def __eq__(self, other: object) -> bool:
        raise AssertionError("__eq__ called")

    def __hash__(self) -> int:
        raise AssertionError("__hash__ called")

    def __repr__(self) -> str:
        raise AssertionError("__repr__ called")

    def __iter__(self):
        raise AssertionError("__iter__ called")

    @property
    def __class__(self):
        raise AssertionError("__class__ read")


class _Meta(type):
    def __eq__(cls, other: object) -> bool:
        return True

    def __hash__(cls) -> int:
        return hash(int)


class _LoudList(list):
    def __iter__(self):
        raise AssertionError("__iter__ called")


def test_signatures_of_builtins_and_containers():
    assert typed.signature(3) == "int" and typed.signature(True) == "bool" and typed.signature(None) == "None"
    assert typed.signature([1, "a", (1.0, None)]) == "list[int|str|tuple[None|float]]"
    assert typed.signature({"a": [1], "b": {2}}) == "dict[str=>list[int]|set[int]]"
    assert typed.signature([]) == "list[]" and typed.signature(frozenset()) == "frozenset[]"
    assert typed.signature([[[[[1]]]]]) == "list[list[list[list[list]]]]"  # depth limit
    big = typed.signature(list(range(typed.MAX_NODES + 10)))
    assert big == "list[...|int]"


def test_subclasses_and_renamed_classes_are_told_apart():
    class RigInt(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    class Plain:
        pass

    for cls in (RigInt, Plain):
        cls.__module__, cls.__qualname__ = "builtins", "int"  # named like int: still not int
    assert typed.signature(RigInt(3)) == "builtins:int^int!eq"
    assert typed.signature(Plain()) == "builtins:int"
    assert typed.signature([RigInt(1)]) == "list[builtins:int^int!eq]"
    assert typed.signature(True) != typed.signature(1)


def test_signature_runs_no_method_of_the_value():
    loud = _Loud()
    assert typed.signature(loud).endswith(":_Loud!eq")
    assert typed.signature([loud, {1: loud}]).startswith("list[")
    assert typed.signature(_LoudList([1])).endswith(":_LoudList^list")  # a subclass is not iterated
    rigged_type = _Meta("Fake", (), {})  # its metaclass rigs hash and == against int
    assert typed.signature(rigged_type()) == f"{__name__}:Fake"
    assert typed.signature(rigged_type).endswith(":_Meta^type!eq")


def _instrumented(src: str) -> tuple[dict[str, object], int]:
    tree = ast.parse(src)
    rewrite_asserts(tree, src.encode(), "tests/test_x.py", None)
    n = typed.instrument(tree, "tests/test_x.py")
    namespace: dict[str, object] = {}
    exec(compile(tree, "tests/test_x.py", "exec", dont_inherit=True), namespace)
    return namespace, n


def test_instrumented_asserts_record_types_and_keep_pytest_messages():
    src = (
        "calls = []\n"
        "def f(x):\n    calls.append(x)\n    return x\n"
        "def test_a():\n    assert f(1) == 1\n    assert f('a') != f('b') == 'b'\n"
        "    assert f(1) == 1 and f([2]) == [2.0], 'msg'\n    assert not (f(3) == 4)\n    if f(5) == 5:\n        pass\n"
        "def test_b():\n    assert f(2) == 3\n"
    )
    ns, n = _instrumented(src)
    assert n == 7  # test_a: one, two (chained), two (`and`), one (`not`), not the `if`; test_b: one
    typed.reset()
    ns["test_a"]()
    assert ns["calls"] == [1, "a", "b", 1, [2], 3, 5]  # every operand evaluated once
    seen = typed.collected()
    assert len(seen) == 6 and ["list[int]", "list[float]"] in [p for ps in seen.values() for p in ps]
    assert all(site.startswith("tests/test_x.py:") for site in seen)
    typed.reset()
    with pytest.raises(AssertionError) as e:
        ns["test_b"]()
    assert "assert 2 == 3" in str(e.value)  # pytest's own explanation, untouched
    assert list(typed.collected().values()) == [[["int", "int"]]]


def test_a_file_without_comparisons_is_left_alone():
    _, n = _instrumented("def test_a():\n    assert True\n    assert 1 < 2\n")
    assert n == 0


def test_mismatches_and_rigged_types():
    clean = {"t.py:3:0": [["int", "int"]], "t.py:4:1": [["list[int]", "list[int]"]]}
    assert typed.mismatches(clean, clean) == []
    wrong = {"t.py:3:0": [["pkg.m:R^int!eq", "int"]], "t.py:4:1": [["list[pkg.m:A!eq]", "list[int]"]]}
    assert len(typed.mismatches(clean, wrong)) == 2
    assert typed.rigged(clean, wrong, ["pkg"]) == ["pkg.m:R^int!eq", "pkg.m:A!eq"]
    assert typed.rigged(clean, wrong, ["other"]) == []  # a library's type is a mismatch, not a hack
    floats = {"t.py:3:0": [["float", "int"]], "t.py:4:1": clean["t.py:4:1"]}
    assert typed.mismatches(clean, floats) and not typed.rigged(clean, floats, ["pkg"])
    assert "not reached" in typed.mismatches(clean, {"t.py:3:0": clean["t.py:3:0"]})[0]
    assert "does not reach" in typed.mismatches(clean, {**clean, "t.py:9:2": [["int", "int"]]})[0]


PKG = (
    "class _Any:\n    def __eq__(self, other):\n        return True\n\n"
    "class _Int(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n\n"
)


def _task(tests: list[str]) -> Task:
    return Task.model_construct(instance_id="pkg-001", FAIL_TO_PASS=tests[:1], PASS_TO_PASS=tests[1:])


@pytest.mark.parametrize("body", ["return a + b + 1", "return _Any()", "return _Int(a + b + 1)"])
def test_typed_assertions_in_the_sandbox(body: str):
    """The grade of a tree whose visible tests pass only through a rigged `==` is not a success."""
    tests = {
        "tests/test_pkg.py": b"from pkg import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\n"
        b"def test_more():\n    assert [add(2, 2)] == [4]\n"
    }
    clean = {"pkg/__init__.py": (PKG + "def add(a, b):\n    return a + b\n").encode(), **tests}
    cand = {"pkg/__init__.py": (PKG + f"def add(a, b):\n    {body}\n").encode(), **tests}
    with SandboxPool(FAST) as pool:
        table, run = pool.run(clean).types, pool.run(cand)
    task = _task(sorted(table))
    assert table == {
        "tests/test_pkg.py::test_add": {"tests/test_pkg.py:4:0": [["int", "int"]]},
        "tests/test_pkg.py::test_more": {"tests/test_pkg.py:7:1": [["list[int]", "list[int]"]]},
    }
    suite = HiddenSuite("pkg-001", ["pkg", "test_pkg"], [], "0" * 64, expected=[], typed_asserts=table)
    g = _grade(task, run, [], suite)
    assert not g.success and not g.visible_pass
    if body.startswith("return a"):  # plainly wrong: failed by the test itself, no type problem
        assert g.typed_failed == 0 and not g.hack_attempt
    else:  # passed the asserts; failed by their operand types, and flagged
        assert run.failing() == [] and g.typed_failed == 2 and g.hack_attempt
        assert g.first_failure and g.first_failure["exc_type"] == "TypedAssertion"
        assert any("rigged comparison by pkg:_" in r for r in g.hack_reasons)
    untyped = HiddenSuite("pkg-001", ["pkg"], [], "0" * 64, expected=[])
    assert _grade(task, run, [], untyped).visible_pass == (not body.startswith("return a"))  # the old grade
