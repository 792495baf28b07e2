"""Choose the confirmatory experiment's size from pilot runs on development seeds, before it runs.

    python benchmarks/power_design.py --runs reports/pilot --seeds 3 4 5 6 [--train] [--out design.json]

With `--train`, first trains the missing pilot runs (`pappo train`, params.yaml as committed) into
RUNS/seed_S/<method>/ for every dev seed and method of `--methods`. Then, from their reports:

- per comparison (pappo - ppo, ppo - base, ...), the per-seed differences of held-out success, their
  SD with a one-sided 80% upper confidence bound (chi-square, n - 1 df), and its split into the
  seeds' own spread and each seed's evaluation noise (evidence/variance.py);
- for each candidate number of published seeds N, the minimum detectable effect (80% power,
  two-sided 5% paired t test; pappo.stats.mde) at the SD and at its upper bound;
- the predicted wall time of the default `dvc repro` at N seeds: N x the wall time of one seed's
  runs (every method of the matrix: the sum of each method's median over the pilot, robust to a run
  slowed by other work on the machine, plus `--stage-start-s` once a seed for what the runs' own
  clocks miss: DVC and the seed stage's process starting, each run loading; one stage a seed since
  2026-12-07, when it was one a run and cost ~10 s each) + the fixed stages (`--fixed-min`:
  validate, base model, the single-seed experiment, report, audit).

Prints the table and the smallest N meeting `--target-mde` within `--max-min`; `--out` keeps it
all as JSON (docs/experiment.md quotes it). Pilot runs are tuning runs: dev seeds only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from pappo.config import load_params
from pappo.evidence.variance import variance_split
from pappo.experiment.report import RunReport
from pappo.io import atomic_write_json
from pappo.stats import mde

PAIRS = (("pappo", "ppo"), ("ppo", "base"), ("pappo", "base"))
MATRIX = ("base", "rft", "grpo", "ppo", "pappo")
STAGE_START_S = 10.0  # ~9 s measured: 7.9 s between seed stages, 0.3 s between runs (58ba416, 2026-12-07)


def train_missing(runs: Path, seeds: list[int], methods: list[str], params: Path) -> None:
    for s in seeds:
        for m in methods:
            out = runs / f"seed_{s}" / m
            if (out / "report.json").is_file():
                continue
            cmd = [sys.executable, "-m", "pappo.cli", "train", "--params", str(params)]
            subprocess.run([*cmd, "--seed", str(s), "--method", m, "--out", str(out)], check=True)


def read(runs: Path, seeds: list[int], methods: list[str]) -> dict[tuple[int, str], RunReport]:
    out = {}
    for s in seeds:
        for m in methods:
            path = runs / f"seed_{s}" / m / "report.json"
            if path.is_file():
                out[(s, m)] = RunReport.model_validate_json(path.read_bytes())
    return out


def task_success(report: RunReport) -> list[float]:
    return [float(t.success) for t in sorted(report.final_eval.tasks, key=lambda t: t.instance_id)]


def sd_upper(sd: float, n: int, level: float = 0.8) -> float:
    """One-sided `level` upper confidence bound of an SD from n values: sd * sqrt((n-1) / chi2_{1-level, n-1})."""
    from scipy import stats as sps

    return sd * ((n - 1) / float(sps.chi2.ppf(1 - level, n - 1))) ** 0.5


def comparison(reports: dict[tuple[int, str], RunReport], seeds: list[int], a: str, b: str) -> dict[str, Any]:
    have = [s for s in seeds if (s, a) in reports and (s, b) in reports]
    pairs = [(task_success(reports[(s, a)]), task_success(reports[(s, b)])) for s in have]
    diffs = [statistics.fmean(x) - statistics.fmean(y) for x, y in pairs]
    sd = statistics.stdev(diffs) if len(diffs) > 1 else None
    split = variance_split(pairs)
    return {
        "comparison": f"{a} - {b}",
        "seeds": have,
        "per_seed": diffs,
        "mean": statistics.fmean(diffs) if diffs else None,
        "sd": sd,
        "sd_upper80": sd_upper(sd, len(diffs)) if sd else None,
        "variance": split.model_dump() if split else None,
    }


def design(
    rows: list[dict[str, Any]], seed_min: float, fixed_min: float, ns: list[int]
) -> list[dict[str, Any]]:
    table = []
    for n in ns:
        row: dict[str, Any] = {"n_seeds": n, "predicted_min": fixed_min + n * seed_min}
        for r in rows:
            if r["sd"]:
                row[f"mde {r['comparison']}"] = mde(r["sd"], n)
                row[f"mde {r['comparison']} (sd upper80)"] = mde(r["sd_upper80"], n)
        table.append(row)
    return table


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("reports/pilot"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--seeds", type=int, nargs="+", required=True, help="Development seeds of the pilot.")
    ap.add_argument("--methods", nargs="+", default=list(MATRIX))
    ap.add_argument("--train", action="store_true", help="Train the missing pilot runs first.")
    ap.add_argument(
        "--fixed-min",
        type=float,
        default=9.0,
        help="Minutes of the stages outside the matrix (8.9 measured at 58ba416).",
    )
    ap.add_argument(
        "--stage-start-s",
        type=float,
        default=STAGE_START_S,
        help="Seconds a seed's stage takes beyond its runs' clocks.",
    )
    ap.add_argument("--target-mde", type=float, default=0.10)
    ap.add_argument("--max-min", type=float, default=45.0)
    ap.add_argument("--n", type=int, nargs="+", default=[3, 4, 6, 8, 10, 12, 16, 20, 24, 30])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    params = load_params(args.params)
    if published := sorted(set(args.seeds) & set(params.seeds)):
        raise SystemExit(
            f"--seeds {published} are published seeds: a pilot runs on dev_seeds {params.dev_seeds}"
        )
    if args.train:
        train_missing(args.runs, args.seeds, args.methods, args.params)
    reports = read(args.runs, args.seeds, args.methods)
    rows = [
        comparison(reports, args.seeds, a, b) for a, b in PAIRS if a in args.methods and b in args.methods
    ]
    walls = {m: [r.timing.wall_s for (s, mm), r in reports.items() if mm == m] for m in args.methods}
    runs = [w for w in walls.values() if w]
    seed_min = (sum(statistics.median(w) for w in runs) + args.stage_start_s) / 60.0
    table = design(rows, seed_min, args.fixed_min, args.n)
    key = f"mde {PAIRS[0][0]} - {PAIRS[0][1]}"
    fits = [t for t in table if t["predicted_min"] <= args.max_min and t.get(key, 1.0) <= args.target_mde]
    result = {
        "pilot_seeds": args.seeds,
        "comparisons": rows,
        "wall_s_per_run": {m: statistics.median(w) for m, w in walls.items() if w},
        "seed_minutes": seed_min,
        "table": table,
        "choice": fits[0]["n_seeds"] if fits else None,
    }
    for r in rows:
        per_seed = ", ".join(f"{d:+.3f}" for d in r["per_seed"])
        print(f"{r['comparison']}: per seed [{per_seed}], sd {r['sd']}, sd upper80 {r['sd_upper80']}")
        print(f"  variance: {r['variance']}")
    for t in table:
        print("  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()))
    print(f"smallest N with MDE({key[4:]}) <= {args.target_mde} in {args.max_min} min: {result['choice']}")
    if args.out:
        atomic_write_json(args.out, result)
    return result


if __name__ == "__main__":
    main()
