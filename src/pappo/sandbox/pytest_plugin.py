"""pytest plugin of every sandboxed run: authenticated per-test outcomes and integrity checks.

Records go over a pipe that only the worker reads, one JSON line each, with a sequence number
and an HMAC under a fresh per-run key held in this module's closure, so printing, exit codes or
bytes written to the pipe by the code under test cannot fake a result. After collection and
after every test the plugin checks that the runner's machinery (pytest's run protocol, pluggy,
this plugin, the channel and the functions it uses) is still the same objects; if not it
reports `tamper` and ends the run. Each test gets its own wall-clock alarm.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import os
import re
import signal
import sys
from collections.abc import Callable
from typing import Any

import _pytest.python
import _pytest.reports
import _pytest.runner
import pluggy
import pytest

from pappo.sandbox import checks, typed, values

# Captured at import, in the worker, before any code under test exists.
_write, _exit, _fstat, _dumps = os.write, os._exit, os.fstat, json.dumps
_hmac_new, _sha256, _setitimer = hmac.new, hashlib.sha256, signal.setitimer
_RUN: dict[str, Any] = {}
# CPython's default repr says where an object lives ("<pkg.Cls object at 0x7f3a...>"): different in
# every run, and the policy reads these texts, so the same seed would train differently.
_mask_addresses = re.compile(r" at 0x[0-9a-fA-F]+").sub


class SandboxTestTimeout(BaseException):
    """Raised by the per-test alarm; a BaseException so `except Exception` cannot swallow it."""


def begin_run(
    fd: int,
    key: bytes,
    test_timeout: float,
    trusted_tests: dict[str, str],
    hidden: dict[str, Any] | None = None,
    trace: dict[str, Any] | None = None,
) -> None:
    """Called in the forked child, before any code under test is imported. `hidden`: checks to run
    after the tests (`checks.run_checks`); `trace`: record the tests' entry calls (`checks.Tracer`)."""
    st = _fstat(fd)
    _RUN.clear()
    _RUN.update(
        fd=fd,
        key=key,
        seq=0,
        test_timeout=test_timeout,
        phases={},
        compare=None,
        trusted_tests=trusted_tests,
        channel=(st.st_dev, st.st_ino),
        hidden=hidden,
        trace=trace,
    )
    _RUN["snapshot"] = _snapshot()
    signal.signal(signal.SIGALRM, _on_alarm)
    emit("ready")


def emit(kind: str, **payload: Any) -> None:
    body = _dumps({"seq": _RUN["seq"], "kind": kind, **payload}, sort_keys=True)
    mac = _hmac_new(_RUN["key"], body.encode(), _sha256).hexdigest()
    _RUN["seq"] += 1
    _write(_RUN["fd"], (body + "\t" + mac + "\n").encode())


def refused(reason: str) -> None:
    """`guard`'s verdict on an audit event: the run reaches past the code the scan read; ended as
    tampering, like a changed runner."""
    emit("tamper", where="audit hook", reason=reason)
    _exit(3)


def _on_alarm(signum: int, frame: object) -> None:
    raise SandboxTestTimeout("test exceeded its time limit")


def _watched() -> list[tuple[str, Callable[[], object]]]:
    """What must not change during a run, as (label, getter) pairs."""
    runner, reports, python = _pytest.runner, _pytest.reports, _pytest.python
    items: list[tuple[str, Callable[[], object]]] = [
        ("os.write", lambda: os.write),
        ("os._exit", lambda: os._exit),
        ("json.dumps", lambda: json.dumps),
        ("hmac.new", lambda: hmac.new),
        ("signal.setitimer", lambda: signal.setitimer),
        ("signal.signal", lambda: signal.signal),
        ("runner.runtestprotocol", lambda: runner.runtestprotocol),
        ("runner.call_and_report", lambda: runner.call_and_report),
        ("runner.call_runtest_hook", lambda: getattr(runner, "call_runtest_hook", None)),
        ("runner.CallInfo.from_call", lambda: runner.CallInfo.__dict__["from_call"]),
        ("reports.TestReport.from_item_and_call", lambda: reports.TestReport.__dict__["from_item_and_call"]),
        ("python.pytest_pyfunc_call", lambda: python.pytest_pyfunc_call),
        ("python.Function.runtest", lambda: python.Function.runtest),
        ("pluggy.HookCaller.__call__", lambda: pluggy.HookCaller.__call__),
        ("pytest.raises", lambda: pytest.raises),
        ("pytest.approx", lambda: pytest.approx),
        ("builtins.__import__", lambda: builtins.__import__),
        ("builtins.isinstance", lambda: builtins.isinstance),
        ("builtins.repr", lambda: builtins.repr),
    ]
    for name in (
        "pytest",
        "_pytest.runner",
        "_pytest.reports",
        "_pytest.python",
        "pluggy",
        "os",
        "json",
        "hmac",
        "builtins",
        __name__,
        checks.__name__,
        values.__name__,
        typed.__name__,
    ):
        items.append((f"sys.modules[{name!r}]", lambda n=name: sys.modules.get(n)))
    for mod in (sys.modules[__name__], checks, values, typed):  # the plugin, hidden checks, typed asserts
        for name, obj in list(vars(mod).items()):
            # every callable global, captured ones too: rebinding the plugin's `_dumps` forges a pass
            if callable(obj) and not name.startswith("__"):
                items.append((f"{mod.__name__}.{name}", lambda m=mod, n=name: vars(m).get(n)))
    return items


