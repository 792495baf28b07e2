"""User namespaces: how an ordinary account gets the same sandbox as root (ctypes over libc).

A worker started without root first enters a user namespace that maps its own uid to 0
(`enter_as_root`); as root of that namespace it may create the mount, network, IPC, UTS and PID
namespaces that `isolation` builds, with no privilege on the host. Such a namespace maps one id
only (more would need setuid `newuidmap` and /etc/subuid entries, which ordinary machines do not
grant), so a run's child cannot become another host uid. It leaves the worker's privilege instead
(`leave_worker_namespace`): it enters a nested user namespace as an unprivileged id and drops
every capability. The worker's namespaces belong to the outer user namespace, so the child can
neither unmount nor remount anything there (its read-only views of the workspace and of /tmp
hold), and a namespace it creates itself copies those mounts locked. docs/sandbox.md has the
threat model. Kept import-light, like the worker.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

CLONE_NEWUSER = 0x10000000
_CAP_VERSION_3 = 0x20080522
PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.unshare.argtypes = [ctypes.c_int]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class UserNamespaceError(OSError):
    pass


def _unshare_user() -> None:
    if _libc.unshare(CLONE_NEWUSER) != 0:
        err = ctypes.get_errno()
        why = os.strerror(err)
        if err in (1, 28, 22):  # EPERM, ENOSPC (max_user_namespaces=0), EINVAL (threads)
            why += " (unprivileged user namespaces are disabled or exhausted here)"
        raise UserNamespaceError(err, f"unshare(CLONE_NEWUSER): {why}")


def _write_maps(inner: int, outer_uid: int, outer_gid: int) -> None:
    """Map one id; `setgroups` must be denied first, or an unprivileged gid_map is refused."""
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{inner} {outer_uid} 1"),
        ("gid_map", f"{inner} {outer_gid} 1"),
    ):
        try:
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        except OSError as e:
            raise UserNamespaceError(
                e.errno or 1, f"writing /proc/self/{name} ({text!r}): {e.strerror}"
            ) from e


def enter_as_root() -> str:
    """Enter a new user namespace in which this process's uid and gid are 0; returns a note."""
    uid, gid = os.geteuid(), os.getegid()
    _unshare_user()
    _write_maps(0, uid, gid)
    return f"rootless: a user namespace maps host uid {uid} to root inside; no host privilege is used"


def leave_worker_namespace(uid: int) -> None:
    """Become `uid` in a nested user namespace with no capabilities and no way to gain any.

    Called by a run's child after its mounts are set: from here on it holds no capability in
    the namespaces the worker owns.
    """
    _unshare_user()
    _write_maps(uid, 0, 0)  # the outer ids are the worker's (0 there)
    drop_capabilities()


def drop_capabilities() -> None:
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()  # all zero: effective, permitted and inheritable sets emptied
    if _libc.capset(ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise UserNamespaceError(err, f"capset: {os.strerror(err)}")
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise UserNamespaceError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
