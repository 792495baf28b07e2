"""`pappo reproduce`: re-run a sample of the published work on this machine and compare.

The chosen runs (and with `--base` the base model) are re-run by the same `pappo` commands in a
scratch clone of the commit the evidence names, on this machine, under the params of that commit.
Inputs DVC caches (the manifest locks; the base checkpoint unless `--base`) are checked out of
this repository's DVC cache into the clone; nothing is written to the cache or the workspace.

Comparison (src/pappo/numerics.py): when the reproduction computed with the same numerics as the
published run (settings and measured fingerprint), the run must be bit for bit the same (report
minus timing fields, adapters); with other numerics, bits are not expected to match, so each final
metric is compared with the published 95% interval and every claim is re-evaluated with the
reproduced runs in place of the published ones: the verdicts must be the same.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pappo.config import Params, load_params
from pappo.evidence import bundle as bundles
from pappo.evidence.reproduce_compare import (
    Reproduction,
    RunCheck,
    RunId,
    check_claims,
    compare_base,
    compare_run,
)
from pappo.experiment import receipt as rc
from pappo.experiment.report import RUN_METHODS, RunReport
from pappo.io import GIT_LOCAL_ENV, PappoError, atomic_write_json, git


def choose_runs(params: Params, runs: str | None, sample: int | None, seed: int = 0) -> list[RunId]:
    """`--runs 0/ppo,1/grpo`, or `--sample K` (a seeded sample of the matrix), or none."""
    matrix = [(s, m) for s in params.seeds for m in RUN_METHODS]
    if runs:
        chosen = []
        for item in runs.split(","):
            s, _, m = item.strip().partition("/")
            if not s.isdigit() or (int(s), m) not in matrix:
                raise PappoError(
                    f"--runs {item!r}: use seed/method with a seed of {params.seeds} and a method of "
                    f"{list(RUN_METHODS)}, e.g. 0/ppo"
                )
            chosen.append((int(s), m))
        return chosen
    if sample:
        if not 0 < sample <= len(matrix):
            raise PappoError(f"--sample {sample}: between 1 and {len(matrix)} runs")
        return sorted(random.Random(seed).sample(matrix, sample))
    return []


def _sh(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """`cmd` in the scratch clone, never pointed at another repository by the caller's git variables."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in GIT_LOCAL_ENV}
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise PappoError(
            f"`{' '.join(cmd[:4])} ...` failed in the scratch clone: {(out.stderr or out.stdout)[-1500:]}"
        )
    return out.stdout


def prepare_clone(root: Path, commit: str, scratch: Path, base: bool) -> Path:
    """A clone of `commit` with the DVC-cached inputs it needs checked out of root's cache."""
    clone = scratch / "clone"
    shutil.rmtree(clone, ignore_errors=True)
    _sh(["git", "clone", "--quiet", "--no-checkout", str(root), str(clone)], scratch)
    _sh(["git", "checkout", "--quiet", commit], clone)
    _sh(["dvc", "config", "--local", "cache.dir", str((root / ".dvc" / "cache").resolve())], clone)
    _sh(["dvc", "config", "--local", "cache.type", "copy"], clone)  # never a link into the reviewer's cache
    targets = ["data/repofix/manifest.lock.json", "data/warmup/manifest.lock.json"] + (
        [] if base else ["models/base"]
    )
    _sh(["dvc", "checkout", *targets], clone)
    return clone


def prepare_tree(bundle: Path, tree_id: str, scratch: Path, base: bool) -> Path:
    """A git repository of the bundle's source/ (one commit, its tree checked against `tree_id`) with
    the DVC-cached inputs copied from the bundle: reproduction without the original repository."""
    clone = scratch / "clone"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(bundle / "source", clone, symlinks=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "pappo reproduce",
        "GIT_AUTHOR_EMAIL": "reproduce@localhost",
        "GIT_COMMITTER_NAME": "pappo reproduce",
        "GIT_COMMITTER_EMAIL": "reproduce@localhost",
    }
    commit = ["git", "-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m", "bundle source"]
    for cmd in (["git", "init", "--quiet"], ["git", "add", "--all", "--force"], commit):
        _sh(cmd, clone, env)
    tree = _sh(["git", "rev-parse", "HEAD^{tree}"], clone).strip()
    if f"swh:1:dir:{tree}" != tree_id:
        raise PappoError(
            f"the bundle's source/ committed here is tree {tree}, the bundle says {tree_id}: "
            "the unpacked files changed (line endings? permissions?); unpack the zip again"
        )
    inputs = ["data/repofix/manifest.lock.json", "data/warmup/manifest.lock.json"]
    inputs += [] if base else ["models/base"]
    for rel in inputs:
        src = bundle / rel
        if not src.exists():
            raise PappoError(
                f"{src} is missing: the bundle lacks an input of the re-run; rebuild it with `pappo release`"
            )
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, clone / rel)
    return clone


def _pappo(args: list[str], clone: Path) -> None:
    """The clone's own code (not the installed package's), with this interpreter and environment."""
    env = {**os.environ, "PYTHONPATH": str(clone / "src")}
    _sh([sys.executable, "-m", "pappo.cli", *args, "--params", "params.yaml"], clone, env)