def _snapshot() -> list[tuple[str, Callable[[], object], object]]:
    return [(label, get, get()) for label, get in _watched()]


def _check_integrity(where: str) -> None:
    changed = [label for label, get, obj in _RUN["snapshot"] if get() is not obj]
    try:
        st = _fstat(_RUN["fd"])
        if (st.st_dev, st.st_ino) != _RUN["channel"]:
            changed.append("result channel")
    except OSError:
        changed.append("result channel")
    if changed:
        emit("tamper", where=where, changed=changed)
        _exit(3)


def _short(value: object, limit: int = 240) -> str:
    try:
        text = repr(value)
    except Exception as e:  # a broken __repr__ in the code under test
        text = f"<unrepresentable: {type(e).__name__}>"
    text = _mask_addresses(" at 0x...", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(value: object) -> str:
    try:
        return _mask_addresses(" at 0x...", str(value))
    except Exception as e:
        return f"<unprintable: {type(e).__name__}>"


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object) -> list[str]:
    # Answering first skips pytest's own diff of the operands, which nothing here reads.
    compare = {"op": op, "left": _short(left), "right": _short(right)}
    if _RUN:
        _RUN["compare"] = compare
    return [f"{compare['left']} {op} {compare['right']}"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _RUN["compare"] = None
    typed.reset()
    _setitimer(signal.ITIMER_REAL, _RUN["test_timeout"])


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _setitimer(signal.ITIMER_REAL, 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    if not _RUN.get("trace"):
        yield
        return
    tracer = checks.Tracer(str(item.config.rootpath), frozenset(_RUN["trace"]["roots"]))
    sys.setprofile(tracer)
    try:
        yield
    finally:
        sys.setprofile(None)
        emit("trace", nodeid=item.nodeid, entries=tracer.entries)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    phases = _RUN["phases"].setdefault(item.nodeid, {})
    if call.excinfo is not None and call.excinfo.errisinstance(SandboxTestTimeout):
        _setitimer(signal.ITIMER_REAL, 0)
        phases["timeout"] = True
    elif call.when == "call":
        # Decided from the exception itself, not only from the (patchable) report object.
        phases["call"] = "passed" if call.excinfo is None else report.outcome
        if call.excinfo is not None and report.failed:
            phases["failure"] = _failure(item, call)
    elif report.failed:
        phases["error"] = True
    elif report.skipped and call.when == "setup":
        phases["skipped"] = True


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    p = _RUN["phases"].pop(nodeid, {})
    if p.get("timeout"):
        outcome = "timeout"
    elif p.get("error"):
        outcome = "error"
    elif p.get("skipped"):
        outcome = "skipped"
    else:
        outcome = p.get("call", "missing")
    emit("outcome", nodeid=nodeid, outcome=outcome, failure=p.get("failure"), types=typed.collected())
    typed.reset()
    _RUN["n_passed"] = _RUN.get("n_passed", 0) + (outcome == "passed")
    _RUN["n_other"] = _RUN.get("n_other", 0) + (outcome != "passed")
    _check_integrity(f"after {nodeid}")


def _failure(item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any]:
    excinfo = call.excinfo
    assert excinfo is not None
    # Walk the raw traceback: pytest's Traceback objects cost milliseconds per failure.
    test_file, test_line, last_file = str(item.path), None, None
    tb = excinfo.tb
    while tb is not None:
        last_file = tb.tb_frame.f_code.co_filename
        if last_file == test_file:
            test_line = tb.tb_lineno
        tb = tb.tb_next
    code = getattr(getattr(item, "function", None), "__code__", None)
    return {
        "exc_type": excinfo.type.__name__,
        "message": _text(excinfo.value)[:500],
        "test_file": os.path.relpath(test_file, str(item.config.rootpath)),
        "test_line": test_line,
        "def_line": code.co_firstlineno if code is not None else None,
        "compare": _RUN["compare"],
        "raised_in_test_file": last_file == test_file,
    }


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed and _RUN:
        _RUN["n_other"] = _RUN.get("n_other", 0) + 1
        emit("collect_error", nodeid=report.nodeid, message=_text(report.longrepr)[-600:])


def pytest_collection_finish(session: pytest.Session) -> None:
    emit("collected", n=len(session.items))
    _check_integrity("after collection")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _RUN:
        return
    spec = _RUN.get("hidden")
    # After the visible tests, in the same process (no second start-up). Only when they all passed,
    # unless asked: otherwise the grade has failed already and the answers would go unread.
    if spec and (
        spec.get("always")
        or (
            _RUN.get("n_passed")
            and not _RUN.get("n_other")
            and session.testsfailed == 0
            and not session.shouldfail
        )
    ):
        results = checks.run_checks(_RUN["hidden"], min(_RUN["test_timeout"], checks.CHECK_TIMEOUT_S))
        _check_integrity("after hidden checks")
        emit("hidden", results=results)
    emit("done")
