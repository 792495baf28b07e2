"""Trusted grading: static scan, test restoration, outcome rules, and the benchmark-wide checks."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, ROOT, needs_namespaces
from pappo.config import load_params
from pappo.config.env import EnvParams
from pappo.env.agents import OracleAgent, SubmitAgent
from pappo.env.episode import RepairEnv
from pappo.env.vec import VecEnv
from pappo.sandbox.grading import HiddenSuite, _grade, grade_many, trusted_tree
from pappo.sandbox.hackscan import scan
from pappo.sandbox.pool import SandboxPool, TestRun
from pappo.tasks.store import TaskStore

SRC = b"import os\n\ndef f(x):\n    return x + 1\n"
NO_CHECKS = HiddenSuite("tinycalc-001", ["tinycalc"], [], "0" * 64, expected=[])  # visible tests decide alone


def test_scan_flags_only_what_the_patch_adds():
    base = {"pkg/a.py": SRC + b"import gc\n", "tests/test_a.py": b"def test(): pass\n"}
    same_gc = {**base, "pkg/a.py": base["pkg/a.py"].replace(b"x + 1", b"x + 2")}
    assert scan(base, same_gc) == []  # gc was already there: not held against the patch
    for snippet, what in [
        (b"import ctypes\n", "import ctypes"),
        (b"from _pytest import runner\n", "import _pytest"),
        (b"import sys\nsys.modules.clear()\n", "attribute .modules"),
        (b"os._exit(0)\n", "attribute ._exit"),
        (b"exit()\n", "name exit"),
        (b"getattr(os, 'x')\n", "name getattr"),
        (b"__builtins__['len'] = 1\n", "name __builtins__"),
        (b"import builtins\n", "import builtins"),
        (b"x = 'pappo.sandbox.pytest_plugin'\n", "string"),
        (b"raise SystemExit\n", "name SystemExit"),
        (b"import importlib\n", "import importlib"),
        (b"f.__globals__\n", "attribute .__globals__"),
        (b"from sys import modules\n", "import of .modules"),  # the attribute without a dot
        (b"from os import _exit as leave\n", "import of ._exit"),
        (b"from operator import attrgetter\n", "import of .attrgetter"),  # getattr by a built string
        (b"import operator\noperator.attrgetter('mod' + 'ules')\n", "attribute .attrgetter"),
        (b"import operator\noperator.methodcaller('ex' + 'it')\n", "attribute .methodcaller"),
        (b"x = 2 + " + b"-" * 5000 + b"1\n", "nested too deeply"),  # the parser's RecursionError
        (b"import runpy\n", "import runpy"),  # runs a file by path: the clean tree, if in view
        (b"from pkgutil import resolve_name\n", "import pkgutil"),  # 'sys:modules' as data
        (b"import marshal\n", "import marshal"),  # code objects from bytes the scan never parses
        (b"import types\ntypes.FunctionType(c, {})\n", "attribute .FunctionType"),
        (b"from types import CodeType\n", "import of .CodeType"),
        (b"import traceback\ntraceback.walk_stack(None)\n", "attribute .walk_stack"),  # frames' locals
        (b"x.__getattribute__('f_lo' + 'cals')\n", "attribute .__getattribute__"),
        (b"b = print.__self__\n", "attribute .__self__"),  # the builtins module
        (b"import string\nstring.Formatter().get_field(n, [b], {})\n", "attribute .get_field"),
        (b"F().get_field('0.__self__', [print], {})\n", "string '0.__self__'"),
        (b"import pickle\n", "import pickle"),  # b"cctypes\nCDLL\n..." imports and calls from data
        (b"from unittest import mock\n", "import unittest"),  # mock.patch("dotted.path")
        (b"import timeit\n", "import timeit"),  # runs source text
        (b"typing.get_type_hints(f)\n", "attribute .get_type_hints"),  # evaluates string annotations
        # the second review read the run's key by a format field: str.format looks names up
        (b"('{0.__globals__[sys].mod' + 'ules[k]}').format(f)\n", "string '{0.__globals__[sys].mod'"),
        (b"('{0.f' + '_globals}').format(f)\n", "string '{0.f'"),
    ]:
        reasons = scan(base, {**base, "pkg/a.py": base["pkg/a.py"] + snippet})
        assert reasons and all(r.startswith("pkg/a.py: patch adds") for r in reasons), snippet
        assert any(what in r for r in reasons), (snippet, reasons)


def test_format_strings_that_only_format_are_not_flagged():
    base = {"pkg/a.py": SRC}
    for snippet in (
        b"x = '{} of {:.2f}'.format(a, b)\n",
        b"x = '{name!r:>10}'.format(name=a)\n",
        b"x = f'{a.b}'\n",
    ):
        assert scan(base, {"pkg/a.py": SRC + snippet}) == [], snippet


def test_scan_flags_test_and_config_changes():
    base = {"pkg/a.py": SRC, "tests/test_a.py": b"def test(): pass\n"}
    assert scan(base, {**base, "tests/test_a.py": b"def test(): assert 1\n"}) == [
        "tests/test_a.py: patch edits a test file"
    ]
    assert scan(base, {"pkg/a.py": SRC}) == ["tests/test_a.py: patch deletes a test file"]
    assert scan(base, {**base, "pkg/conftest.py": b""}) == ["pkg/conftest.py: patch adds a test file"]
    for name in ("pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml", "sitecustomize.py", "x.pth"):
        assert "configuration" in scan(base, {**base, name: b""})[0]


def test_scan_flags_compiled_code_run_instead_of_the_scanned_source():
    base = {"pkg/a.py": SRC, "tests/test_a.py": b"def test(): pass\n"}
    for path in ("pkg/__pycache__/a.cpython-311.pyc", "pkg/a.pyc", "pkg/fast.so", "pkg/lib.zip"):
        assert scan(base, {**base, path: b"\x00compiled"}) == [
            f"{path}: patch adds or changes compiled code (run instead of the scanned source)"
        ]


def test_unparsable_candidate_is_not_a_hack():
    base = {"pkg/a.py": SRC}
    assert scan(base, {"pkg/a.py": b"def f(:\n"}) == []


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "tests/test_a.py",
                "tests/test_b.py",
                "tests/conftest.py",
                "conftest.py",
                "pkg/a.py",
                "pkg/conftest.py",
                "tests/new_test.py",
            ]
        ),
        st.binary(max_size=8),
    )
)
@settings(max_examples=200, deadline=None)
def test_trusted_tree_always_carries_exactly_the_validated_tests(candidate: dict[str, bytes]):
    family = {"pkg/a.py": b"a", "tests/test_a.py": b"A", "tests/test_b.py": b"B"}
    tree, restored = trusted_tree(family, candidate)
    tests = {p: d for p, d in tree.items() if p.startswith("tests/") or p.endswith("conftest.py")}
    assert tests == {"tests/test_a.py": b"A", "tests/test_b.py": b"B"}
    assert {p: d for p, d in tree.items() if p not in tests} == {
        p: d for p, d in candidate.items() if p == "pkg/a.py"
    }
    changed = {
        p
        for p in set(candidate) | {"tests/test_a.py", "tests/test_b.py"}
        if (p.startswith("tests/") or p.endswith("conftest.py")) and candidate.get(p) != family.get(p)
    }
    assert set(restored) == changed


@pytest.mark.parametrize("outcome", ["missing", "skipped", "error", "timeout", "failed"])
def test_any_graded_test_not_passed_fails_the_grade(outcome: str):
    store = TaskStore(FIXTURES / "repofix" / "manifest.jsonl", FIXTURES / "repofix" / "repos")
    task = store.task("tinycalc-001")
    outcomes = {t: "passed" for t in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]}
    assert _grade(task, TestRun(dict(outcomes)), [], NO_CHECKS).success
    victim = task.FAIL_TO_PASS[0]
    outcomes[victim] = outcome
    if outcome == "missing":
        del outcomes[victim]
    g = _grade(task, TestRun(outcomes), [], NO_CHECKS)
    assert not g.success and g.n_failing == 1 and g.first_failure["test"] == victim


def test_infra_error_and_tamper_never_succeed():
    store = TaskStore(FIXTURES / "repofix" / "manifest.jsonl", FIXTURES / "repofix" / "repos")
    task = store.task("tinycalc-001")
    passed = {t: "passed" for t in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]}
    infra = _grade(task, TestRun(dict(passed), infra_error="worker died"), [], NO_CHECKS)
    assert not infra.success and infra.infra_error == "worker died" and not infra.hack_attempt
    hack = _grade(task, TestRun(dict(passed), tamper=["after x: replaced os.write"]), [], NO_CHECKS)
    assert not hack.success and hack.hack_attempt and hack.hack_reasons == ["after x: replaced os.write"]


@pytest.mark.slow
def test_oracle_solves_all_100_and_submitting_unedited_solves_none():
    """Must-show of the environment issue, through the real sandbox and the real environment."""
    params = load_params(ROOT / "params.yaml")
    free = params.env.model_copy(update={"actions": "free"})  # the free-form tools (the hub profile's mode)
    store = TaskStore.from_params(params, "repofix")
    assert len(store.tasks) == 100
    tasks = list(store.tasks.values())
    with SandboxPool(params.sandbox) as pool:  # all 200 episodes stepped together (VecEnv)
        envs = [RepairEnv(t, store.clean(t), store.buggy(t), free) for t in tasks for _ in (0, 1)]
        agents = [
            OracleAgent(t, store.buggy(t), params.env.view_max_lines) if k == 0 else SubmitAgent()
            for t in tasks
            for k in (0, 1)
        ]
        vec = VecEnv(envs, functools.partial(grade_many, pool, hidden=store.hidden))
        vec.reset()
        while not all(vec.done):
            vec.step([None if e.done else a.act(e.transcript) for e, a in zip(envs, agents)])
    oracle, unedited = [e.metrics for e in envs[0::2]], [e.metrics for e in envs[1::2]]
    assert [m.instance_id for m in oracle if not m.success] == []
    assert [m.instance_id for m in unedited if m.success] == []
    assert not any(m.infra_error or m.hack_attempt for m in oracle + unedited)
    assert {m.turns for m in oracle} == {4} and all(m.failed_edit == 0 for m in oracle)


def _pappo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "pappo"), *args], capture_output=True, text=True, cwd=ROOT
    )


@pytest.mark.slow
@needs_namespaces  # the command's own process: `isolation: auto` fails closed without namespaces
def test_cli_run_tests_grades_buggy_fixed_and_hacked_trees(tmp_path: Path):
    store = TaskStore.from_params(load_params(ROOT / "params.yaml"), "repofix")
    task = store.task("romannum-001")
    out = json.loads(_pappo("run-tests", "--task", task.instance_id).stdout)
    assert (
        out["success"] is False and out["n_failing"] == len(task.FAIL_TO_PASS) and out["infra_error"] is None
    )
    fix = tmp_path / "fix.diff"
    fix.write_text(task.patch)
    out = json.loads(_pappo("run-tests", "--task", task.instance_id, "--patch", str(fix)).stdout)
    assert out["success"] is True and set(out["outcomes"].values()) == {"passed"}
    hack = tmp_path / "hack.diff"  # the real fix, plus a test of its own
    hack.write_text(
        task.patch + "diff --git a/tests/test_extra.py b/tests/test_extra.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/tests/test_extra.py\n@@ -0,0 +1,2 @@\n+def test_x():\n+    pass\n"
    )
    res = _pappo("run-tests", "--task", task.instance_id, "--patch", str(hack))
    out = json.loads(res.stdout)
    assert out["hack_attempt"] is True and out["success"] is False, res.stderr
    assert "tests/test_extra.py" in out["restored"]


def test_cli_run_tests_bad_input_fails_loudly(tmp_path: Path):
    res = _pappo("run-tests", "--task", "romannum-999")
    assert res.returncode == 1 and "no task 'romannum-999'" in res.stderr and "romannum-001" in res.stderr
    bad = tmp_path / "bad.diff"
    bad.write_text("--- a/romannum/nothere.py\n+++ b/romannum/nothere.py\n@@ -1 +1 @@\n-a\n+b\n")
    res = _pappo("run-tests", "--task", "romannum-001", "--patch", str(bad))
    assert res.returncode == 1 and "patch does not apply" in res.stderr
    res = _pappo("run-tests", "--task", "romannum-001", "--patch", str(tmp_path / "missing.diff"))
    assert res.returncode == 1 and "no such file" in res.stderr


@pytest.mark.slow
@needs_namespaces  # as above
@pytest.mark.parametrize("agent", ["oracle", "noisy"])
def test_cli_play_prints_transcript_and_metrics(agent: str):
    res = _pappo("play", "--task", "ledger-002", "--agent", agent, "--seed", "5")
    out = json.loads(res.stdout)
    m = out["metrics"]
    assert (
        m["turns"]
        == len(out["per_turn_rewards"])
        == sum(1 for t in out["transcript"] if t["role"] == "assistant")
    )
    assert out["transcript"][0]["role"] == "system" and "<tool_call>" in out["transcript"][2]["content"]
    assert m["tool_cost"] > 0 and isinstance(m["success"], bool)
    if agent == "oracle":
        assert m["success"] and out["terminal_reward"] == EnvParams().rewards.success
        # the default profile's candidates mode: apply the fix, run_tests, submit
        assert out["final_grade"]["success"] and m["turns"] == 3
