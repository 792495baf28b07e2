"""Sandbox v1: per-test outcomes from the result channel, limits, and nothing left behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pappo.config import SandboxParams
from pappo.sandbox.runner import run_many, run_tests

PKG = {"pkg/__init__.py": b"def add(a, b):\n    return a + b\n"}


def suite(body: str) -> dict[str, bytes]:
    return {**PKG, "tests/test_pkg.py": ("from pkg import add\n" + body).encode()}


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_outcomes_per_test_and_failure_details():
    files = suite(
        "def test_ok():\n    assert add(1, 2) == 3\n"
        "def test_wrong():\n    assert add(2, 2) == 5\n"
        "def test_crash():\n    add(1, 'a')\n"
    )
    run = run_tests(files, SandboxParams())
    assert run.outcomes == {
        "tests/test_pkg.py::test_crash": "failed",
        "tests/test_pkg.py::test_ok": "passed",
        "tests/test_pkg.py::test_wrong": "failed",
    }
    wrong = run.failures["tests/test_pkg.py::test_wrong"]
    assert wrong["compare"] == {"op": "==", "left": "4", "right": "5"} and wrong["test_line"] == 5
    assert run.failures["tests/test_pkg.py::test_crash"]["exc_type"] == "TypeError"


def test_requested_ids_missing_and_skipped():
    files = suite("import pytest\n@pytest.mark.skip\ndef test_skip():\n    pass\n")
    run = run_tests(files, SandboxParams(), ["tests/test_pkg.py::test_skip", "tests/test_pkg.py::test_gone"])
    assert run.outcomes == {"tests/test_pkg.py::test_gone": "missing", "tests/test_pkg.py::test_skip": "skipped"}
    assert run.failing() == sorted(run.outcomes)  # skipped and missing never count as passing


def test_faked_exit_code_and_output_do_not_pass():
    """A test run that prints a success line and exits 0 early yields no result, not a pass."""
    files = suite("import os\ndef test_ok():\n    print('1 passed')\n    os._exit(0)\n")
    run = run_tests(files, SandboxParams(), ["tests/test_pkg.py::test_ok"])
    assert run.infra_error and run.outcomes == {"tests/test_pkg.py::test_ok": "missing"}


def test_conftest_in_workspace_is_ignored():
    files = {**suite("def test_wrong():\n    assert add(2, 2) == 5\n"),
             "tests/conftest.py": b"import pytest\n@pytest.hookimpl(hookwrapper=True)\n"
             b"def pytest_runtest_makereport(item, call):\n    o = yield\n    o.get_result().outcome = 'passed'\n"}  # fmt: skip
    run = run_tests(files, SandboxParams())
    assert run.outcomes == {"tests/test_pkg.py::test_wrong": "failed"}


def test_hanging_test_times_out_alone():
    files = suite("def test_hang():\n    while True:\n        pass\ndef test_ok():\n    assert add(1, 1) == 2\n")
    run = run_tests(files, SandboxParams(test_timeout_s=1, timeout_s=20))
    assert run.outcomes == {"tests/test_pkg.py::test_hang": "timeout", "tests/test_pkg.py::test_ok": "passed"}


def test_run_timeout_kills_everything(private_tmp: Path):
    files = suite("import time\ntime.sleep(30)  # at collection, outside any per-test alarm\n")
    run = run_tests(files, SandboxParams(test_timeout_s=1, timeout_s=2))
    assert run.timed_out and run.duration_s < 10
    assert list(private_tmp.iterdir()) == []  # workspace and channel removed


def test_memory_limit_fails_the_test():
    files = suite("def test_big():\n    x = bytearray(900 * 1024 * 1024)\n    assert len(x) > 0\n")
    run = run_tests(files, SandboxParams(memory_mb=512))
    assert run.outcomes == {"tests/test_pkg.py::test_big": "failed"}
    assert run.failures["tests/test_pkg.py::test_big"]["exc_type"] == "MemoryError"


def test_parallel_runs_keep_order(private_tmp: Path):
    good = suite("def test_a():\n    assert add(1, 1) == 2\n")
    bad = suite("def test_a():\n    assert add(1, 1) == 3\n")
    runs = run_many([(good, None), (bad, None), (good, None)], SandboxParams(workers=2))
    assert [r.outcomes["tests/test_pkg.py::test_a"] for r in runs] == ["passed", "failed", "passed"]
    assert list(private_tmp.iterdir()) == []


def test_path_escape_is_refused():
    with pytest.raises(ValueError, match="escapes the workspace"):
        run_tests({"../evil.py": b""}, SandboxParams())