def _ok(r: RunCheck) -> bool:
    return r.identical if r.comparison == "bitwise" else all(m.inside for m in r.metrics)


def render(rep: Reproduction) -> str:
    lines = [
        f"reproduction of {rep.commit[:12]}: {'REPRODUCED' if rep.reproduced else 'NOT REPRODUCED'} "
        f"({rep.wall_s:.0f} s here)"
    ]
    if rep.code_from == "bundle source":
        lines.append(
            "code: the bundle's source/ in a scratch git repository made here (same git tree as the "
            "commit; the original repository's .git was not available)"
        )
    for r in rep.runs:
        head = f"{r.run}: {r.comparison} ({r.reason}); {r.wall_s:.0f} s"
        if r.identical:
            lines.append(f"{head}: bit-identical")
            continue
        bits = f"bits differ at {r.first_difference}" + (
            "" if r.comparison == "intervals" else " (numerics match: bits were expected)"
        )
        lines.append(f"{head}: {bits}")
        lines += [
            f"  {m.metric}: {m.reproduced:.3f} vs published {m.published:.3f} [{m.lo:.3f}, {m.hi:.3f}] "
            f"({m.difference:+.3f}, {'inside' if m.inside else 'OUTSIDE'} the 95% interval)"
            for m in r.metrics
        ]
    for c in rep.claims:
        same = "same verdict" if c.published_holds == c.reproduced_holds else "verdict CHANGES"
        lines.append(
            f"claim {c.id}: published {'holds' if c.published_holds else 'does not hold'} "
            f"({c.published_delta:+.3f}), reproduced {'holds' if c.reproduced_holds else 'does not hold'} "
            f"({c.reproduced_delta:+.3f}): {same}"
        )
    return "\n".join(lines)


def load_published(root: Path, params: Params) -> tuple[dict[RunId, RunReport], dict[RunId, rc.Receipt]]:
    reports, receipts = {}, {}
    for s in params.seeds:
        for m in RUN_METHODS:
            run = root / "reports" / "runs" / f"seed_{s}" / m
            try:
                reports[s, m] = RunReport.model_validate_json((run / "report.json").read_bytes())
                receipts[s, m] = rc.Receipt.model_validate_json((run / "receipt.json").read_bytes())
            except (OSError, ValueError) as e:
                raise PappoError(
                    f"{run}: no valid published run ({type(e).__name__}); `dvc pull` or `dvc repro` "
                    "first: a reproduction compares with the published runs"
                ) from e
    return reports, receipts


def reproduce(
    root: Path,
    params: Params,
    chosen: list[RunId],
    base: bool,
    scratch: Path,
    log: Callable[[str], None] = print,
    bundle: dict[str, Any] | None = None,
) -> Reproduction:
    """Re-run `chosen` (and the base model) in a clone of the published commit and compare.
    `bundle`: root is an unpacked evidence bundle (its BUNDLE.json): the code comes from its source/."""
    if not chosen and not base:
        raise PappoError("nothing to reproduce: pass --runs seed/method,..., --sample K or --base")
    published, receipts = load_published(root, params)
    _check_one_commit(published, receipts)
    t0 = time.perf_counter()
    sha, clone = _prepare_code(root, Path(scratch), base, bundle)
    clone_params = load_params(clone / "params.yaml")
    checks, reproduced = _rerun_steps(root, clone, chosen, base, receipts, log, t0)
    claims = check_claims(clone_params, published, receipts, reproduced) if reproduced else []
    ok = all(_ok(c) for c in checks) and all(c.published_holds == c.reproduced_holds for c in claims)
    rep = Reproduction(
        commit=sha,
        code_from="git clone" if bundle is None else "bundle source",
        runs=checks,
        claims=claims,
        reproduced=ok,
        wall_s=time.perf_counter() - t0,
        verdict="",
    )
    return rep.model_copy(update={"verdict": render(rep)})


def _check_one_commit(published: dict[RunId, RunReport], receipts: dict[RunId, rc.Receipt]) -> None:
    """Refuse evidence whose published runs name more than one commit (or none)."""
    commits = {receipts[k].source.git_commit for k in published} - {None}
    if len(commits) != 1:
        raise PappoError(
            f"the published runs name {len(commits)} commits ({sorted(commits)[:3]}); run `pappo audit` "
            "first: a reproduction needs evidence of one commit"
        )


def _prepare_code(root: Path, scratch: Path, base: bool, bundle: dict[str, Any] | None) -> tuple[str, Path]:
    """The commit re-run and its scratch tree: the bundle's source/, or a clone of HEAD."""
    if bundle is not None:
        sha = str(bundle.get("commit"))
        clone = prepare_tree(root, str(bundle.get("swhid_dir")), scratch, base)
    else:
        sha = _evidence_commit(root)
        clone = prepare_clone(root, sha, scratch, base)
    return sha, clone


