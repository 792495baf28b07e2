"""pytest plugin loaded into every sandboxed run: per-test outcomes and failure details.

Outcomes go to a result file outside the workspace, tagged with a nonce the runner sends on
stdin, so the exit code and printed output never decide a grade. Each test also gets its own
wall-clock alarm so one hanging test does not hide the outcomes of the others.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

_STATE: dict[str, Any] = {"outcomes": {}, "failures": {}, "collect_errors": [], "compare": None}


class SandboxTestTimeout(BaseException):
    """Raised by the per-test alarm; a BaseException so `except Exception` cannot swallow it."""


def _short(value: object, limit: int = 240) -> str:
    try:
        text = repr(value)
    except Exception as e:  # a broken __repr__ in the code under test
        text = f"<unrepresentable: {type(e).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _on_alarm(signum: int, frame: object) -> None:
    raise SandboxTestTimeout("test exceeded its time limit")


def set_nonce(nonce: str) -> None:
    _STATE["nonce"] = nonce


def pytest_configure(config: pytest.Config) -> None:
    _STATE["result_path"] = os.environ.pop("PAPPO_RESULT_PATH", "")
    _STATE["test_timeout"] = float(os.environ.pop("PAPPO_TEST_TIMEOUT", "5"))
    signal.signal(signal.SIGALRM, _on_alarm)


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object) -> None:
    _STATE["compare"] = {"op": op, "left": _short(left), "right": _short(right)}
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _STATE["compare"] = None
    signal.setitimer(signal.ITIMER_REAL, _STATE["test_timeout"])


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    nodeid = report.nodeid
    if call.excinfo is not None and call.excinfo.errisinstance(SandboxTestTimeout):
        signal.setitimer(signal.ITIMER_REAL, 0)
        _STATE["outcomes"][nodeid] = "timeout"
        return
    if report.when == "call":
        _STATE["outcomes"][nodeid] = report.outcome  # passed / failed / skipped
        if report.failed and call.excinfo is not None:
            _STATE["failures"][nodeid] = _failure(item, call)
    elif report.failed:  # setup or teardown error
        _STATE["outcomes"][nodeid] = "error"
    elif report.skipped and report.when == "setup":
        _STATE["outcomes"][nodeid] = "skipped"


def _failure(item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any]:
    excinfo = call.excinfo
    assert excinfo is not None
    test_line = None
    for entry in excinfo.traceback:
        if str(entry.path) == str(item.path):
            test_line = entry.lineno + 1  # pytest counts from 0
    func = getattr(item, "function", None)
    code = getattr(func, "__code__", None)
    return {
        "exc_type": excinfo.type.__name__,
        "message": str(excinfo.value)[:500],
        "test_file": os.path.relpath(str(item.path), str(item.config.rootpath)),
        "test_line": test_line,
        "def_line": code.co_firstlineno if code is not None else None,
        "compare": _STATE["compare"],
        "raised_in_test_file": bool(excinfo.traceback)
        and str(excinfo.traceback[-1].path) == str(item.path),
    }


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _STATE["collect_errors"].append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = _STATE.get("result_path")
    if not path:
        return
    payload = {k: _STATE[k] for k in ("nonce", "outcomes", "failures", "collect_errors")}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f)
    os.replace(tmp, path)
