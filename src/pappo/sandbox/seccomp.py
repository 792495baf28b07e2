"""A seccomp filter for a run: no unix-domain sockets, no io_uring (ctypes; classic BPF).

The network namespace leaves a run no route to the host's TCP/UDP ports or abstract sockets,
and its mount view hides /tmp, /run and homes, where named sockets usually live. A socket file
elsewhere (a service's socket under /var/lib, /opt...) stays visible, read-only mounts do not
stop `connect` on it, and a mode-0666 socket admits anyone. Refusing `socket(AF_UNIX, ...)`
closes that route wherever the socket lives; io_uring is refused because it can create sockets
without the `socket` system call. A small library's tests need neither. Kept import-light.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform

# machine -> (AUDIT_ARCH_*, __NR_socket); io_uring_setup is 425 on both (the unified table).
_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
_NR_IO_URING_SETUP = 425
_X32_BIT = 0x40000000  # x86_64's x32 ABI: the same calls under other numbers
AF_UNIX = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_LD_W_ABS, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06
_ALLOW, _ERRNO, _KILL = 0x7FFF0000, 0x00050000, 0x80000000


class _Insn(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Insn))]


_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


enabled = platform.machine() in _ARCH


def _program() -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k): jumps count from the next instruction. Another ABI is killed outright."""
    arch, nr_socket = _ARCH[platform.machine()]
    refuse = _ERRNO | errno.EACCES
    return [
        (_LD_W_ABS, 0, 0, 4),  # 0: seccomp_data.arch
        (_JEQ_K, 0, 8, arch),  # 1: another ABI (e.g. i386 socketcall) -> 10
        (_LD_W_ABS, 0, 0, 0),  # 2: seccomp_data.nr
        (_JSET_K, 5, 0, _X32_BIT),  # 3: x32 -> 9
        (_JEQ_K, 4, 0, _NR_IO_URING_SETUP),  # 4: -> 9
        (_JEQ_K, 0, 2, nr_socket),  # 5: not socket -> 8
        (_LD_W_ABS, 0, 0, 16),  # 6: args[0], low half: the address family
        (_JEQ_K, 1, 0, AF_UNIX),  # 7: -> 9
        (_RET_K, 0, 0, _ALLOW),  # 8
        (_RET_K, 0, 0, refuse),  # 9
        (_RET_K, 0, 0, _KILL),  # 10
    ]


def install() -> None:
    """Apply the filter to this process and every process it starts (irrevocable)."""
    insns = _program()
    table = (_Insn * len(insns))(*[_Insn(*i) for i in insns])
    prog = _Prog(len(insns), table)
    for option, arg in ((PR_SET_NO_NEW_PRIVS, 1), (PR_SET_SECCOMP, SECCOMP_MODE_FILTER)):
        ptr = ctypes.cast(ctypes.byref(prog), ctypes.c_void_p) if option == PR_SET_SECCOMP else None
        ret = _libc.prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg),
            ptr if ptr is not None else ctypes.c_ulong(0),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
        if ret != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"installing the seccomp filter (prctl {option}): {os.strerror(err)}")
