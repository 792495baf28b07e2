"""`pappo audit`: what a reviewer runs. Integrity of every run's evidence, then the claims.

Claims are judged with the seed as the unit and against the tuning history read from git
(evidence/verdicts.py, evidence/history.py). Exit code: 0 integrity holds and every claim holds;
2 integrity holds but a claim does not hold, is inconclusive or exploratory; 1 integrity fails.
Each integrity failure names the file, the field, what was expected and what was found. The CLI
prints the verdict and writes it only with `--out` (the `audit` stage writes `receipts/audit.json`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params
from pappo.evidence import archived, recompute
from pappo.evidence.audit_context import AuditContext, AuditFailure
from pappo.evidence.committed import check_committed, describe, lock_stages
from pappo.evidence.dvc_cache import out_md5, read_out
from pappo.evidence.git_trees import GitTrees, git_output
from pappo.evidence.history import (
    HISTORY,
    IMPORTED_HISTORY,
    History,
    disagreement,
    from_record,
    read_history,
    with_record,
)
from pappo.evidence.numerics_audit import NumericsVerdict, numerics_verdict
from pappo.evidence.run_files import load_run
from pappo.evidence.summary import report_path
from pappo.evidence.verdicts import (
    ClaimVerdict,
    evaluate_claim,
    evaluate_claims,
    every_rule_holds,
    render_claim,
)
from pappo.experiment import receipt as rc
from pappo.experiment.report import RUN_METHODS, RunReport, params_subset, run_stage
from pappo.io import canonical_json, sha256_bytes, sha256_file
from pappo.policy.checkpoint import read_record
from pappo.stage_code import stage_code
from pappo.tasks.models import ManifestLock

__all__ = ["AuditVerdict", "ClaimVerdict", "audit", "evaluate_claim", "render"]


class AuditVerdict(BaseModel):
    """The audit's result, as written to receipts/audit.json."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    exit_code: Literal[0, 1, 2]
    integrity_ok: bool
    head: str | None = Field(description="The commit audited.")
    runs_checked: int
    failures: list[AuditFailure]
    claims: list[ClaimVerdict]
    numerics: NumericsVerdict | None = Field(
        description="The CPU numerics the evidence was computed with; None without runs."
    )
    scope: Literal["commit", "workspace"] = Field(
        "commit",
        description="commit: the evidence had to be HEAD's (a reviewer's audit); workspace: the audit "
        "stage's check of what its dvc repro just produced, before the commit.",
    )
    history: History | None = Field(
        None, description="The tuning history read from git (None in verdicts of older audits)."
    )
    verdict: str = Field(description="The readable verdict.")


def audit(
    params: Params,
    root: Path,
    runs: Path,
    base_dir: Path,
    schemas: Path,
    stage: bool = False,
    archive: archived.Archive | None = None,
) -> AuditVerdict:
    """Every check; claims are evaluated only on runs that passed integrity. `stage`: the audit
    stage inside dvc repro, which audits its workspace instead of requiring committed evidence.
    `archive`: root is an unpacked bundle, not a git checkout; its source/ stands in for git."""
    ctx = AuditContext(params, Path(root).resolve(), Path(runs), Path(base_dir), Path(schemas))
    reports: dict[tuple[int, str], RunReport] = {}
    receipts: dict[tuple[int, str], rc.Receipt] = {}
    for seed in params.seeds:
        for method in RUN_METHODS:
            loaded = load_run(ctx, seed, method)
            if loaded is not None:
                reports[seed, method], receipts[seed, method] = loaded
    _check_lock(ctx)
    if archive is None:
        _check_source(ctx, receipts)
    else:
        archived.check_source_tree(ctx.fail, ctx.runs, receipts, archive.source)
    _check_inputs(ctx, reports, receipts)
    _check_budgets(ctx, reports)
    _check_final_eval(ctx, reports)
    _check_recomputed(ctx, reports, receipts)
    if archive is None:
        scope = check_committed(ctx.fail, ctx.root, stage)
    else:
        archived.check_packaged(ctx.fail, ctx.root, archive.source)
        scope = "commit"
    history = _history(ctx, archive)
    claims = [] if ctx.failures else evaluate_claims(params.claims, reports, receipts, params.seeds, history)
    num = numerics_verdict(ctx, receipts)
    ok = not ctx.failures
    code: Literal[0, 1, 2] = 1 if not ok else (0 if every_rule_holds(claims) else 2)
    head = git_output(ctx.root, "rev-parse", "HEAD") if archive is None else archive.commit
    where = describe(scope) if archive is None else archived.describe(archive)
    return AuditVerdict(
        exit_code=code,
        integrity_ok=ok,
        head=head,
        runs_checked=len(reports),
        failures=ctx.failures,
        claims=claims,
        numerics=num,
        scope=scope,
        history=history,
        verdict=render(ok, ctx.failures, claims, num, history) + "\n" + where,
    )


