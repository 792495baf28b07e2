"""Linux namespaces, mounts and privilege drop for the fork server (ctypes over libc).

The worker calls `isolate_worker` once: a private mount namespace in which every mount is
read-only except a fresh tmpfs at /tmp that holds the workspace, only system folders and what the
interpreter needs are in view, plus its own (empty) network,
IPC and UTS namespaces. Without root it first enters a user namespace (`userns`), which gives
the same namespaces to an ordinary account. Per run, the next fork is PID 1 of a fresh PID
namespace, so when that child dies the kernel kills every process it left. Children drop to an
unprivileged uid. Kept import-light: the worker must not pay for pydantic, yaml or torch.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
import sys

from pappo.sandbox import userns

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_MOVE = 0x2000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_STRICTATIME = 0x1000000
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
WORKSPACE = "/tmp/workspace"  # the same path in every run, so code objects can be cached
SCRATCH = ("/tmp", "/dev/shm", "/var/tmp", "/run/lock")
# Covered by an empty read-only tmpfs (needed paths bound back): users' files, and /run, where
# the host's unix sockets (D-Bus, journal, container engines) live.
PRIVATE = ("/home", "/root", "/run", "/mnt", "/media")
# Top-level folders of system software, the only ones left in view (nix, gnu and snap: the
# stores where Nix, Guix and snaps keep the libraries an interpreter links). Every other top-level
# folder (/work, /srv, /opt, /data...) is covered like PRIVATE: the project's task references
# (data/*/repos) and any other copy of them live there, and code under test that could read the
# clean tree would load it in place of a fix (`tests/test_sandbox_view.py`).
SYSTEM = frozenset("bin dev etc gnu lib lib32 lib64 libx32 nix proc sbin snap sys usr var".split())

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class IsolationError(OSError):
    pass


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, arg, 0, 0, 0), "prctl")


def unavailable() -> str | None:
    """Why namespace isolation cannot work here (None when it can), probed in a throwaway child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if os.geteuid() != 0:
                userns.enter_as_root()
            unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k")
            os._exit(0)
        except BaseException as e:
            os.write(w, str(e).encode()[:500])
            os._exit(1)
    os.close(w)
    reason = os.read(r, 600).decode(errors="replace")
    os.close(r)
    return None if os.waitpid(pid, 0)[1] == 0 else reason or "unshare failed"


def isolate_worker() -> list[str]:
    """Enter private namespaces and build the worker's filesystem view; returns notes to log."""
    needed, notes = _needed_paths(), []
    private = _private_dirs(needed)  # resolved before the mounts hide anything
    if os.geteuid() != 0:
        notes.append(userns.enter_as_root())
        _become_pid1()
    unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for folder in (*SCRATCH, *private):  # world-writable or private places: an empty tmpfs
        if os.path.isdir(folder) and not os.path.islink(folder):
            size = "512m" if folder == "/tmp" else "1m"
            notes += _cover(folder, size, [p for p in needed if p.startswith(folder + "/")])
    for closed, paths in _closed_groups(needed).items():
        notes += _cover(closed, "1m", paths)
    os.mkdir(WORKSPACE)
    notes += _remount_read_only(keep="/tmp")  # the workspace's tmpfs, and nothing else, stays writable
    return notes


def _become_pid1() -> None:
    """Continue as PID 1 of a PID namespace owned by our user namespace; the caller only waits.

    A run's PID namespace is made by `unshare(CLONE_NEWPID)` before each fork, and the worker
    then returns to its own with `setns`, which needs privilege over the namespace it returns
    to: without root, that must be one our user namespace owns. The caller stays the process the
    pool knows: it holds no pipe of the pool, exits with us, and takes us with it if killed.
    """
    unshare(CLONE_NEWPID)
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        prctl(PR_SET_PDEATHSIG, 9)
        os.close(alive_w)
        os.set_blocking(alive_r, False)
        try:
            if os.read(alive_r, 1) == b"":  # the caller died before PDEATHSIG was set
                os._exit(1)
        except BlockingIOError:
            pass
        os.close(alive_r)
        return
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in (2, alive_w, devnull):
            try:
                os.dup2(devnull, fd) if fd < 2 else os.close(fd)
            except OSError:
                pass
    status = os.waitpid(pid, 0)[1]
    os._exit(os.waitstatus_to_exitcode(status) % 256)


