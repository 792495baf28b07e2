"""What a run costs the machine: CPU seconds of its process tree and its peak resident memory.

A run's CPU time is spent in this process (the model) and in its descendants (sandbox workers and
the pytest processes they start), which live across runs, so `resource.getrusage` alone misses most
of it: RUSAGE_CHILDREN counts only children already waited for. `tree_cpu_s` therefore reads
/proc (proc(5)): for this process and every live descendant, utime + stime + cutime + cstime, so a
grandchild reaped by a worker is counted in that worker's cutime. The difference of two readings is
the CPU time the tree spent in between (a descendant that exits and is reaped by a process outside
the tree would be missed; none here). Peak memory is this process's VmHWM (proc(5)), reset at the
start of a run by writing 5 to /proc/self/clear_refs (Linux 4.0+), so runs in one process (the
single-seed experiment) each get their own peak. Elsewhere (no /proc) both fall back to
`resource`: this process and its reaped children, and the lifetime peak.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

PROC = Path("/proc")


def _ticks(pid: str) -> int | None:
    """utime + stime + cutime + cstime of one process, in clock ticks; None if it is gone."""
    try:
        stat = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return sum(int(x) for x in fields[11:15])  # proc(5) fields 14-17


def _descendants(root: int) -> list[str]:
    children: dict[str, list[str]] = {}
    for pid in filter(str.isdigit, os.listdir(PROC)):
        try:
            stat = (PROC / pid / "stat").read_text()
        except OSError:
            continue
        parent = stat[stat.rindex(")") + 2 :].split()[1]
        children.setdefault(parent, []).append(pid)
    out, todo = [], [str(root)]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def tree_cpu_s() -> float:
    """CPU seconds used so far by this process, its descendants and the children they reaped."""
    if not (PROC / "self" / "stat").is_file():
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    ticks = sum(t for pid in _descendants(os.getpid()) if (t := _ticks(pid)) is not None)
    return ticks / os.sysconf("SC_CLK_TCK")


def reset_peak_rss() -> None:
    """Start a new peak: VmHWM := current RSS (no-op where /proc/self/clear_refs is absent)."""
    try:
        (PROC / "self" / "clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mib() -> float:
    """This process's peak resident memory since the last reset, MiB."""
    try:
        for line in (PROC / "self" / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
