"""`pappo` commands of the model and the training: base-model, profile, numerics, train, experiment."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pappo.cli.app import ParamsOpt, app, out_folder
from pappo.config import Params, load_params
from pappo.io import PappoError

if TYPE_CHECKING:
    from pappo.experiment.report import RunReport


def pinned(path: Path) -> Params:
    """Params, with the CPU numerics pinned before anything loads torch (commands that train or evaluate)."""
    from pappo.numerics import pin

    params = load_params(path)
    for warning in pin(params.numerics):
        typer.echo(f"warning: numerics not pinned as asked: {warning}", err=True)
    return params


@app.command("base-model")
def base_model(
    params_path: Path = ParamsOpt,
    out: Path = typer.Option(Path("models/base"), help="Checkpoint folder (replaced)."),
    report: Path = typer.Option(Path("reports/base_model.json"), help="Stage report (replaced)."),
) -> None:
    """Resolve the pinned hub checkpoint, or build and warm-start the tiny one; report its success."""
    params = pinned(params_path)
    from pappo.policy.base_model import run_stage

    run_stage(params, out, report, log=typer.echo)


@app.command()
def profile(
    overlay: Path = typer.Argument(..., help="Profile overlay, e.g. profiles/qwen2.5-coder-7b.yaml."),
    revision: str = typer.Option(None, help="model.revision: the 40-hex hub commit to pin."),
    params_path: Path = ParamsOpt,
    gpu_memory_gib: float = typer.Option(
        None,
        help="GPU size to check the predicted peak memory against (default: the CUDA device's, if "
        "model.device is cuda and one is here).",
    ),
) -> None:
    """Merge a params profile into params.yaml (validated; written atomically, comments dropped).
    A profile predicted not to fit in the GPU's memory (pappo.policy.memory) is refused."""
    from pappo.policy.profile import write_profile

    if gpu_memory_gib is not None and not gpu_memory_gib > 0:  # `not >`: NaN is refused too
        raise PappoError(
            f"--gpu-memory-gib {gpu_memory_gib}: a GPU's memory is a positive size; pass it in GiB "
            "(e.g. 80) or leave it out to read the CUDA device's"
        )
    merged = write_profile(params_path, overlay, revision, gpu_memory_gib)
    typer.echo(
        f"wrote {params_path}: model {merged.model.id}@{merged.model.revision or '(unpinned)'} "
        f"on {merged.model.device}"
    )


@app.command()
def numerics(
    params_path: Path = ParamsOpt,
    against: Path = typer.Option(None, help="A receipt.json or reports/base_model.json to compare with."),
    as_json: bool = typer.Option(False, "--json", help="Print this machine's numerics as JSON."),
) -> None:
    """This machine's CPU numerics under the pin, and whether a rerun here can match the evidence
    bit for bit."""
    from pappo.numerics import collect, comparison, recorded

    params = pinned(params_path)
    here = collect(params.numerics)
    typer.echo(here.model_dump_json() if as_json else f"this machine: {here.describe()}")
    if against is None:
        return
    theirs = recorded(against)
    kind, why = comparison(here, theirs)
    typer.echo(f"{against}: {theirs.describe()}")
    typer.echo(f"a rerun here is {'expected to be bitwise identical' if kind == 'bitwise' else kind}: {why}")


@app.command()
def train(
    method: str = typer.Option(..., help="base, rft, grpo, ppo or pappo."),
    seed: int = typer.Option(..., help="Seed: its split (from the manifest lock) and its sampling."),
    out: Path = typer.Option(
        ..., help="Run folder: report.json, metrics.json, adapters/, dvclive/, receipt.json."
    ),
    base: Path = typer.Option(
        Path("models/base"), help="Base checkpoint folder (the base_model stage's output)."
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Train one method on one seed from the base checkpoint and evaluate it on the held-out families."""
    out_folder(out)
    params = pinned(params_path)
    from pappo.experiment.report import RUN_METHODS
    from pappo.experiment.run import run_method
    from pappo.sandbox.pool import require_containment

    if method not in RUN_METHODS:
        raise PappoError(f"--method {method!r}: use one of {list(RUN_METHODS)}")
    require_containment(params.sandbox)
    report = run_method(params, seed, method, out, base, log=typer.echo)
    if report is not None:  # None: a rank other than 0 of a multi-process run; rank 0 reports
        _said(method, seed, report, out)


@app.command("train-seed")
def train_seed(
    seed: int = typer.Option(..., help="Seed: its split (from the manifest lock) and its sampling."),
    out: Path = typer.Option(..., help="Seed folder: each method's run folder <out>/<method>/ is replaced."),
    method: list[str] = typer.Option(
        None, help="A method to run (repeat the option for several); default: base, rft, grpo, ppo, pappo."
    ),
    base: Path = typer.Option(
        Path("models/base"), help="Base checkpoint folder (the base_model stage's output)."
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Every method on one seed, one after another in one process (the pipeline's `train` stage):
    each run as `pappo train` alone writes it, into <out>/<method>/."""
    out_folder(out)
    params = pinned(params_path)
    from pappo.experiment.report import RUN_METHODS
    from pappo.experiment.single_seed import run_seed
    from pappo.sandbox.pool import require_containment

    methods = tuple(method) if method else RUN_METHODS
    if not set(methods) <= set(RUN_METHODS) or len(set(methods)) < len(methods):
        raise PappoError(f"--method {list(methods)}: use methods of {list(RUN_METHODS)}, each at most once")
    require_containment(params.sandbox)
    for m, report in run_seed(params, seed, out, base, log=typer.echo, methods=methods).items():
        _said(m, seed, report, out / m)


def _said(method: str, seed: int, report: RunReport, out: Path) -> None:
    s = report.final_eval.success
    typer.echo(
        f"{method} seed {seed}: held-out success {s.mean:.2f} [{s.lo:.2f}, {s.hi:.2f}] on "
        f"{report.final_eval.n_tasks} tasks; {report.budget.episodes_used} training episodes; wrote {out}"
    )


@app.command()
def experiment(
    out: Path = typer.Option(
        Path("reports/experiment"), help="Folder of the single-seed experiment (replaced per method)."
    ),
    base: Path = typer.Option(Path("models/base"), help="Base checkpoint folder."),
    params_path: Path = ParamsOpt,
) -> None:
    """Every method on params `seed`, a dev seed, with `rl` and the try `tune.rl` merged over it
    (`dvc exp run -S seed=4 -S +tune.rl.actor_lr=0.002 experiment`)."""
    out_folder(out)
    params = pinned(params_path)
    from pappo.experiment.single_seed import run_experiment

    metrics = run_experiment(params, out, base, log=typer.echo)
    for method, m in metrics.items():
        typer.echo(
            f"{method:6s} seed {params.seed}: held-out success {m['success']:.2f} "
            f"[{m['success_lo']:.2f}, {m['success_hi']:.2f}], pass@k {m['pass_at_k']:.2f}"
        )