def _private_dirs(needed: list[str]) -> list[str]:
    """PRIVATE, the caller's home wherever it is and every top-level folder not in SYSTEM:
    outermost first, none inside a needed path."""
    homes = (os.path.expanduser("~"), os.environ.get("HOME", ""))
    tops = ["/" + n for n in os.listdir("/") if n not in SYSTEM]
    tops = [p for p in tops if os.path.isdir(p) and not os.path.islink(p)]  # a link's target is judged itself
    paths = (*PRIVATE, *homes, *tops)
    found = {os.path.realpath(p) for p in paths if p and os.path.isabs(p)} - {"/", *SCRATCH}
    found = {p for p in found if not any(p == n or p.startswith(n + "/") for n in needed)}
    return sorted(p for p in found if not any(p.startswith(q + "/") for q in found))


def protect_workspace(workspace: str, writable: list[str]) -> None:
    """In a run's own mount namespace: /tmp read-only but for the `writable` workspace folders.

    Without root the run has the worker's host uid, so file modes cannot keep it from the
    workspace root, its tests or the worker's files; read-only mounts can, once the run has
    left the namespace that owns them (`userns.leave_worker_namespace`).
    """
    for name in writable:
        path = os.path.join(workspace, name)
        mount(path, path, None, MS_BIND)
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    mount(None, "/tmp", None, flags | _atime_flags(dict(_mount_points())["/tmp"]))


def _atime_flags(options: str) -> int:
    """The mount's atime mode: a remount from a user namespace must keep it (the kernel locks it)."""
    opts = options.split(",")
    if "noatime" in opts:
        flags = MS_NOATIME
    elif "relatime" in opts:
        flags = 0  # the kernel's default when no atime flag is given
    else:
        flags = MS_STRICTATIME
    return flags | (MS_NODIRATIME if "nodiratime" in opts else 0)


def _mount_points() -> list[tuple[str, str]]:
    """(mount point, per-mount options) from /proc/self/mountinfo, outermost first."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # \040 for spaces and friends
            out.append((point, fields[5]))
    return out


def _remount_read_only(keep: str) -> list[str]:
    flag_of = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}
    failed = []
    for point, options in _mount_points():
        if point == keep or "ro" in options.split(","):  # mounts below `keep` are made read-only too
            continue
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | _atime_flags(options)
        for opt in options.split(","):
            flags |= flag_of.get(opt, 0)
        try:
            mount(None, point, None, flags)
        except IsolationError as e:
            if point == "/":
                raise
            if e.errno != errno.ENOENT:  # a mount point gone under a cover needs nothing
                failed.append(f"{point}: {e.strerror}")
    return [f"could not make read-only: {', '.join(failed)}"] if failed else []


def _needed_paths() -> list[str]:
    """Directories the worker and its children must read: the interpreter, stdlib and sys.path."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths |= {p for p in sys.path if p and os.path.isdir(p)}
    real = sorted({os.path.realpath(p) for p in paths} - {"/", *SCRATCH})
    return [p for p in real if not any(p.startswith(q + "/") for q in real if q != p)]


def _closed_ancestor(path: str) -> str | None:
    """The outermost directory on `path` that others may not traverse (e.g. a 0700 /root)."""
    current = "/"
    for part in path.strip("/").split("/"):
        if not (os.stat(current).st_mode & stat.S_IXOTH):
            return current
        current = os.path.join(current, part)
    return None


def _closed_groups(paths: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for path in paths:
        closed = _closed_ancestor(path)
        if closed is not None:
            groups.setdefault(closed, []).append(path)
    return groups


def _cover(folder: str, size: str, keep: list[str]) -> list[str]:
    """Cover `folder` with a fresh 0755 tmpfs, binding the `keep` subtrees back in place.

    Used for world-writable places (so nothing of the host is writable there, nor shadows a
    virtual environment that lives in /tmp) and for directories others cannot enter
    (permissions are per inode and cannot be widened without touching the host).
    """
    fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in keep]  # before the tmpfs hides them
    mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=0755")
    for path, fd in zip(keep, fds):
        os.makedirs(path, mode=0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    return [f"kept {', '.join(keep)} visible under {folder}"] if keep else []


def drop_privileges(uid: int) -> None:
    """Become `uid` (no supplementary groups, no capabilities, no way back)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def chown_tree(root: str, uid: int) -> None:
    os.lchown(root, uid, uid)
    if not os.path.isdir(root) or os.path.islink(root):
        return
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(base, name), uid, uid)