def _history(ctx: AuditContext, archive: archived.Archive | None) -> History:
    """A bundle: the release's record (no git to read). A clone: its own git history, which must
    agree with the record of an imported bundle (IMPORTED_HISTORY), else integrity fails."""
    if archive is not None:
        record = ctx.root / HISTORY
        return from_record(record.read_bytes() if record.is_file() else None, "the bundle")
    here = read_history(ctx.root, ctx.params.seeds, ctx.params.claims)
    imported = ctx.root / IMPORTED_HISTORY
    if imported.is_file():
        record = from_record(imported.read_bytes(), "the imported bundle")
        why = disagreement(record, here, clone=True)
        if why is None and record.readable:
            return with_record(here, record)
        if why is not None:
            ctx.fail(
                imported,
                "configurations",
                "the clone's git history",
                why,
                "the release's tuning history is not this repository's: the bundle or the history was altered",
            )
    return here


def _check_recomputed(
    ctx: AuditContext, reports: dict[tuple[int, str], RunReport], receipts: dict[tuple[int, str], rc.Receipt]
) -> None:
    """Every published number re-derived from the per-task outcomes (evidence/recompute.py)."""
    for (seed, method), report in sorted(reports.items()):
        run = ctx.runs / f"seed_{seed}" / method
        recompute.check_report(ctx.fail, run, report, ctx.params)
        recompute.check_receipt(ctx.fail, run, report, receipts[seed, method])
    if len(reports) == len(ctx.params.seeds) * len(RUN_METHODS):  # a missing run is named already
        recompute.check_summary(ctx.fail, ctx.root, ctx.runs, ctx.params)
    try:
        record = read_record(ctx.base_dir).model_dump(mode="json")
    except (OSError, ValueError) as e:
        ctx.fail(ctx.base_dir / "checkpoint.json", "-", "the base checkpoint's record", "unreadable", str(e))
        return
    lock = ManifestLock.model_validate(json.loads(Path(ctx.params.tasks.repofix.lock).read_text()))
    split = lock.splits.get(ctx.params.base_model.eval_split_seed)
    recompute.check_base_model(
        ctx.fail, ctx.root, ctx.params, record, split.eval_instance_ids if split else []
    )


def _check_lock(ctx: AuditContext) -> None:
    """dvc.lock binds every output a run's stage wrote (md5, a folder's `.dir` manifest): an edited
    or swapped report, receipt, adapter or curve no longer matches, even where no receipt hash
    covers it, and a missing output fails."""
    path = ctx.root / "dvc.lock"
    if not path.is_file():
        ctx.fail(path, "-", "a file", "missing", "run dvc repro; the lock binds the outputs")
        return
    stages = lock_stages(path.read_text())
    names = [
        "base_model",
        "report",
        *dict.fromkeys(run_stage(s, m) for s in ctx.params.seeds for m in RUN_METHODS),
    ]
    for name in names:
        if name not in stages:
            ctx.fail(path, f"stages.{name}", "a locked stage", "missing", f"run `dvc repro {name}`")
            continue
        for out in stages[name].get("outs", []):
            file, want = ctx.root / out["path"], str(out.get("md5", ""))
            files = read_out(file)
            found = None if files is None else out_md5(files, is_dir=want.endswith(".dir"))
            if found is None:
                ctx.fail(
                    file, f"dvc.lock {name} md5", want, "missing", "a locked output is missing; dvc checkout"
                )
            elif found != want:
                ctx.fail(
                    file, f"dvc.lock {name} md5", out.get("md5"), found, "edited after dvc repro wrote it"
                )


