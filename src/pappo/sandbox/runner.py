"""Run a family's pytest suite on an in-memory tree, in a fresh temporary copy, under limits.

The interface is deliberately small (files in, per-test outcomes out) so that the hardened warm
fork server can replace the subprocess underneath without changing any caller.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pappo.config import SandboxParams

Outcome = Literal["passed", "failed", "error", "skipped", "timeout", "missing"]
Limits = SandboxParams

_TRUSTED_INI = "[pytest]\naddopts =\ntestpaths = tests\npython_files = test_*.py\n"


@dataclass
class TestRun:
    """Result of one pytest run. `outcomes` holds every collected (or requested) test id."""

    __test__ = False  # not a pytest test class

    outcomes: dict[str, Outcome]
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    timed_out: bool = False
    infra_error: str | None = None
    log_tail: str = ""

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o != "passed")

    def passing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")


def run_tests(
    files: Mapping[str, bytes],
    limits: Limits,
    test_ids: Sequence[str] | None = None,
) -> TestRun:
    """Copy `files` into a new workspace and run pytest there; nothing is left behind."""
    workspace = Path(tempfile.mkdtemp(prefix="pappo-ws-"))
    channel = Path(tempfile.mkdtemp(prefix="pappo-ch-"))
    try:
        materialise(workspace, files)
        return _run(workspace, channel, limits, test_ids)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(channel, ignore_errors=True)


def run_many(
    jobs: Sequence[tuple[Mapping[str, bytes], Sequence[str] | None]], limits: Limits
) -> list[TestRun]:
    """Run several (files, test_ids) jobs on `limits.workers` parallel subprocesses, in order."""
    with ThreadPoolExecutor(max_workers=limits.workers) as pool:
        return list(pool.map(lambda job: run_tests(job[0], limits, job[1]), jobs))


def materialise(root: Path, files: Mapping[str, bytes]) -> None:
    """Write an in-memory tree under `root`, refusing paths that escape it."""
    for rel, data in files.items():
        target = (root / rel).resolve()
        if not target.is_relative_to(root.resolve()):
            raise ValueError(f"file path {rel!r} escapes the workspace")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (root / ".tmp").mkdir(exist_ok=True)


def _command(workspace: Path, channel: Path, limits: Limits) -> list[str]:
    # The whole suite always runs (families are small); `test_ids` only selects what is reported,
    # so a requested id that does not exist is reported "missing" instead of aborting the run.
    ini = channel / "pytest.ini"
    ini.write_text(_TRUSTED_INI)
    rlimits = json.dumps(
        {k: getattr(limits, k) for k in ("cpu_s", "memory_mb", "max_file_mb", "max_procs")}
    )
    return [
        sys.executable, "-B", "-m", "pappo.sandbox.child", rlimits,
        "-q", "-c", str(ini), "--rootdir", str(workspace), "--noconftest",
        "-p", "no:cacheprovider", "tests",
    ]  # fmt: skip


def _run(workspace: Path, channel: Path, limits: Limits, test_ids: Sequence[str] | None) -> TestRun:
    nonce = secrets.token_hex(16)
    result_path = channel / "result.json"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace),
        "TMPDIR": str(workspace / ".tmp"),
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        # Installed pytest plugins (hypothesis, xdist, ...) are neither needed nor trusted here,
        # and loading them costs ~5x the start-up of pytest itself.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PAPPO_RESULT_PATH": str(result_path),
        "PAPPO_TEST_TIMEOUT": str(limits.test_timeout_s),
    }
    log_path = channel / "log.txt"
    start = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            _command(workspace, channel, limits),
            cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            proc.communicate(input=(nonce + "\n").encode(), timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc)
    duration = time.monotonic() - start
    log_tail = log_path.read_bytes()[-4000:].decode(errors="replace")
    return _collect(result_path, nonce, test_ids, duration, timed_out, log_tail)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the run's whole process group, so no child outlives the run."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _collect(
    result_path: Path,
    nonce: str,
    test_ids: Sequence[str] | None,
    duration: float,
    timed_out: bool,
    log_tail: str,
) -> TestRun:
    requested = {t: "missing" for t in (test_ids or [])}
    if timed_out:
        return TestRun(dict(requested), duration_s=duration, timed_out=True, log_tail=log_tail)
    try:
        data = json.loads(result_path.read_text())
    except (OSError, ValueError) as e:
        return TestRun(dict(requested), duration_s=duration, log_tail=log_tail,
                       infra_error=f"no result from the test run ({type(e).__name__})")  # fmt: skip
    if data.get("nonce") != nonce:
        return TestRun(dict(requested), duration_s=duration, log_tail=log_tail,
                       infra_error="result channel failed its nonce check")  # fmt: skip
    outcomes: dict[str, Outcome] = {**requested, **data["outcomes"]}
    if test_ids:
        outcomes = {t: outcomes[t] for t in test_ids}
    return TestRun(
        outcomes=dict(sorted(outcomes.items())),
        failures=data["failures"],
        collect_errors=data["collect_errors"],
        duration_s=duration,
        log_tail=log_tail,
    )
