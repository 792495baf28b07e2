"""Cost of one sandboxed test run, as ratios to a bare interpreter start (machine-independent-ish).

    python benchmarks/sandbox_runs.py [--family intervalkit] [--repeats 5]

Prints the median wall time of: a bare `python -c pass`, a cold `python -m pytest` of the family
(with and without installed plugins), and `run_tests` of the sandbox (copy + limits + plugin +
result channel), each also as a multiple of the bare start. The next sandbox version (warm fork
server) is measured against these numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pappo.config import SandboxParams
from pappo.sandbox.runner import materialise, run_tests
from pappo.tasks.families import load_tree

ROOT = Path(__file__).resolve().parents[1]


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="intervalkit")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    files = load_tree(ROOT / "data" / "repofix" / "repos" / args.family)
    with tempfile.TemporaryDirectory() as tmp:
        materialise(Path(tmp), files)

        def pytest_cmd(autoload: bool) -> None:
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
            if not autoload:
                env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=tmp, env=env, capture_output=True, check=True)  # fmt: skip

        rows = {
            "bare python start": lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
            "pytest, installed plugins": lambda: pytest_cmd(True),
            "pytest, no plugin autoload": lambda: pytest_cmd(False),
            "sandbox run_tests (v1)": lambda: run_tests(files, SandboxParams()),
        }
        results = {name: median_time(fn, args.repeats) for name, fn in rows.items()}
    base = results["bare python start"]
    print(f"family {args.family}, {len(files)} files, median of {args.repeats}")
    for name, seconds in results.items():
        print(f"{name:30s} {seconds * 1000:8.1f} ms  {seconds / base:6.1f}x bare start")


if __name__ == "__main__":
    main()
