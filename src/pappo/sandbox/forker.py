"""The forker: the process every sandboxed child is forked from, which never holds a run's data.

A forked child inherits its parent's whole address space, freed memory included. The worker reads
each request (a candidate tree, or the clean reference tree whose answers the hidden checks are
compared with) and each run's records (those answers among them); when it also forked the next
child, that child could read them back from its own memory (ctypes, or /proc/self/mem where a
run keeps the worker's uid) and run the reference in place of a fix. So the worker forks this
process once, before its first request (pytest prepared, namespaces entered), and asks it for
each child. The forker is sent only what is the same for every run and public to the agent:
limits, trusted test files to rewrite into its cache, hidden-check specs (inputs, never answers).
The run's files, key, records and log stay in the worker; the forker hands it the child's pipes
(`socket.send_fds`) and reaps the child when asked.
"""

from __future__ import annotations

import base64
import gc
import json
import os
import signal
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import _pytest.main
import pytest

from pappo.sandbox import (
    channel,
    child,
    guard,
    isolation,
    prefault,
    pytest_plugin,
    rewrite_cache,
    seccomp,
    userns,
)

if TYPE_CHECKING:
    from pappo.sandbox.server import Worker

MAX_SPECS = 64  # hidden-check specs a worker and its forker keep, the oldest dropped first


@dataclass
class Spare:
    pid: int
    go: int  # write end: the run's key and trusted test hashes
    chan: int  # read end of the result channel
    log: int  # the child's stdout/stderr
    limits: dict[str, Any]
    specs: frozenset[str]  # hidden-check specs it inherited from the forker


def remember(specs: dict[str, Any], ref: str, spec: Any) -> None:
    """Keep `spec` under `ref`; the worker and its forker apply the same rule, so hold the same."""
    if ref not in specs and len(specs) >= MAX_SPECS:
        del specs[next(iter(specs))]
    specs[ref] = spec


class Forker:
    """The worker's end: commands down a pipe, answers (with the child's pipes) up a socket."""

    def __init__(self, worker: Worker) -> None:
        cmd_r, self.cmd = os.pipe()
        self.answers, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            self.answers.close()
            os.close(self.cmd)
            _serve(worker, cmd_r, theirs)
        os.close(cmd_r)
        theirs.close()

    def send(self, command: dict[str, Any]) -> None:
        data = json.dumps(command).encode()
        channel.write_all(self.cmd, struct.pack(">I", len(data)) + data)

    def spawn(self, limits: dict[str, Any], specs: frozenset[str]) -> Spare:
        self.send({"spawn": limits})
        msg, fds, _, _ = socket.recv_fds(self.answers, 4096, 3)
        if len(fds) != 3:
            raise RuntimeError(f"the forker did not fork a child: {msg.decode(errors='replace')}")
        return Spare(json.loads(msg)["pid"], *fds, limits, specs)

    def reap(self, pid: int) -> int:
        """The child's wait status (it must be dead or dying: the forker blocks until it is)."""
        self.send({"reap": pid})
        return int(json.loads(self.answers.recv(4096))["status"])


def _serve(worker: Worker, cmd: int, answers: socket.socket) -> NoReturn:
    """The forker's loop; it ends when the worker closes the command pipe or dies."""
    try:
        isolation.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL)
        for fd in (worker.rfd, worker.wfd):  # the pool's protocol is the worker's, never read here
            os.close(fd)
        while (head := channel.read_exact(cmd, 4)) is not None:
            body = channel.read_exact(cmd, struct.unpack(">I", head)[0])
            if body is None:
                break
            _obey(worker, json.loads(body), answers)
    except BaseException as e:
        os.write(2, f"sandbox forker failed: {type(e).__name__}: {e}\n".encode())
        os._exit(1)
    os._exit(0)


