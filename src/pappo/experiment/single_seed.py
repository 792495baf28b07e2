"""The single-seed experiment (`dvc exp run -S seed=N`): every method on seed N.

A method whose run in the seed matrix (`reports/runs/seed_N/<method>`) was made by the same
params, code and base checkpoint is copied, not trained again (on CPU it would reproduce the same
report apart from timing), so `dvc repro` trains each (seed, method) once. Anything else is
trained here. Writes `<out>/<method>/` (a run folder each) and `<out>/metrics.json`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

from pappo.config import Params
from pappo.experiment.report import HEADLINE, RUN_METHODS, RunReport, flat_metrics
from pappo.experiment.run import params_subset, run_method, source_sha256
from pappo.io import atomic_write_json, canonical_json, sha256_bytes
from pappo.policy.checkpoint import read_record


def reusable(run_dir: Path, params: Params, revision: str) -> RunReport | None:
    """The matrix run's report if it was made by exactly this configuration, else None."""
    path = run_dir / "report.json"
    if not path.is_file() or not (run_dir / "adapters").is_dir():
        return None
    try:
        report = RunReport.model_validate(json.loads(path.read_text()))
    except ValueError:
        return None
    same = (report.params_sha256 == sha256_bytes(canonical_json(params_subset(params)).encode())
            and report.source_sha256 == source_sha256() and report.checkpoint.revision == revision)  # fmt: skip
    return report if same else None


def run_experiment(params: Params, out: Path, runs: Path, base_dir: Path,
                   log: Callable[[str], None] = print) -> dict[str, dict[str, float]]:  # fmt: skip
    seed, out = params.seed, Path(out)
    revision = read_record(base_dir).revision
    metrics: dict[str, dict[str, float]] = {}
    for method in RUN_METHODS:
        target = out / method
        shutil.rmtree(target, ignore_errors=True)
        source = runs / f"seed_{seed}" / method
        report = reusable(source, params, revision)
        if report is not None:
            shutil.copytree(source, target, ignore=shutil.ignore_patterns(".gitignore"))  # DVC's, not the run's
            log(f"{method} seed {seed}: same configuration as {source}; copied, not retrained")
        else:
            report = run_method(params, seed, method, target, base_dir, log)
            if report is None:  # a rank other than 0 of a multi-process run: rank 0 writes
                continue
        metrics[method] = flat_metrics(report)
    if len(metrics) == len(RUN_METHODS):
        # the headline means only: intervals and budgets stay in the run reports (dvc exp show fits a screen)
        atomic_write_json(out / "metrics.json", {"seed": seed, **{m: {k: v[k] for k in HEADLINE} for m, v in metrics.items()}})
    return metrics