def _rerun_steps(
    root: Path,
    clone: Path,
    chosen: list[RunId],
    base: bool,
    receipts: dict[RunId, rc.Receipt],
    log: Callable[[str], None],
    t0: float,
) -> tuple[list[RunCheck], dict[RunId, RunReport]]:
    """Re-run the base model (with `base`) and the chosen runs in the clone, logging progress, and compare."""
    steps: list[tuple[str, RunId | None]] = ([("base_model", None)] if base else []) + [
        (f"seed_{s}/{m}", (s, m)) for s, m in chosen
    ]
    published_base = json.loads((root / "reports/base_model.json").read_text())
    base_s = float(published_base.get("timing", {}).get("wall_s", 0.0))
    planned = [float(receipts[k].timing.wall_s) if k else base_s for _, k in steps]
    checks, reproduced, done_s, paced_s = [], {}, 0.0, 0.0
    for i, (name, key) in enumerate(steps):
        log(_progress(i, len(steps), name, done_s, planned, time.perf_counter() - t0, paced_s))
        start = time.perf_counter()
        if key is None:
            _pappo(["base-model"], clone)
            checks.append(
                compare_base(
                    published_base,
                    json.loads((clone / "reports/base_model.json").read_text()),
                    time.perf_counter() - start,
                )
            )
        else:
            check, reproduced[key] = _rerun_run(root, clone, name, key, receipts, start)
            checks.append(check)
        done_s += planned[i]
        paced_s += time.perf_counter() - start if planned[i] > 0 else 0.0
    log(_progress(len(steps), len(steps), "done", done_s, planned, time.perf_counter() - t0, paced_s))
    return checks, reproduced


def _rerun_run(
    root: Path, clone: Path, name: str, key: RunId, receipts: dict[RunId, rc.Receipt], start: float
) -> tuple[RunCheck, RunReport]:
    """Train one run in the clone; its comparison with the published run and its reproduced report."""
    out = clone / "reports" / "runs" / f"seed_{key[0]}" / key[1]
    _pappo(
        [
            "train",
            "--seed",
            str(key[0]),
            "--method",
            key[1],
            "--out",
            str(out),
        ],
        clone,
    )
    pub = json.loads((root / "reports" / "runs" / name / "report.json").read_text())
    mine = rc.Receipt.model_validate_json((out / "receipt.json").read_bytes()).determinism.numerics
    check = compare_run(
        name,
        pub,
        json.loads((out / "report.json").read_text()),
        mine,
        receipts[key].determinism.numerics,
        time.perf_counter() - start,
    )
    return check, RunReport.model_validate_json((out / "report.json").read_bytes())


def reproduce_here(
    root: Path,
    bundle: Path | None,
    params_path: Path,
    runs: str | None,
    sample: int | None,
    base: bool,
    scratch: Path | None,
    log: Callable[[str], None] = print,
) -> Reproduction:
    """`pappo reproduce`: re-run the chosen runs of checkout `root`, or of `bundle` (zip or folder: its
    params, runs and source/ stand in for the checkout's), in `scratch` (default: a temporary folder,
    removed)."""
    with tempfile.TemporaryDirectory(prefix="pappo-reproduce-") as tmp:
        meta = None
        if bundle is not None:
            root = bundles.open_bundle(bundle, Path(tmp))
            meta = bundles.meta(root)
            params_path = root / "params.yaml"
        params = load_params(params_path)
        chosen = choose_runs(params, runs, sample)
        return reproduce(root, params, chosen, base, scratch or Path(tmp), log=log, bundle=meta)


def _evidence_commit(root: Path) -> str:
    """HEAD: the evidence commit (dvc.lock, the summary) whose train code the audit showed is the runs'."""
    evidence = ["dvc.lock", "params.yaml", "src"]
    head, status = (
        git(root, "rev-parse", "HEAD"),
        git(root, "status", "--porcelain", "--untracked-files=no", "--", *evidence),
    )
    if head.returncode != 0 or status.returncode != 0:
        raise PappoError(
            f"{root} is not a git work tree with a commit: reproduce in a clone of the repository, or "
            "pass --bundle ZIP to reproduce from the archive"
        )
    sha = head.stdout.decode().strip()
    if status.stdout.strip():
        raise PappoError(
            "dvc.lock, params.yaml or src/ differ from HEAD: commit them (or restore "
            "them) first; a reproduction re-runs the commit"
        )
    return sha


def _progress(
    i: int, n: int, name: str, done_planned: float, planned: list[float], elapsed: float, paced: float
) -> str:
    """`[2/5] seed_0/ppo: 41 s elapsed, ETA 80 s`: the published wall times, scaled by this machine's pace
    (`paced`: the seconds spent here on the steps done that have a published time; evidence from
    before the base model recorded its wall time has none there, so those minutes set no pace)."""
    width = 20
    bar = "#" * (width * i // max(1, n)) + "." * (width - width * i // max(1, n))
    remaining = sum(planned[i:])
    pace = paced / done_planned if done_planned > 0 else 1.0
    eta = f"ETA {remaining * pace:.0f} s" if i < n else "finished"
    return f"[{bar}] {i}/{n} {name}: {elapsed:.0f} s elapsed, {eta}"


def write(rep: Reproduction, path: Path) -> None:
    atomic_write_json(Path(path), rep.model_dump(mode="json"))
