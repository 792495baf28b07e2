"""Every method on one seed, in one process: the pipeline's `train` stage (`pappo train-seed`, a
published seed) and the single-seed experiment (`dvc exp run -S seed=N experiment`, a dev seed).

One process per seed, not per run: a stage's start-up (imports, DVC rewriting dvc.lock) cost ~14 s
a run, a fifth of the default pipeline's time. Each run seeds its own generators and loads its own
model, so it gives the bytes `pappo train` alone gives (tests/test_dvc_smoke.py: `pappo reproduce`
retrains published runs alone and finds them bit-identical). A stage killed midway retrains its
finished runs too (DVC deletes a stage's outputs before it runs); the interrupted one resumes.

Tuning happens in the experiment, on `dev_seeds` only: a published seed (`seeds`) is refused, so no
try ever sees the seeds that confirm the result (docs/tuning.md; Eimer, Lindauer & Raileanu 2023).
It trains `rl` with the try `tune.rl` merged over it (config.experiment_params); the seed stages
read `rl` alone, so a try (`dvc exp run -S seed=4 -S +tune.rl.actor_lr=0.002 experiment`) trains
that seed's runs only and leaves the published runs valid. Writes `<out>/<method>/` (a run folder
each) and, for the experiment, `<out>/metrics.json`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pappo.config import Params, experiment_params
from pappo.experiment.report import HEADLINE, RUN_METHODS, RunReport, flat_metrics
from pappo.experiment.run import run_method
from pappo.io import PappoError, atomic_write_json


def check_dev_seed(params: Params) -> None:
    """Refuse a seed that is not a tuning seed, saying which seeds to tune on."""
    seed, dev = params.seed, params.dev_seeds
    where = "add tuning seeds to dev_seeds"
    if dev:
        where = f"tune on dev_seeds {dev}: `dvc exp run -S seed={dev[0]}`"
    if seed in params.seeds:
        raise PappoError(
            f"params.yaml seed: {seed} is a published (confirmatory) seed (seeds {params.seeds}); a try on "
            f"it would make the published evidence exploratory. {where} (docs/tuning.md)"
        )
    if seed not in dev:
        raise PappoError(
            f"params.yaml seed: {seed} is not in dev_seeds {dev}; {where}, or add {seed} to dev_seeds and "
            "rerun `dvc repro validate` so it gets a split"
        )


def run_seed(
    params: Params,
    seed: int,
    out: Path,
    base_dir: Path,
    log: Callable[[str], None] = print,
    methods: tuple[str, ...] = RUN_METHODS,
    stage: str | None = None,
) -> dict[str, RunReport]:
    """`methods` on `seed`, one after another, each into its run folder `<out>/<method>/` (replaced);
    the reports by method (none on ranks other than 0 of a multi-process run: rank 0 writes).
    `stage`: what the receipts name as having run them (default: the seed's pipeline stage)."""
    reports: dict[str, RunReport] = {}
    for method in methods:
        target = Path(out) / method
        shutil.rmtree(target, ignore_errors=True)
        report = run_method(params, seed, method, target, base_dir, log, stage)
        if report is not None:
            reports[method] = report
    return reports


def run_experiment(
    params: Params, out: Path, base_dir: Path, log: Callable[[str], None] = print
) -> dict[str, dict[str, float]]:
    check_dev_seed(params)
    out = Path(out)
    reports = run_seed(experiment_params(params), params.seed, out, base_dir, log, stage="experiment")
    metrics = {method: flat_metrics(report) for method, report in reports.items()}
    if len(metrics) == len(RUN_METHODS):
        # the headline means only (the seed is the `seed` param's column): intervals, budgets and
        # hashes stay in the run reports and receipts, so dvc exp show shows what a person compares
        atomic_write_json(out / "metrics.json", {m: {k: v[k] for k in HEADLINE} for m, v in metrics.items()})
    return metrics
