"""A confirmation on seeds outside the published matrix: base, ppo and pappo compared as the audit
compares them (paired over tasks, stratified by seed; `pappo.stats`), written as one receipt.

    python benchmarks/confirmation.py --runs DIR --seeds 3 4 --params P.yaml --lock L.json --out FILE.json

DIR holds one `pappo train` run folder per (method, seed), named `<method>-s<seed>` (report.json
and receipt.json). The receipt keeps each run's per-task outcomes, per-update held-out success,
commit and wall time, so the differences can be recomputed from it alone (`--check FILE.json`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from pappo.io import atomic_write_json
from pappo.stats import paired_diff_ci_seeds, seed_wins

METHODS = ("base", "ppo", "pappo")
PAIRS = (("ppo", "base"), ("pappo", "base"), ("pappo", "ppo"))


def read_runs(runs: Path, seeds: list[int]) -> dict[str, Any]:
    out = {}
    for s in seeds:
        for m in METHODS:
            folder = runs / f"{m}-s{s}"
            report = json.loads((folder / "report.json").read_text())
            receipt = json.loads((folder / "receipt.json").read_text())
            out[f"seed_{s}/{m}"] = {
                "git_commit": receipt["source"]["git_commit"],
                "git_dirty": receipt["source"]["git_dirty"],
                "evals": [
                    {"update": e["update"], "success": e["result"]["success"]} for e in report["evals"]
                ],
                "tasks": {t["instance_id"]: t["success"] for t in report["final_eval"]["tasks"]},
                "wall_s": report["timing"]["wall_s"],
            }
    return out


def differences(runs: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """a - b on held-out success for each pair: mean over seeds [95% CI], per seed, seeds where a > b."""
    out = {}
    for a, b in PAIRS:
        pairs, per_seed = [], []
        for s in seeds:
            ta, tb = runs[f"seed_{s}/{a}"]["tasks"], runs[f"seed_{s}/{b}"]["tasks"]
            if sorted(ta) != sorted(tb):
                raise SystemExit(f"seed {s}: {a} and {b} were evaluated on different tasks")
            ids = sorted(ta)
            pairs.append(([float(ta[i]) for i in ids], [float(tb[i]) for i in ids]))
            per_seed.append((sum(pairs[-1][0]) / len(ids), sum(pairs[-1][1]) / len(ids)))
        ci = paired_diff_ci_seeds(pairs)
        out[f"{a}-{b}"] = {
            **ci.to_json(),
            "per_seed": [x - y for x, y in per_seed],
            "seed_wins": seed_wins([x for x, _ in per_seed], [y for _, y in per_seed]),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path)
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument("--params", type=Path, help="the params file the runs read (hashed into the receipt)")
    ap.add_argument("--lock", type=Path, help="the manifest lock holding the seeds' splits (hashed)")
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--check", type=Path, help="recompute a receipt's differences from its runs; exit 1 if they differ"
    )
    args = ap.parse_args(argv)
    if args.check:
        receipt = json.loads(args.check.read_text())
        again = differences(receipt["runs"], receipt["seeds"])
        print(json.dumps(again, indent=2))
        return 0 if again == receipt["differences"] else 1
    if not (args.runs and args.seeds and args.params and args.lock and args.out):
        ap.error("--runs, --seeds, --params, --lock and --out are needed (or --check FILE)")
    runs = read_runs(args.runs, args.seeds)
    receipt = {
        "seeds": args.seeds,
        "runs": runs,
        "differences": differences(runs, args.seeds),
        "params_sha256": hashlib.sha256(args.params.read_bytes()).hexdigest(),
        "lock_sha256": hashlib.sha256(args.lock.read_bytes()).hexdigest(),
        "method": "pappo.stats.paired_diff_ci_seeds (the audit's: tasks resampled within seeds, "
        "2000 replicates, seed 0); seed_wins counts seeds where a > b",
    }
    atomic_write_json(args.out, receipt)
    print(json.dumps(receipt["differences"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
