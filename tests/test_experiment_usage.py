"""A run's CPU seconds count its descendants (sandbox workers); its peak memory is its own, per run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pappo.experiment import usage

# the child burns BURN CPU seconds of its own (process_time, so a loaded machine only makes it slower),
# says so, then waits alive until told to exit: its CPU is in no rusage of ours yet
BURN = 0.4
CHILD = f"""
import sys, time
t = time.process_time()
while time.process_time() - t < {BURN}:
    pass
print("burnt", flush=True)
sys.stdin.readline()
"""


def test_cpu_seconds_count_a_live_child_and_a_reaped_one():
    before, own = usage.tree_cpu_s(), time.process_time()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"burnt"
        live = usage.tree_cpu_s() - before
        assert time.process_time() - own < BURN / 2  # our own clock did not see the child's work
        assert live >= BURN * 0.9, live  # a reading of the tree did
    finally:
        child.communicate(b"\n")
    reaped = usage.tree_cpu_s() - before
    assert reaped >= live * 0.99, (live, reaped)  # reaped: in our cutime now, not lost


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="no /proc/self/clear_refs here")
def test_peak_memory_is_reset_per_run():
    usage.reset_peak_rss()
    base = usage.peak_rss_mib()
    block = bytearray(256 * 1024 * 1024)  # 256 MiB, touched (zeroed) on allocation
    block[::4096] = b"\1" * len(block[::4096])
    del block
    high = usage.peak_rss_mib()
    assert high >= base + 200, (base, high)
    usage.reset_peak_rss()  # the next run starts its own peak
    assert usage.peak_rss_mib() < high - 200
