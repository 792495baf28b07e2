"""What libgomp's idle-thread spinning costs: a real `pappo train` stage, OMP_WAIT_POLICY unset vs PASSIVE.

    python benchmarks/omp_wait.py [--method ppo] [--updates 3] [--repeats 1]

torch's OpenMP runtime (libgomp) spins a thread that waits for work before it sleeps. Alone on
the machine that only burns a core nobody else wants; beside other work (the suite's two pytest
workers and their stage subprocesses on two cores) the spinning takes CPU the others need.
tests/conftest.py therefore sets OMP_WAIT_POLICY=PASSIVE for the suite. This measures the effect
on the published stage (`pappo train`: params.yaml with `--updates` updates, seed 0), each
setting run alone and as two copies at once, interleaved over the repeats:
wall and CPU seconds, and whether the run reports agree apart from timing (the wait policy must
change no number). Needs the workspace's `dvc repro` outputs (the lock and models/base).
Prints `ratio passive/unset alone: X.XX` and `ratio passive/unset pair: X.XX` last.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from pappo.evidence.reproduce_compare import without_timing

ROOT = Path(__file__).resolve().parents[1]


def launch(params: Path, method: str, out: Path, policy: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    cmd = [
        sys.executable,
        "-m",
        "pappo.cli",
        "train",
        "--params",
        str(params),
        "--seed",
        "0",
        "--method",
        method,
        "--out",
        str(out),
    ]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run_setting(
    params: Path, method: str, work: Path, policy: str | None, copies: int
) -> tuple[float, float, list[object]]:
    """Wall seconds, CPU seconds of the children, and each copy's report without its timing."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    outs = [work / f"{policy or 'unset'}-{copies}-{i}-{time.monotonic_ns()}" for i in range(copies)]
    procs = [launch(params, method, out, policy) for out in outs]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"pappo train failed ({policy or 'unset'}):\n{err.decode()[-2000:]}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, [without_timing(json.loads((out / "report.json").read_text())) for out in outs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="ppo")
    ap.add_argument("--updates", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["rl"]["updates"] = args.updates
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    reports: list[object] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path = work / "params.yaml"
        path.write_text(yaml.safe_dump(params, sort_keys=False))
        for _ in range(args.repeats):
            for copies in (1, 2):
                for policy in (None, "PASSIVE"):
                    wall, cpu, got = run_setting(path, args.method, work, policy, copies)
                    results.setdefault((policy or "unset", copies), []).append((wall, cpu))
                    reports += got
                    print(
                        f"{policy or 'unset':>7} x{copies}: wall {wall:6.1f} s, cpu {cpu:6.1f} s", flush=True
                    )
    same = all(r == reports[0] for r in reports)
    print(
        f"{args.method}, {args.updates} updates, {len(reports)} runs: reports identical apart from timing: {same}"
    )

    def med(policy: str, copies: int, i: int) -> float:
        return statistics.median(x[i] for x in results[policy, copies])

    for copies, name in ((1, "alone"), (2, "pair")):
        print(
            f"ratio passive/unset {name}: {med('PASSIVE', copies, 0) / med('unset', copies, 0):.2f} "
            f"(cpu {med('PASSIVE', copies, 1) / med('unset', copies, 1):.2f})"
        )
    if not same:
        raise SystemExit("the wait policy changed a number: a bug in the pinning, not a speed question")


if __name__ == "__main__":
    main()
