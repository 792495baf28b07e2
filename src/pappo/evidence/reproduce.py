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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params, load_params
from pappo.evidence import bundle as bundles
from pappo.evidence.audit import evaluate_claim
from pappo.evidence.summary import METRICS
from pappo.experiment import receipt as rc
from pappo.experiment.report import RUN_METHODS, RunReport
from pappo.io import PappoError, atomic_write_json
from pappo.numerics import NumericsInfo, comparison

RunId = tuple[int, str]


class MetricCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric: str
    published: float
    lo: float = Field(description="Published 95% interval, lower end.")
    hi: float
    reproduced: float
    difference: float = Field(description="reproduced - published.")
    inside: bool = Field(description="The reproduced value lies in the published 95% interval.")


class RunCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: str = Field(description="'seed_0/ppo' or 'base_model'.")
    comparison: Literal["bitwise", "intervals"]
    reason: str = Field(description="Why this comparison: the two numerics (src/pappo/numerics.py).")
    identical: bool = Field(
        description="Bit for bit the same (report minus timing, adapters or checkpoint files)."
    )
    first_difference: str | None = Field(description="Where the bits first differ (None when identical).")
    metrics: list[MetricCheck]
    wall_s: float = Field(description="Seconds the re-run took here.")


class ClaimCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    published_holds: bool
    reproduced_holds: bool = Field(description="With the reproduced runs in place of the published ones.")
    published_delta: float
    reproduced_delta: float


class Reproduction(BaseModel):
    """`reproduction.json`: what was re-run here, how it was compared and the outcome."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    commit: str = Field(description="The commit re-run: the published evidence's (dvc.lock, summary), HEAD.")
    code_from: Literal["git clone", "bundle source"] = Field(
        "git clone",
        description="Where the re-run code came from: a clone of the repository at `commit`, or "
        "(no repository at hand) the evidence bundle's source/ committed into a scratch git repository here: "
        "the same files (git tree id checked against the bundle's swhid_dir), not the original .git.",
    )
    runs: list[RunCheck]
    claims: list[ClaimCheck]
    reproduced: bool = Field(
        description="Every bitwise run identical, every interval run inside, every claim the same."
    )
    wall_s: float
    verdict: str


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


def without_timing(obj: Any) -> Any:
    """A report minus its timing fields (RunReport TIMING_FIELDS: `timing`, `updates[*].wall_s`)."""
    if isinstance(obj, dict):
        return {k: without_timing(v) for k, v in obj.items() if k not in ("timing", "wall_s")}
    if isinstance(obj, list):
        return [without_timing(v) for v in obj]
    return obj


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}".lstrip(".")
            if (d := _first_difference(a[k], b[k], f"{where}.{k}")) is not None:
                return d.lstrip(".")
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where} (length)"
        return next(
            (d for i, (x, y) in enumerate(zip(a, b)) if (d := _first_difference(x, y, f"{where}[{i}]"))), None
        )
    return None if a == b and type(a) is type(b) else (where.lstrip(".") or "-")


def compare_run(
    name: str,
    published: dict[str, Any],
    reproduced: dict[str, Any],
    mine: NumericsInfo,
    theirs: NumericsInfo,
    wall_s: float,
) -> RunCheck:
    """Bits when the numerics match, intervals otherwise (`published`/`reproduced`: report JSON)."""
    kind, why = comparison(theirs, mine)
    first = _first_difference(without_timing(published), without_timing(reproduced))
    pub, rep = RunReport.model_validate(published).final_eval, RunReport.model_validate(reproduced).final_eval
    metrics = []
    for m in METRICS:
        i, x = getattr(pub, m), getattr(rep, m).mean
        metrics.append(
            MetricCheck(
                metric=m,
                published=i.mean,
                lo=i.lo,
                hi=i.hi,
                reproduced=x,
                difference=x - i.mean,
                inside=i.lo <= x <= i.hi,
            )
        )
    return RunCheck(
        run=name,
        comparison="bitwise" if kind == "bitwise" else "intervals",
        reason=why,
        identical=first is None,
        first_difference=first,
        metrics=metrics,
        wall_s=wall_s,
    )


def compare_base(published: dict[str, Any], reproduced: dict[str, Any], wall_s: float) -> RunCheck:
    """The base model: checkpoint files and per-episode outcomes; success rates as metrics."""
    theirs, mine = (NumericsInfo.model_validate(d["numerics"]) for d in (published, reproduced))
    kind, why = comparison(theirs, mine)
    first = _first_difference(without_timing(published), without_timing(reproduced))
    metrics = []
    for mode in ("greedy", "sampled"):
        p, r = published["eval"][mode]["success_rate"], reproduced["eval"][mode]["success_rate"]
        n = max(1, published["eval"]["n_tasks"])
        half = 1.96 * (p * (1 - p) / n) ** 0.5  # the stage reports no interval: a normal one over its tasks
        metrics.append(
            MetricCheck(
                metric=f"{mode}_success",
                published=p,
                lo=max(0.0, p - half),
                hi=min(1.0, p + half),
                reproduced=r,
                difference=r - p,
                inside=p - half <= r <= p + half,
            )
        )
    return RunCheck(
        run="base_model",
        comparison="bitwise" if kind == "bitwise" else "intervals",
        reason=why,
        identical=first is None,
        first_difference=first,
        metrics=metrics,
        wall_s=wall_s,
    )


def check_claims(
    params: Params,
    published: dict[RunId, RunReport],
    receipts: dict[RunId, rc.Receipt],
    reproduced: dict[RunId, RunReport],
) -> list[ClaimCheck]:
    """Every claim on the published runs, and again with the reproduced ones in their place."""
    mixed = {**published, **reproduced}
    out = []
    for claim in params.claims:
        a = evaluate_claim(claim, published, receipts, params.seeds)
        b = evaluate_claim(claim, mixed, receipts, params.seeds)
        out.append(
            ClaimCheck(
                id=claim.id,
                published_holds=a.holds,
                reproduced_holds=b.holds,
                published_delta=a.delta,
                reproduced_delta=b.delta,
            )
        )
    return out


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
    commits = {receipts[k].source.git_commit for k in published} - {None}
    if len(commits) != 1:
        raise PappoError(
            f"the published runs name {len(commits)} commits ({sorted(commits)[:3]}); run `pappo audit` "
            "first: a reproduction needs evidence of one commit"
        )
    t0 = time.perf_counter()
    if bundle is not None:
        sha = str(bundle.get("commit"))
        clone = prepare_tree(root, str(bundle.get("swhid_dir")), Path(scratch), base)
    else:
        sha = _evidence_commit(root)
        clone = prepare_clone(root, sha, Path(scratch), base)
    clone_params = load_params(clone / "params.yaml")
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
            checks.append(
                compare_run(
                    name,
                    pub,
                    json.loads((out / "report.json").read_text()),
                    mine,
                    receipts[key].determinism.numerics,
                    time.perf_counter() - start,
                )
            )
            reproduced[key] = RunReport.model_validate_json((out / "report.json").read_bytes())
        done_s += planned[i]
        paced_s += time.perf_counter() - start if planned[i] > 0 else 0.0
    log(_progress(len(steps), len(steps), "done", done_s, planned, time.perf_counter() - t0, paced_s))
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
    sha = _sh(["git", "rev-parse", "HEAD"], root).strip()
    evidence = ["dvc.lock", "params.yaml", "src"]
    if _sh(["git", "status", "--porcelain", "--untracked-files=no", "--", *evidence], root):
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
