"""Take the copy-on-write cost of a forked child off the run's critical path.

After `fork`, the child shares the forker's pages read-only; the first write to each (CPython
writes on every reference count change) traps and copies it. A run touches a couple of thousand
such pages: about 5 ms of faults, a fifth of a warm run, measured with `ru_minflt` in the child
(docs/sandbox.md). The spare child waits idle for its run anyway, so meanwhile it copies its writable
private memory with `madvise(MADV_POPULATE_WRITE)` (Linux 5.14+), which faults pages in
writable without changing their contents, and stops as soon as its run arrives. Purely an
optimisation: on older kernels, where the call fails, or when runs come back to back, the run
pays the faults left as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import select

MADV_POPULATE_WRITE = 23  # include/uapi/asm-generic/mman-common.h
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.madvise.restype = ctypes.c_int


def writable_private(maps_text: str) -> list[tuple[int, int]]:
    """The (start, end) of each writable private mapping in a /proc/PID/maps text, kernel
    pseudo-mappings ([vvar], [vdso], [vsyscall]) left out."""
    ranges = []
    for line in maps_text.splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[1][1] != "w" or parts[1][3] != "p":
            continue
        if len(parts) > 5 and parts[5] in ("[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]"):
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        ranges.append((start, end))
    return ranges


def populate_writable(until_readable: int, chunk: int = 1 << 20) -> int:
    """Copy this process's writable private pages, a chunk at a time, until the file descriptor
    `until_readable` has data (the run starts: it must not wait for this). Returns bytes done."""
    with open("/proc/self/maps") as f:
        ranges = writable_private(f.read())
    poll = select.poll()
    poll.register(until_readable, select.POLLIN)
    done = 0
    for start, end in ranges:
        for at in range(start, end, chunk):
            if poll.poll(0):
                return done
            size = min(chunk, end - at)
            if _libc.madvise(at, size, MADV_POPULATE_WRITE) != 0:
                break  # unsupported (kernel < 5.14) or not populatable: leave this mapping
            done += size
    return done
