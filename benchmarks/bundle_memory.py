"""A release bundle with one large adapter: released, verified, unpacked and verified again, with
the peak Python heap and the time of each step.

    python benchmarks/bundle_memory.py [--adapter-mib 308]

The repository is test_release.py's tiny one with its run's adapter grown to `--adapter-mib` MiB
of random bytes (incompressible, as float weights nearly are); 308 MiB is one LoRA adapter of the
hub profile (rank 32 on every projection of Qwen2.5-Coder-7B, 80.7M float32 parameters), the
largest entry its bundle holds. Peak heap is tracemalloc's (every Python allocation, the bytes
objects a read makes included), per step; it is the number that grew with the entry when
bundles were read whole. The process's peak resident memory before and after the steps shows the
same from outside Python. Prints one line per step; last line `ratio peak heap/adapter: X.XXX`,
the largest step's peak over the adapter's size (about 1 or more when an entry is held whole).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pappo.evidence.bundle import unpack
from pappo.evidence.bundle_check import verify_bundle
from pappo.evidence.release import build_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test_release.py's repository
from test_release import make_repo


def measured(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """fn's result, its wall seconds and its peak Python heap in MiB."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        out = fn()
        return out, time.perf_counter() - start, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adapter-mib", type=int, default=308)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pappo-bench-bundle-") as tmp:
        repo = make_repo(Path(tmp), adapter_mib=args.adapter_mib)
        size = (repo / "reports/runs/seed_0/pappo/adapters/adapter_model.safetensors").stat().st_size
        print(f"adapter {size / 2**20:.1f} MiB")
        steps = [
            ("release", lambda: build_bundle(repo, Path(tmp) / "dist", repo / "receipts/audit.json").path),
            ("verify zip", lambda: verify_bundle(Path(tmp) / "dist/pappo-evidence-0.1.0.zip")),
            ("unpack", lambda: unpack(Path(tmp) / "dist/pappo-evidence-0.1.0.zip", Path(tmp) / "u")),
            ("verify folder", lambda: verify_bundle(Path(tmp) / "u")),
        ]
        peaks, before = [], max_rss_mib()
        for name, fn in steps:
            out, secs, peak = measured(fn)
            if isinstance(out, list) and out:
                raise SystemExit(f"{name}: the bundle fails verification: {out[:3]}")
            print(f"{name:14s} {secs:6.1f} s  peak heap {peak:6.1f} MiB")
            peaks.append(peak)
        zipped = Path(tmp) / "dist/pappo-evidence-0.1.0.zip"
        print(f"zip {zipped.stat().st_size / 2**20:.1f} MiB")
        print(f"max RSS {before:.0f} MiB before the steps (imports, setup), {max_rss_mib():.0f} MiB after")
        print(f"ratio peak heap/adapter: {max(peaks) * 2**20 / size:.3f}")


if __name__ == "__main__":
    main()