def _check_source(ctx: AuditContext, receipts: dict[tuple[int, str], rc.Receipt]) -> None:
    """No uncommitted pipeline code; each receipt's commit exists, it binds the train stage's code
    (dvc.yaml at HEAD), its recorded tree is that commit's, and HEAD's is the same (else stale)."""
    dirty = git_output(ctx.root, "status", "--porcelain", "--untracked-files=normal", "--", *rc.SOURCE_PATHS)
    if dirty:
        ctx.fail(
            "(working tree)",
            "git status",
            "clean pipeline code",
            dirty.splitlines()[0],
            "uncommitted changes to the pipeline code; commit them and rerun",
        )
    try:
        paths = tuple(stage_code(ctx.root, "train", git_output(ctx.root, "show", "HEAD:dvc.yaml")))
    except (OSError, ValueError) as e:
        ctx.fail("dvc.yaml", "stages.train.deps", "the train stage's code", "none", str(e))
        return
    trees = GitTrees(ctx.root, paths)
    head_tree = trees.at("HEAD")
    for (seed, method), r in receipts.items():
        path = ctx.runs / f"seed_{seed}" / method / "receipt.json"
        s = r.source
        if s.git_dirty:
            ctx.fail(path, "source.git_dirty", False, True, "the run was made from uncommitted code")
        if sorted(s.source_paths) != sorted(paths):
            ctx.fail(
                path,
                "source.source_paths",
                sorted(set(paths) - set(s.source_paths)),
                sorted(set(s.source_paths) - set(paths)),
                "the receipt binds other code than the train stage's dvc.yaml dependencies (expected: the "
                "dependencies it does not bind; found: what it binds that is not one); rerun dvc repro",
            )
            continue
        if s.git_commit is None or not trees.is_commit(s.git_commit):
            ctx.fail(path, "source.git_commit", "a commit of this repository", s.git_commit, "unknown commit")
            continue
        if git_output(ctx.root, "merge-base", "--is-ancestor", s.git_commit, "HEAD") is None:
            ctx.fail(
                path,
                "source.git_commit",
                "a commit in HEAD's history",
                s.git_commit,
                "the run's commit is not an ancestor of HEAD (another branch's code); rerun dvc repro here",
            )
            continue
        at_commit = trees.at(s.git_commit)
        if at_commit != s.tree_sha256:
            ctx.fail(
                path, "source.tree_sha256", at_commit, s.tree_sha256, "the code that ran is not the commit's"
            )
        elif head_tree != s.tree_sha256:
            ctx.fail(
                path,
                "source.tree_sha256",
                head_tree,
                s.tree_sha256,
                f"stale evidence: the train stage's code changed since {s.git_commit[:12]}; rerun dvc repro",
            )