def _obey(worker: Worker, command: dict[str, Any], answers: socket.socket) -> None:
    if "spawn" in command:
        spare = spawn(worker, command["spawn"])
        socket.send_fds(answers, [json.dumps({"pid": spare.pid}).encode()], [spare.go, spare.chan, spare.log])
        for fd in (spare.go, spare.chan, spare.log):
            os.close(fd)
    elif "reap" in command:
        answers.send(json.dumps({"status": os.waitpid(command["reap"], 0)[1]}).encode())
    elif "spec" in command:
        remember(worker.specs, *command["spec"])
    elif "rewrite" in command:  # trusted test files: children forked later find them rewritten
        for rel, data in command["rewrite"].items():
            try:
                rewrite_cache.prime(Path(worker.workspace, rel), base64.b64decode(data), worker.config)
            except Exception:  # the child's collection reports it; the forker must outlive any file
                pass


def spawn(worker: Worker, limits: dict[str, Any]) -> Spare:
    """Fork the next child and let it isolate itself; it then waits for its run's `go`.

    Forking and setting up between requests takes that time off every run's latency.
    """
    chan_r, chan_w = os.pipe()
    go_r, go_w = os.pipe()
    log_fd = os.open(os.path.join(worker.base, "run.log"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    gc.freeze()  # children share the forker's objects without the gc touching their pages
    max_fd = max(int(name) for name in os.listdir("/proc/self/fd"))
    if worker.pidns >= 0:
        isolation.unshare(isolation.CLONE_NEWPID)
    pid = os.fork()
    if pid == 0:
        _child(worker, (chan_w, go_r, log_fd), limits, max_fd)
    if worker.pidns >= 0:
        isolation.setns(worker.pidns, isolation.CLONE_NEWPID)  # later forks: our own namespace
    os.close(chan_w)
    os.close(go_r)
    return Spare(pid, go_w, chan_r, log_fd, limits, frozenset(worker.specs))


def _child(worker: Worker, fds: tuple[int, int, int], limits: dict[str, Any], max_fd: int) -> NoReturn:
    chan_w, go_r, log_fd = fds
    try:
        isolation.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL)
        for fd, target in ((log_fd, 1), (log_fd, 2), (chan_w, 3), (go_r, 4)):
            os.dup2(fd, target)
        os.closerange(5, max_fd + 1)  # the forker's pipes and everything else
        if worker.isolation == "namespaces":
            isolation.unshare(isolation.CLONE_NEWNS)
            isolation.mount(
                "proc", "/proc", "proc", isolation.MS_NOSUID | isolation.MS_NODEV | isolation.MS_NOEXEC
            )
        else:
            os.setpgid(0, 0)
        child.set_limits(limits)
        if seccomp.enabled:  # no unix sockets: the host's named ones stay out of reach
            seccomp.install()
        if worker.uid is not None and not worker.rootless:
            isolation.drop_privileges(worker.uid)
        prefault.populate_writable(until_readable=4)  # copy-on-write faults while idle, not in the run
        go = json.loads(channel.read_all(4))  # blocks until the run starts
        os.close(4)
        if worker.rootless:  # one host uid: read-only mounts, then no capability (userns.py)
            isolation.protect_workspace(worker.workspace, child.writable(worker.workspace))
            userns.leave_worker_namespace(worker.uid if worker.uid is not None else 65534)
        child.enter_workspace(worker.workspace)
        hidden = (
            go["hidden"]
            if go["hidden_ref"] is None or go["hidden"] is not None
            else worker.specs[go["hidden_ref"]]
        )
        worker.specs.clear()  # no other task's check inputs
        pytest_plugin.begin_run(
            3, bytes.fromhex(go["key"]), go["test_timeout"], go["trusted"], hidden, go["trace"]
        )
        guard.install(worker.workspace, pytest_plugin.refused)  # last: nothing of ours writes after it
    except BaseException as e:  # setup failed before any code under test ran: infra_error
        os.write(2, f"sandbox child setup failed: {type(e).__name__}: {e}\n".encode())
        os._exit(70)
    _run_session(worker.config, worker.session)


def _run_session(config: pytest.Config, session: pytest.Session) -> NoReturn:
    status = 0
    try:
        status = int(_pytest.main._main(config, session) or 0)
    except BaseException as e:  # the session ends; missing tests count as failed
        os.write(2, f"session ended by {type(e).__name__}: {e}\n".encode())
        status = 2
    try:
        config.hook.pytest_sessionfinish(session=session, exitstatus=status)
    finally:
        os._exit(0)
