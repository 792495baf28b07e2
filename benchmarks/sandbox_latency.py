"""Grading latency of the warm fork server against a cold `python -m pytest` subprocess.

    python benchmarks/sandbox_latency.py [--tasks 20] [--repeats 5] [--params params.yaml] [--as-uid 1001]

With --as-uid (run as root), the whole benchmark runs as that ordinary uid, as a researcher's
account would, through `pappo.sandbox.as_user`: the pool then uses rootless namespaces.

On a sample of tasks (one per family, spread over the manifest), each repeat grades the task's
buggy tree and its fixed tree, each twice, interleaved so machine noise hits both sides alike:
  * warm: `grade_many` through a one-worker `SandboxPool` (static scan, trusted test restore,
    fork, isolation, limits, authenticated channel, the task's hidden checks run after the tests
    and compared out of process: the full grading path);
  * cold: `python -m pytest -q -p no:cacheprovider tests` on the same trusted tree in a temporary
    folder, with installed plugins disabled (the fair baseline: the sandbox disables them too).
The hidden checks run only when every visible test passed (else the grade has failed already):
on buggy trees they are skipped, on fixed trees every check runs. Also printed, not used in the
ratios: the cold run with installed plugins autoloaded. The last two lines are
`ratio: X.X` (buggy trees) and `ratio with hidden checks: X.X` (fixed trees), each the median
cold / median warm over all measurements.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pappo.config import load_params
from pappo.io import write_tree
from pappo.sandbox.grading import grade_many, trusted_tree
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.store import TaskStore


def cold_run(tree: dict[str, bytes], autoload: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="pappo-bench-") as tmp:
        write_tree(Path(tmp), tree)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        if not autoload:
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            cwd=tmp,
            env=env,
            capture_output=True,
            check=False,
        )
        return time.perf_counter() - start


def as_uid(uid: int) -> int:
    """This script again, as `uid`, with a fresh HOME outside /tmp; returns its exit status."""
    home = tempfile.mkdtemp(prefix="zzhome-", dir="/home" if os.path.isdir("/home") else None)
    os.chown(home, uid, uid)
    argv = [a for i, a in enumerate(sys.argv) if a != "--as-uid" and sys.argv[i - 1] != "--as-uid"]
    root = str(Path(__file__).resolve().parents[1])
    cmd = [
        sys.executable,
        "-m",
        "pappo.sandbox.as_user",
        "--uid",
        str(uid),
        "--home",
        home,
        "--keep",
        root,
        "--cwd",
        os.getcwd(),
        "--",
        sys.executable,
        *argv,
    ]
    try:
        return subprocess.run(cmd, check=False).returncode
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--as-uid", type=int, help="Run the benchmark as this ordinary uid (needs root).")
    args = ap.parse_args()
    if args.as_uid is not None:
        sys.exit(as_uid(args.as_uid))
    params = load_params(args.params)
    store = TaskStore.from_params(params, "repofix")
    by_family: dict[str, list[str]] = {}
    for tid, task in store.tasks.items():
        by_family.setdefault(task.family, []).append(tid)
    sample = [store.task(ids[i % len(ids)]) for i, ids in enumerate(by_family.values())][: args.tasks]
    warm, cold, autoload, warm_fix, cold_fix = [], [], [], [], []
    with SandboxPool(params.sandbox, workers=1) as pool:
        print(
            f"isolation: {pool.isolation} (uid {os.getuid()}); {len(sample)} tasks x {args.repeats} repeats"
        )
        for task in sample:
            clean, buggy = store.clean(task), store.buggy(task)
            tree, _ = trusted_tree(clean, buggy)
            fixed, _ = trusted_tree(clean, clean)
            grade_many(pool, [(task, clean, buggy)], store.hidden)  # fills the caches and the clean answers
            w, c = [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                g = grade_many(pool, [(task, clean, buggy)], store.hidden)[0]
                w.append(time.perf_counter() - start)
                c.append(cold_run(tree, autoload=False))
                assert not g.success and g.infra_error is None, f"{task.instance_id}: {g}"
                start = time.perf_counter()
                f = grade_many(pool, [(task, clean, clean)], store.hidden)[0]
                warm_fix.append(time.perf_counter() - start)
                cold_fix.append(cold_run(fixed, autoload=False))
                assert f.success and f.hidden_total == len(store.hidden[task.instance_id].checks), (
                    task.instance_id
                )
            autoload.append(cold_run(tree, autoload=True))
            warm += w
            cold += c
            print(
                f"{task.instance_id:16s} {f.hidden_total:3d} hidden checks  fixed: warm "
                f"{statistics.median(warm_fix[-args.repeats :]) * 1e3:6.1f} ms  buggy: warm {statistics.median(w) * 1e3:6.1f} ms   "
                f"cold {statistics.median(c) * 1e3:6.1f} ms   x{statistics.median(c) / statistics.median(w):4.1f}"
            )
    mw, mc, ma = (statistics.median(x) for x in (warm, cold, autoload))
    print(
        f"median warm {mw * 1e3:.1f} ms; cold (no plugin autoload) {mc * 1e3:.1f} ms; "
        f"cold (installed plugins) {ma * 1e3:.1f} ms -> x{ma / mw:.1f}"
    )
    mwf, mcf = statistics.median(warm_fix), statistics.median(cold_fix)
    print(f"fixed trees (every hidden check runs): median warm {mwf * 1e3:.1f} ms; cold {mcf * 1e3:.1f} ms")
    print(f"ratio: {mc / mw:.1f}")
    print(f"ratio with hidden checks: {mcf / mwf:.1f}")


if __name__ == "__main__":
    main()
