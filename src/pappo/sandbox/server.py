"""The warm fork server: one long-lived worker that forks a sandboxed child per test run.

Run as `python -B -m pappo.sandbox.server <isolation> <uid>` by `pool.SandboxPool`; requests and
replies are length-prefixed JSON on stdin/stdout. At start the worker imports pytest, builds the
pytest config and session once, enters its namespaces (`isolation.isolate_worker`), forks its
forker (`forker.py`: children come from a process that never held a run's data) and says hello.
Between runs the forker forks the next child (PID 1 of a fresh PID namespace), which isolates
itself, drops privileges, sets its limits and waits. Per run the worker writes the files into
its workspace and sends that child the run's key; the child runs collection and the tests from
the prepared session. Outcomes come back over an HMAC-authenticated pipe (`pytest_plugin`).
Rewritten trusted test modules are cached in the forker (keyed by path and content): assertion
rewriting is the largest single cost of a run, and trusted tests are the same every time. After
pytest's assertion rewriting, `typed.instrument` makes each assert's `==`/`!=` record its
operands' exact types. docs/sandbox.md has the threat model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import signal
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _pytest.assertion.rewrite as _rewrite
import _pytest.config
import _pytest.main
import _pytest.python
import pytest  # pre-imported on purpose: children must not pay for it

from pappo.io import write_tree
from pappo.sandbox import channel, child, forker, isolation, pytest_plugin, rewrite_cache, seccomp

for _name in _pytest.config.default_plugins:  # import every builtin plugin once, pre-fork
    try:
        __import__(f"_pytest.{_name}")
    except ImportError:
        pass
# Standard-library modules small packages commonly import; pre-importing saves each child the cost.
_PRELOADED = (
    "dataclasses math fractions decimal datetime collections re heapq bisect typing enum functools "
    "itertools string textwrap difflib csv io statistics configparser operator copy"
)
for _name in _PRELOADED.split():
    __import__(_name)

_TRUSTED_INI = "[pytest]\naddopts =\ntestpaths = tests\npython_files = test_*.py\n"
# pytest's built-in plugins a run does without (output, caches, reports, warnings capture).
_DISABLED = (
    "cacheprovider terminal faulthandler pastebin junitxml doctest stepwise logging warnings "
    "threadexception unraisableexception setuponly setupplan legacypath"
)
_PYTEST_ARGS = [
    "--noconftest",
    "--capture=no",
    "--continue-on-collection-errors",
    *(arg for name in _DISABLED.split() for arg in ("-p", f"no:{name}")),
    "tests",
]


class Worker:
    """One fork server: its isolation, its workspace, the prepared pytest session, the spare child."""

    def __init__(self, mode: str, uid: int, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.notes: list[str] = []
        self.rootless = False  # namespaces entered from an ordinary account (userns.enter_as_root)
        self.isolation, self.uid = self._isolate(mode, uid)
        if not seccomp.enabled:
            self.notes.append(
                f"no seccomp filter for {os.uname().machine}: runs cannot be kept from unix "
                "sockets that their mount view shows"
            )
        self.base = "/tmp" if self.isolation == "namespaces" else tempfile.mkdtemp(prefix="pappo-worker-")
        self.workspace = isolation.WORKSPACE if self.isolation == "namespaces" else f"{self.base}/workspace"
        os.makedirs(self.workspace, exist_ok=True)
        self.pidns = os.open("/proc/self/ns/pid", os.O_RDONLY) if self.isolation == "namespaces" else -1
        self._pending: int | None = None
        self._spare: forker.Spare | None = None
        # Hidden-check specs by digest (`pool._spec_ref`): sent once; children forked later inherit
        # them from the forker, which keeps the same (`forker.remember`).
        self.specs: dict[str, dict[str, Any]] = {}
        self.config, self.session = self._prepare_pytest()
        self.forker = forker.Forker(self)  # before any request: its memory never holds a run's data

    def _isolate(self, mode: str, uid: int) -> tuple[str, int | None]:
        if mode == "rlimits":
            self.notes.append(
                "isolation=rlimits by configuration: network and writes outside the "
                "workspace are NOT contained"
            )
            return "rlimits", None
        # `auto` and `namespaces` fail closed: an error here stops the pool (pool._fail_closed).
        self.rootless = os.geteuid() != 0
        self.notes += isolation.isolate_worker()
        if not self.rootless and not child.can_drop_to(uid):
            self.notes.append(
                f"uid {uid} cannot read the interpreter; children keep uid 0 inside read-only mounts"
            )
            return "namespaces", None
        return "namespaces", uid

    def _prepare_pytest(self) -> tuple[pytest.Config, pytest.Session]:
        ini = os.path.join(self.base if self.isolation != "namespaces" else "/tmp", "trusted.ini")
        with open(ini, "w") as f:
            f.write(_TRUSTED_INI)
        os.chdir(self.workspace)
        args = ["-c", ini, "--rootdir", self.workspace, *_PYTEST_ARGS]
        config = _pytest.config._prepareconfig(args, plugins=[pytest_plugin])
        config._do_configure()
        session = _pytest.main.Session.from_config(config)
        config.hook.pytest_sessionstart(session=session)
        _rewrite._rewrite_test = rewrite_cache.cached_rewrite
        _pytest.python.Function.repr_failure = rewrite_cache.brief_failure
        return config, session

    def serve(self) -> None:
        self._send(
            {
                "hello": True,
                "isolation": self.isolation,
                "uid": self.uid,
                "notes": self.notes,
                "base": self.base,
                "pid": os.getpid(),
            }
        )
        while (request := self._receive()) is not None:
            try:
                reply = self._handle(request)
            except Exception as e:  # a worker fault, not the policy's: reported as infra_error
                reply = {"infra_error": f"worker: {type(e).__name__}: {e}"}
            self._send(reply)
            self._finish(request.get("limits"))

    def _receive(self) -> dict[str, Any] | None:
        head = channel.read_exact(self.rfd, 4)
        if head is None:
            return None
        body = channel.read_exact(self.rfd, struct.unpack(">I", head)[0])
        return None if body is None else json.loads(body)

    def _send(self, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        channel.write_all(self.wfd, struct.pack(">I", len(data)) + data)

    def _handle(self, req: dict[str, Any]) -> dict[str, Any]:
        ref = req.get("hidden_ref")
        if req.get("hidden") is not None:
            forker.remember(self.specs, ref, req["hidden"])
            self.forker.send({"spec": [ref, req["hidden"]]})
        elif ref is not None and ref not in self.specs:
            return {"unknown_hidden_ref": ref}
        files = {p: base64.b64decode(d) for p, d in req["files"].items()}
        trusted = self._materialise(files)
        # Trusted test files are the same for every grade of a family and shown to the agent: the
        # forker rewrites them, so children forked later find them ready.
        tests = {p: req["files"][p] for p in trusted if p.rsplit("/", 1)[-1].startswith("test_")}
        self.forker.send({"rewrite": tests})
        return self._run(req, trusted)

    def _finish(self, limits: dict[str, Any] | None) -> None:
        """After the reply: reap the killed child, empty the workspace, fork the next child."""
        if self._pending is not None:
            self.forker.reap(self._pending)
            self._pending = None
        child.clear(self.workspace)
        if limits is not None and self._spare is None:
            self._spare = self.forker.spawn(limits, frozenset(self.specs))

    def _materialise(self, files: dict[str, bytes]) -> dict[str, str]:
        """Write the tree; tests stay root-owned and read-only, the rest belongs to the child."""
        child.clear(self.workspace)
        root = Path(self.workspace)
        write_tree(root, files)
        os.mkdir(root / ".tmp")
        if (
            self.uid is not None and not self.rootless
        ):  # the root and tests/ stay root's: tests cannot be moved or edited
            for entry in root.iterdir():
                if entry.name != "tests":
                    isolation.chown_tree(str(entry), self.uid)
        return {p: hashlib.sha256(d).hexdigest() for p, d in files.items() if p.startswith("tests/")}

    def _run(self, req: dict[str, Any], trusted: dict[str, str]) -> dict[str, Any]:
        spare = self._take_spare(req["limits"])
        key = secrets.token_bytes(32)
        start = time.monotonic()
        ref = req.get("hidden_ref")
        hidden = None if ref is None or ref in spare.specs else self.specs[ref]  # else the child has it
        go = json.dumps(
            {
                "key": key.hex(),
                "test_timeout": float(req["limits"]["test_timeout_s"]),
                "trusted": trusted,
                "hidden": hidden,
                "hidden_ref": ref,
                "trace": req.get("trace"),
            }
        ).encode()
        try:
            channel.write_all(spare.go, go)
        except OSError:
            pass  # it died during setup: no `ready` record, reported as infra_error
        os.close(spare.go)
        deadline = start + float(req["limits"]["timeout_s"])
        data, timed_out, status, hangup = channel.wait_run(
            spare.pid, spare.chan, self.rfd, deadline, self.forker.reap
        )
        if self.isolation != "namespaces":
            child.killpg(spare.pid)  # the child's own process group (a PID namespace needs no such step)
        self._pending = spare.pid if status is None else None
        os.close(spare.chan)
        os.lseek(spare.log, 0, os.SEEK_SET)
        log_tail = os.read(spare.log, 1 << 20)[-4000:].decode(errors="replace")
        os.close(spare.log)
        if hangup:
            sys.exit(0)  # the pool went away: no one to answer
        # The records go to the pool as they came; it checks them (`channel.parse_records`), which
        # saves this worker a parse and a re-encoding of the large hidden-check answers.
        reply = {"records": base64.b64encode(data).decode(), "key": key.hex()}
        reply.update(
            timed_out=timed_out,
            exit_status="killed" if status is None else status,
            duration_s=time.monotonic() - start,
            log_tail=log_tail,
            isolation=self.isolation,
        )
        return reply

    def _take_spare(self, limits: dict[str, Any]) -> forker.Spare:
        """The child forked and set up ahead of time (`forker.spawn`), for these limits."""
        spare, self._spare = self._spare, None
        if spare is not None and spare.limits != limits:
            os.kill(spare.pid, signal.SIGKILL)
            self.forker.reap(spare.pid)
            for fd in (spare.go, spare.chan, spare.log):
                os.close(fd)
            spare = None
        return spare if spare is not None else self.forker.spawn(limits, frozenset(self.specs))


def main() -> None:
    mode, uid = sys.argv[1], int(sys.argv[2])
    rfd, wfd = os.dup(0), os.dup(1)  # the protocol; fds 0 and 1 then point elsewhere
    os.dup2(os.open(os.devnull, os.O_RDWR), 0)
    os.dup2(2, 1)
    try:
        worker = Worker(mode, uid, rfd, wfd)
    except Exception as e:
        data = json.dumps({"hello": False, "error": f"{type(e).__name__}: {e}"}).encode()
        channel.write_all(wfd, struct.pack(">I", len(data)) + data)
        sys.exit(1)
    try:
        worker.serve()
    finally:
        if worker.isolation != "namespaces":
            shutil.rmtree(worker.base, ignore_errors=True)


if __name__ == "__main__":
    main()
