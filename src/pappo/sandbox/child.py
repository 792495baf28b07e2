"""Process steps around a sandboxed child: its limits, its view of the workspace, its cleanup.

The child sets its resource limits and enters the workspace in `forker._child`; the worker
probes whether a uid can still run the interpreter, empties the workspace between runs and, without
a PID namespace, kills the child's process group. docs/sandbox.md has the threat model.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sys
import tempfile
from typing import Any

from pappo.sandbox import isolation


def writable(ws: str) -> list[str]:
    """What a run may write: the workspace's folders but tests/ (its root and files stay read-only)."""
    return [e.name for e in os.scandir(ws) if e.is_dir(follow_symlinks=False) and e.name != "tests"]


def enter_workspace(ws: str) -> None:
    os.chdir(ws)
    sys.path.insert(0, ws)
    os.environ.update(HOME=ws, TMPDIR=f"{ws}/.tmp")
    tempfile.tempdir = None
    sys.dont_write_bytecode = True


def set_limits(limits: dict[str, Any]) -> None:
    mb = 1024 * 1024
    for kind, value in (
        (resource.RLIMIT_CPU, int(limits["cpu_s"])),
        (resource.RLIMIT_AS, int(limits["memory_mb"]) * mb),
        (resource.RLIMIT_FSIZE, int(limits["max_file_mb"]) * mb),
        (resource.RLIMIT_NPROC, int(limits["max_procs"])),
        (resource.RLIMIT_CORE, 0),
    ):
        soft, hard = resource.getrlimit(kind)
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (new, new))


def can_drop_to(uid: int) -> bool:
    """Probe, in a throwaway child, that `uid` can still import from the standard library."""
    pid = os.fork()
    if pid == 0:
        try:
            isolation.drop_privileges(uid)
            with open(os.__file__, "rb"):
                pass
            os.listdir(os.path.dirname(os.__file__))
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


def clear(root: str) -> None:
    for entry in os.scandir(root):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)


def killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
