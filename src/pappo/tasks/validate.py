"""`pappo validate`: check every task for real, then write the manifest lock atomically.

Per task: schema; the family tree still matches `files_sha256`; `bug_patch` applies and `patch`
restores the clean tree byte for byte; on the buggy tree every FAIL_TO_PASS test fails and every
PASS_TO_PASS test passes; on the clean tree every test passes; each run is repeated and must agree
test by test; runs are time-limited. Hidden checks: the clean tree reproduces their locked answers
and its asserts' operand types (the typed-assertion table) in every run; the bug fails a check.
The fixed tree is the clean family tree (checked by hash), so its runs are shared by the family's
tasks. Each task's candidate edits (`tasks/candidates.py`) are graded again by the full grader:
the fix succeeds, every other edit fails as `pappo candidates` recorded. This module prepares the
trees and makes the runs; `tasks/validate_checks.py` judges them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pappo.config import Params
from pappo.config.data import SandboxParams
from pappo.io import PappoError, atomic_write_json, sha256_bytes, tree_sha256
from pappo.sandbox.pool import default_pool
from pappo.sandbox.runner import TestRun, run_many
from pappo.tasks.candidates import candidates_path, read_candidates
from pappo.tasks.families import files_sha256, load_tree
from pappo.tasks.grade_table import GradeTable, build_table
from pappo.tasks.hidden import hidden_path, read_hidden
from pappo.tasks.manifest import read_manifest
from pappo.tasks.models import ManifestLock, SandboxRecord, Task
from pappo.tasks.patches import apply_patch
from pappo.tasks.splits import make_split
from pappo.tasks.validate_checks import (
    Prepared,
    check_families,
    check_hidden,
    check_task,
    check_typed,
    regrade_candidates,
)

TaskSet = Literal["repofix", "warmup"]


class ValidationFailed(PappoError):
    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__(f"{len(errors)} problem(s):\n" + "\n".join(f"  - {e}" for e in errors))


@dataclass(frozen=True)
class Validated:
    lock: ManifestLock
    n_runs: int  # sandboxed pytest runs made
    slowest_run_s: float  # kept out of the lock: timings differ from run to run
    grades: GradeTable  # every reachable tree's grade (tasks/grade_table.py)


def validate_set(task_set: TaskSet, params: Params) -> Validated:
    """Validate one task set; raise ValidationFailed listing every problem found."""
    sp = getattr(params.tasks, task_set)
    tasks, errors = read_manifest(sp.manifest)
    if errors:
        raise ValidationFailed(errors)
    errors += _check_counts(tasks, params.tasks.tasks_per_family, sp.manifest)
    splits = {}
    if task_set == "repofix":  # cheap, so checked before any test runs
        n_train, n_eval = params.tasks.n_train_families, params.tasks.n_eval_families
        try:
            seeds = [*params.seeds, *params.dev_seeds]  # each split depends on its own seed alone
            splits = {seed: make_split(tasks, seed, n_train, n_eval) for seed in seeds}
        except PappoError as e:
            errors.append(str(e))
    trees, prepared = _prepare(tasks, sp.repos, errors)
    _attach_hidden(prepared, hidden_path(sp.manifest), errors)
    _attach_candidates(prepared, candidates_path(sp.manifest), errors)
    if errors:
        raise ValidationFailed(errors)
    repeats = params.validate_.repeats
    clean_runs, bug_runs, hidden_runs = _run_all(trees, prepared, repeats, params.sandbox)
    families, family_tests = check_families(trees, clean_runs, errors)
    checks = [check_task(p, bug_runs[p.task.instance_id], family_tests, errors) for p in prepared]
    checks = [
        check_hidden(p, c, hidden_runs[p.task.instance_id], bug_runs[p.task.instance_id], errors)
        for p, c in zip(prepared, checks)
    ]
    checks = [check_typed(p, c, clean_runs.get(p.task.family, []), errors) for p, c in zip(prepared, checks)]
    # Candidates: one grade each; with the build's grade (the recorded n_failing) that is two agreeing runs.
    checks, graded = regrade_candidates(
        prepared, checks, trees, 1, params.sandbox, candidates_path(sp.manifest), errors
    )
    if errors:
        raise ValidationFailed(errors)
    all_runs = [r for runs in [*clean_runs.values(), *bug_runs.values(), *hidden_runs.values()] for r in runs]
    lock = ManifestLock(
        task_set=task_set,
        manifest_sha256=sha256_bytes(Path(sp.manifest).read_bytes()),
        hidden_checks_sha256=sha256_bytes(hidden_path(sp.manifest).read_bytes()),
        candidates_sha256=sha256_bytes(candidates_path(sp.manifest).read_bytes()),
        n_tasks=len(tasks),
        families={f: families[f] for f in sorted(families)},
        tasks=checks,
        splits=splits,
        sandbox=SandboxRecord(
            **params.sandbox.model_dump(
                include={"timeout_s", "test_timeout_s", "cpu_s", "memory_mb", "max_procs", "max_file_mb"}
            ),
            isolation=default_pool(params.sandbox).isolation,
        ),
        repeats=repeats,
    )
    table = build_table(*graded, sp.manifest, params.sandbox)
    return Validated(lock, len(all_runs), max(r.duration_s for r in all_runs), table)


def write_lock(lock: ManifestLock, path: Path) -> None:
    ManifestLock.model_validate(lock.model_dump())  # validated before it is written
    atomic_write_json(Path(path), lock.model_dump(mode="json"))


def _check_counts(tasks: list[Task], per_family: int, manifest: Path) -> list[str]:
    counts = Counter(t.family for t in tasks)
    return [
        f"{manifest}: family {f} has {n} tasks; params.yaml tasks.tasks_per_family is {per_family}"
        for f, n in sorted(counts.items())
        if n != per_family
    ]


def _prepare(
    tasks: list[Task], repos: Path, errors: list[str]
) -> tuple[dict[str, dict[str, bytes]], list[Prepared]]:
    trees: dict[str, dict[str, bytes]] = {}
    prepared: list[Prepared] = []
    for task in tasks:
        if task.family not in trees:
            try:
                trees[task.family] = load_tree(Path(repos) / task.family)
            except PappoError as e:
                errors.append(f"task {task.instance_id}: {e}")
                continue
        clean = trees[task.family]
        changed = sorted(set(files_sha256(clean).items()) ^ set(task.files_sha256.items()), key=str)
        if changed:
            paths = sorted({p for p, _ in changed})
            errors.append(
                f"task {task.instance_id}: family tree differs from files_sha256 "
                f"({', '.join(paths)}); re-run `pappo synthesize` or restore the files"
            )
            continue
        try:
            buggy = apply_patch(clean, task.bug_patch)
        except PappoError as e:
            errors.append(f"task {task.instance_id}: bug_patch does not apply: {e}")
            continue
        try:
            fixed = apply_patch(buggy, task.patch)
        except PappoError as e:
            errors.append(f"task {task.instance_id}: patch does not apply to the buggy tree: {e}")
            continue
        if tree_sha256(fixed) != tree_sha256(clean):
            errors.append(f"task {task.instance_id}: patch does not restore the clean family tree")
            continue
        if buggy == clean:
            errors.append(f"task {task.instance_id}: bug_patch changes nothing")
            continue
        prepared.append(Prepared(task, buggy))
    return trees, prepared


def _run_all(
    trees: dict[str, dict[str, bytes]], prepared: list[Prepared], repeats: int, limits: SandboxParams
) -> tuple[dict[str, list[TestRun]], dict[str, list[TestRun]], dict[str, list[TestRun]]]:
    """Clean trees, buggy trees (with the hidden checks), clean trees with each task's hidden checks."""
    jobs: list[tuple[object, ...]] = [(trees[f], None) for f in sorted(trees) for _ in range(repeats)]
    jobs += [(p.buggy, None, p.hidden.suite().spec(always=True)) for p in prepared for _ in range(repeats)]
    jobs += [
        (trees[p.task.family], [], p.hidden.suite().spec(always=True))
        for p in prepared
        for _ in range(repeats)
    ]
    runs = run_many(jobs, limits)
    clean = {f: runs[i * repeats : (i + 1) * repeats] for i, f in enumerate(sorted(trees))}
    offset, n = len(trees) * repeats, len(prepared) * repeats
    bug = {
        p.task.instance_id: runs[offset + i * repeats : offset + (i + 1) * repeats]
        for i, p in enumerate(prepared)
    }
    hidden = {
        p.task.instance_id: runs[offset + n + i * repeats : offset + n + (i + 1) * repeats]
        for i, p in enumerate(prepared)
    }
    return clean, bug, hidden


def _attach_hidden(prepared: list[Prepared], path: Path, errors: list[str]) -> None:
    _attach(prepared, path, read_hidden, "hidden", "hidden checks", "pappo hidden-checks", errors)


def _attach_candidates(prepared: list[Prepared], path: Path, errors: list[str]) -> None:
    _attach(prepared, path, read_candidates, "candidates", "candidate edits", "pappo candidates", errors)


def _attach(
    prepared: list[Prepared], path: Path, read, attr: str, what: str, command: str, errors: list[str]
) -> None:
    """Set each task's `attr` from the file at `path` (`read` parses it); a task lacking one is an error."""
    try:
        found = read(path)
    except PappoError as e:
        errors.append(str(e))
        return
    for p in prepared:
        setattr(p, attr, found.get(p.task.instance_id))
        if getattr(p, attr) is None:
            errors.append(f"task {p.task.instance_id}: no {what} in {path}; run `{command}`")