def _check_inputs(
    ctx: AuditContext, reports: dict[tuple[int, str], RunReport], receipts: dict[tuple[int, str], rc.Receipt]
) -> None:
    """Checkpoint revision, manifest lock, params and claims hashes, and the split, against now."""
    p = ctx.params
    record = read_record(ctx.base_dir)
    if p.model.profile == "hub" and record.revision != p.model.revision:
        ctx.fail(
            ctx.base_dir / "checkpoint.json",
            "revision",
            p.model.revision,
            record.revision,
            "not the pinned revision",
        )
    if p.model.profile == "hub" and not re.fullmatch(r"[0-9a-f]{40}", p.model.revision):
        ctx.fail(
            "params.yaml", "model.revision", "a 40-hex commit", repr(p.model.revision), "revision not pinned"
        )
    lock_path = Path(p.tasks.repofix.lock)
    lock = ManifestLock.model_validate(json.loads(lock_path.read_text()))
    manifest = Path(p.tasks.repofix.manifest)
    if sha256_file(manifest) != lock.manifest_sha256:
        ctx.fail(
            manifest,
            "sha256",
            lock.manifest_sha256,
            sha256_file(manifest),
            "the task manifest changed since validation; rerun dvc repro",
        )
    common = {"manifest_lock_sha256": sha256_file(lock_path), "claims_sha256": rc.claims_sha256(p)}
    for (seed, method), r in receipts.items():
        want = {**common, "params_sha256": sha256_bytes(canonical_json(params_subset(p, method)).encode())}
        path = ctx.runs / f"seed_{seed}" / method / "receipt.json"
        if r.checkpoint.revision != record.revision or r.checkpoint.files != record.files:
            ctx.fail(path, "checkpoint", record.revision, r.checkpoint.revision, "another base checkpoint")
        for field, value in want.items():
            if getattr(r.inputs, field) != value:
                what = (
                    "claims were edited after the run"
                    if field == "claims_sha256"
                    else "the input changed since"
                )
                ctx.fail(path, f"inputs.{field}", value, getattr(r.inputs, field), what)
    for (seed, method), rep in reports.items():
        split = lock.splits.get(seed)
        path = ctx.runs / f"seed_{seed}" / method / "report.json"
        if split is None or sorted(split.eval_instance_ids) != rep.eval_instance_ids:
            ctx.fail(
                path,
                "eval_instance_ids",
                "the lock's eval split",
                rep.eval_instance_ids[:3],
                "not the seed's split",
            )
        elif {t.instance_id for t in rep.final_eval.tasks} != set(split.eval_instance_ids):
            ctx.fail(
                path, "final_eval.tasks", "the eval split's tasks", "other tasks", "evaluated on other tasks"
            )


def _check_budgets(ctx: AuditContext, reports: dict[tuple[int, str], RunReport]) -> None:
    """Every trained method of a seed: the same limits and task draws, and within them."""
    for seed in ctx.params.seeds:
        rows = {m: reports[seed, m].budget for m in RUN_METHODS if (seed, m) in reports and m != "base"}
        keys = {(b.episodes_limit, b.generated_tokens_limit, b.task_draws_sha256) for b in rows.values()}
        if len(keys) > 1:
            ctx.fail(
                ctx.runs / f"seed_{seed}",
                "budget",
                "one budget for every method",
                {m: b.episodes_limit for m, b in rows.items()},
                "budgets are not matched",
            )
        for m, b in rows.items():
            if b.episodes_used != b.episodes_limit or b.generated_tokens_used > b.generated_tokens_limit:
                ctx.fail(
                    ctx.runs / f"seed_{seed}" / m / "report.json",
                    "budget",
                    f"{b.episodes_limit} episodes, <= {b.generated_tokens_limit} tokens",
                    f"{b.episodes_used} episodes, {b.generated_tokens_used} tokens",
                    "budget not as planned",
                )


def _check_final_eval(ctx: AuditContext, reports: dict[tuple[int, str], RunReport]) -> None:
    """Each run's published result is its evaluation after its last update (base: update 0): a
    policy picked at an earlier update because it scored best on the held-out tasks would be
    selected on the test set (with `eval.intermediate: full` the reports would not show it)."""
    for (seed, method), rep in reports.items():
        last = 0 if method == "base" else ctx.params.rl.updates
        path = report_path(ctx.runs, seed, method)
        found = rep.evals[-1].update if rep.evals else None
        if found != last:
            ctx.fail(
                path, "evals[-1].update", last, found, "the last evaluation is not after the last update"
            )
        elif rep.final_eval != rep.evals[-1].result:
            ctx.fail(
                path,
                "final_eval",
                "evals[-1].result",
                "another evaluation",
                "the published result is not the last evaluation",
            )


def render(
    ok: bool,
    failures: list[AuditFailure],
    claims: list[ClaimVerdict],
    num: NumericsVerdict | None,
    history: History | None = None,
) -> str:
    """The verdict as a reviewer reads it."""
    lines = [f"integrity: {'OK' if ok else f'FAILED ({len(failures)} problems)'}"]
    if num is not None:
        lines.append(f"numerics: {num.comparison}: {num.reason}")
    if history is not None:
        lines.append(f"tuning history: {history.reason}")
    lines += [
        f"  - {f.file} [{f.field}]: {f.message} (expected {f.expected}, found {f.found})" for f in failures
    ]
    for c in claims:
        lines += render_claim(c)
    return "\n".join(lines)
