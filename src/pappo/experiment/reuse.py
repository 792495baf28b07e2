"""A run made by the identical configuration is copied, not trained again.

The `train` / `base_run` matrix (`reports/runs/seed_S/<method>`) and the single-seed experiment
(`reports/experiment/<method>`, seed = params `seed`) make the same runs for the experiment's seed.
Neither stage depends on the other (so `dvc exp run -S seed=N experiment` does not retrain the
matrix first); each copies the other's run when that run was made by the same method, seed, params
sections, train-stage code and base checkpoint revision, whichever ran first, and whose receipt
binds the code a fresh receipt would (the train stage's dvc.yaml code list, the same bytes), so the
audit accepts the copy as it would a retrained run. On CPU under the
pinned numerics a second training would reproduce the same report apart from timing fields, so
`dvc repro` trains each (seed, method) once. The copy is the run's own files: its report, receipt
(with the stage that makes the run) and timing say what ran.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from pappo.config import Params
from pappo.experiment import receipt as rc
from pappo.experiment.report import RunReport, params_subset
from pappo.experiment.run import receipt_code, source_sha256
from pappo.io import canonical_json, sha256_bytes


def reusable(
    run_dir: Path, params: Params, seed: int, method: str, revision: str, repo_root: Path | None = None
) -> RunReport | None:
    """The report in `run_dir` if that run was made by exactly this configuration, else None."""
    path = Path(run_dir) / "report.json"
    if (
        not path.is_file()
        or not (Path(run_dir) / "adapters").is_dir()
        or not (Path(run_dir) / "receipt.json").is_file()
    ):
        return None
    try:
        report = RunReport.model_validate(json.loads(path.read_text()))
    except ValueError:
        return None
    same = (
        (report.seed, report.method) == (seed, method)
        and report.params_sha256 == sha256_bytes(canonical_json(params_subset(params, method)).encode())
        and report.source_sha256 == source_sha256()
        and report.checkpoint.revision == revision
    )
    return report if same and binds_current_code(Path(run_dir), Path(repo_root or Path.cwd())) else None


def binds_current_code(run_dir: Path, repo_root: Path) -> bool:
    """Whether the run's receipt binds what a receipt made now would: the train stage's dvc.yaml code
    list (it can widen while the imported code stays the same), the same bytes, and clean code
    unless the tree is dirty now too. Otherwise the audit would reject the copy (foreign or stale)."""
    try:
        receipt = rc.Receipt.model_validate(json.loads((run_dir / "receipt.json").read_text()))
        paths = receipt_code(repo_root)
        now = rc.collect_source(repo_root, paths)
    except ValueError:
        return False
    return (
        sorted(receipt.source.source_paths) == sorted(paths)
        and receipt.source.tree_sha256 == now.tree_sha256
        and (now.git_dirty or not receipt.source.git_dirty)
    )


def copy_run(source: Path, target: Path, log: Callable[[str], None]) -> None:
    """Replace `target` by a copy of the run folder `source` (bar DVC's .gitignore files)."""
    tmp = Path(target).with_name(Path(target).name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, ignore=shutil.ignore_patterns(".gitignore", "*.tmp"))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    log(f"{target}: the same configuration as {source}; copied, not retrained")
