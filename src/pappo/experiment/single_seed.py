"""The single-seed experiment (`dvc exp run -S seed=N experiment`): every method on seed N.

Tuning happens here, on `dev_seeds` only: a published seed (`seeds`) is refused, so no try ever
sees the seeds that confirm the result (docs/tuning.md; Eimer, Lindauer & Raileanu 2023).
It trains `rl` with the try `tune.rl` merged over it (config.experiment_params); the seed matrix
reads `rl` alone, so a try (`dvc exp run -S seed=4 -S +tune.rl.actor_lr=0.002 experiment`) trains
that seed's runs only and leaves the published runs valid. Writes `<out>/<method>/` (a run folder
each) and `<out>/metrics.json`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pappo.config import Params, experiment_params
from pappo.experiment.report import HEADLINE, RUN_METHODS, flat_metrics
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


def run_experiment(
    params: Params, out: Path, base_dir: Path, log: Callable[[str], None] = print
) -> dict[str, dict[str, float]]:
    check_dev_seed(params)
    seed, out, tried = params.seed, Path(out), experiment_params(params)
    metrics: dict[str, dict[str, float]] = {}
    for method in RUN_METHODS:
        target = out / method
        shutil.rmtree(target, ignore_errors=True)
        report = run_method(tried, seed, method, target, base_dir, log)
        if report is None:  # a rank other than 0 of a multi-process run: rank 0 writes
            continue
        metrics[method] = flat_metrics(report)
    if len(metrics) == len(RUN_METHODS):
        # the headline means only (the seed is the `seed` param's column): intervals, budgets and
        # hashes stay in the run reports and receipts, so dvc exp show shows what a person compares
        atomic_write_json(out / "metrics.json", {m: {k: v[k] for k in HEADLINE} for m, v in metrics.items()})
    return metrics
