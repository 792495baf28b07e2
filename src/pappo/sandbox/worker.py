"""Runner side of one sandbox worker: the fork-server process (`server.py`), its pipes and its start.

A worker is started without torch, with an environment of its own (`worker_env`); one that dies
before its hello says why, with its own stderr (`start_failure_message`), and one that cannot
isolate fails closed (`fail_closed_message`). `pool.py` spreads runs over several.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pappo.config.data import SandboxParams
from pappo.io import PappoError

_UIDS = itertools.count()  # each worker gets its own unprivileged uid: RLIMIT_NPROC is per uid
_UID_BASE = 61000
STDERR_TAIL = 4000  # characters of a worker's stderr kept for the error message of a failed start


def worker_env() -> dict[str, str]:
    """The worker's whole environment: this checkout's src on PYTHONPATH, nothing else inherited
    but PATH and HOME (packages must be installed in the interpreter, not only on PYTHONPATH)."""
    src = str(Path(__file__).resolve().parents[2])
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONPATH": src,
        "HOME": os.path.expanduser("~"),  # the worker hides it from runs wherever it is
        # Installed plugins (hypothesis, xdist...) are neither needed nor trusted in a run.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


class _StderrTail:
    """Drains a worker's stderr on a thread: passes it on to ours (as when it was inherited) and
    keeps its tail, so a worker that dies before its hello can say why (e.g. an ImportError)."""

    def __init__(self, stream: Any) -> None:
        self.tail = b""
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream: Any) -> None:
        for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
            self.tail = (self.tail + chunk)[-STDERR_TAIL:]
            try:
                os.write(2, chunk)
            except OSError:
                pass
        stream.close()

    def text(self, wait_s: float = 5.0) -> str:
        self.thread.join(wait_s)  # the process is gone: its stderr reaches EOF
        return self.tail.decode(errors="replace").strip()


class Worker:
    """One server process and its pipes."""

    def __init__(self, limits: SandboxParams) -> None:
        uid = _UID_BASE + next(_UIDS) % 4000
        self.proc = subprocess.Popen(
            [sys.executable, "-B", "-m", "pappo.sandbox.server", limits.isolation, str(uid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=worker_env(),
            cwd="/",
        )
        self.stderr = _StderrTail(self.proc.stderr)
        hello = self.receive(deadline=time.monotonic() + 120)
        if not hello or not hello.get("hello"):
            self.kill()
            why = (hello or {}).get("error", "no answer")
            if limits.isolation != "rlimits" and hello is not None:  # could not isolate: fail closed
                raise PappoError(fail_closed_message(why))
            raise PappoError(start_failure_message(why, self.stderr.text()))
        self.specs_sent: set[str] = set()  # hidden-check specs this worker holds (`_spec_ref`)
        self.isolation: str = hello["isolation"]
        self.base: str = hello["base"]
        self.notes: list[str] = hello["notes"]

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        data = json.dumps(payload).encode()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(struct.pack(">I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        return self.receive(deadline=time.monotonic() + timeout)

    def receive(self, deadline: float) -> dict[str, Any] | None:
        head = self._read(4, deadline)
        body = self._read(struct.unpack(">I", head)[0], deadline) if head else None
        return json.loads(body) if body else None

    def _read(self, n: int, deadline: float) -> bytes | None:
        assert self.proc.stdout is not None
        fd, buf = self.proc.stdout.fileno(), bytearray()
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close() if stream else None
            except OSError:
                pass
        # In rlimits mode the workspace lives on the host; a killed worker cannot remove it.
        if getattr(self, "isolation", "") == "rlimits" and self.base.startswith("/tmp/pappo-worker-"):
            shutil.rmtree(self.base, ignore_errors=True)

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()  # EOF: the worker finishes and removes its workspace
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


def start_failure_message(why: str, stderr: str) -> str:
    """A worker that did not start: its answer and, above all, its own stderr (the traceback)."""
    msg = f"sandbox worker did not start: {why}"
    if stderr:
        msg += f"; its stderr ends:\n{stderr}"
    if "ModuleNotFoundError" in stderr or "ImportError" in stderr:
        msg += (
            f"\nThe worker runs {sys.executable} with only this checkout's src on PYTHONPATH: install "
            "the packages into that interpreter (e.g. pip install -r requirements.lock), not only on "
            "PYTHONPATH."
        )
    return msg


def fail_closed_message(why: str) -> str:
    """Why no run is contained here, and the two ways forward (the error `auto` stops with)."""
    return (
        f"the sandbox cannot contain untrusted code on this machine ({why}); nothing was run. "
        "Allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Ubuntu 23.10+ "
        "also kernel.apparmor_restrict_unprivileged_userns=0; in a container, a seccomp profile "
        "that permits unshare) or run as root. To run without containment of network, files and "
        "daemons instead, set `sandbox.isolation: rlimits` in params.yaml (the manifest lock and "
        "every grade record it)."
    )
