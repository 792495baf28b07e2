"""`pappo validate`: check every task for real, then write the manifest lock atomically.

Per task: schema; the family tree still matches `files_sha256`; `bug_patch` applies and `patch`
restores the clean tree byte for byte; on the buggy tree every FAIL_TO_PASS test fails and every
PASS_TO_PASS test passes; on the clean tree every test passes; each run is repeated and must agree
test by test; runs are time-limited. Hidden checks: the clean tree reproduces their locked answers
and its asserts' operand types (the typed-assertion table) in every run; the bug fails a check.
The fixed tree is the clean family tree (checked by hash), so its runs are shared by the family's
tasks. Each task's candidate edits (`tasks/candidates.py`) are graded again by the full grader:
the fix succeeds, every other edit fails as `pappo candidates` recorded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pappo.config import Params
from pappo.config.data import SandboxParams
from pappo.io import PappoError, atomic_write_json, canonical_json, sha256_bytes, tree_sha256
from pappo.sandbox.grading import Grade, grade_many, outcomes_digest, same_outcome
from pappo.sandbox.pool import default_pool
from pappo.sandbox.runner import TestRun, run_many
from pappo.tasks.candidates import (
    TaskCandidates,
    candidates_path,
    check_candidates,
    line_json,
    read_candidates,
)
from pappo.tasks.families import files_sha256, load_tree, source_lines
from pappo.tasks.grade_table import GradeTable, build_table
from pappo.tasks.hidden import HiddenChecks, hidden_path, read_hidden
from pappo.tasks.manifest import read_manifest
from pappo.tasks.models import FamilyLock, ManifestLock, SandboxRecord, Task, TaskCheck
from pappo.tasks.patches import apply_patch
from pappo.tasks.splits import make_split

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


@dataclass
class _Prepared:
    task: Task
    buggy: dict[str, bytes]
    hidden: HiddenChecks | None = None
    candidates: TaskCandidates | None = None


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
    families, family_tests = _check_families(trees, clean_runs, errors)
    checks = [_check_task(p, bug_runs[p.task.instance_id], family_tests, errors) for p in prepared]
    checks = [
        _check_hidden(p, c, hidden_runs[p.task.instance_id], bug_runs[p.task.instance_id], errors)
        for p, c in zip(prepared, checks)
    ]
    checks = [_check_typed(p, c, clean_runs.get(p.task.family, []), errors) for p, c in zip(prepared, checks)]
    # Candidates: one grade each; with the build's grade (the recorded n_failing) that is two agreeing runs.
    checks, graded = _check_candidates(
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


def task_sha256(task: Task) -> str:
    return sha256_bytes(canonical_json(task.model_dump(mode="json")).encode())


def _check_counts(tasks: list[Task], per_family: int, manifest: Path) -> list[str]:
    counts = Counter(t.family for t in tasks)
    return [
        f"{manifest}: family {f} has {n} tasks; params.yaml tasks.tasks_per_family is {per_family}"
        for f, n in sorted(counts.items())
        if n != per_family
    ]


def _prepare(
    tasks: list[Task], repos: Path, errors: list[str]
) -> tuple[dict[str, dict[str, bytes]], list[_Prepared]]:
    trees: dict[str, dict[str, bytes]] = {}
    prepared: list[_Prepared] = []
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
        prepared.append(_Prepared(task, buggy))
    return trees, prepared


def _run_all(
    trees: dict[str, dict[str, bytes]], prepared: list[_Prepared], repeats: int, limits: SandboxParams
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


def _attach_hidden(prepared: list[_Prepared], path: Path, errors: list[str]) -> None:
    _attach(prepared, path, read_hidden, "hidden", "hidden checks", "pappo hidden-checks", errors)


def _attach_candidates(prepared: list[_Prepared], path: Path, errors: list[str]) -> None:
    _attach(prepared, path, read_candidates, "candidates", "candidate edits", "pappo candidates", errors)


def _attach(
    prepared: list[_Prepared], path: Path, read, attr: str, what: str, command: str, errors: list[str]
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


def _check_hidden(
    p: _Prepared, check: TaskCheck | None, clean: list[TestRun], bug: list[TestRun], errors: list[str]
) -> TaskCheck | None:
    """The clean tree reproduces the locked answers in every run; the bug fails at least one check."""
    h, tid = p.hidden, p.task.instance_id
    if check is None or h is None:
        return None
    digests = [outcomes_digest(r.hidden) if r.hidden is not None else None for r in clean]
    if any(d != h.outcomes_sha256 for d in digests):
        why = "not deterministic" if len(set(digests)) > 1 else "differ from outcomes_sha256"
        errors.append(f"task {tid}: hidden checks: the clean tree's answers {why}; run `pappo hidden-checks`")
        return None
    answers = clean[0].hidden or []
    fails = [
        r.hidden is None or len(r.hidden) != len(answers) or not all(map(same_outcome, r.hidden, answers))
        for r in bug
    ]
    if len(set(fails)) > 1:
        errors.append(f"task {tid}: hidden checks: the buggy tree's answers differ between runs (flaky)")
        return None
    if not fails[0] and not h.uncovered:
        errors.append(
            f"task {tid}: hidden checks: no check fails on the buggy tree; run `pappo hidden-checks`"
        )
        return None
    line = canonical_json(h.model_dump(mode="json"))
    return check.model_copy(
        update={
            "hidden_checks": len(h.checks),
            "hidden_sha256": sha256_bytes(line.encode()),
            "hidden_pass_on_fix": True,
            "hidden_fail_on_bug": fails[0],
        }
    )


def _check_candidates(
    prepared: list[_Prepared],
    checks: list[TaskCheck | None],
    trees: dict[str, dict[str, bytes]],
    repeats: int,
    limits: SandboxParams,
    path: Path,
    errors: list[str],
) -> tuple[list[TaskCheck | None], tuple[list[Any], list[Grade]]]:
    """Grade every candidate edit `repeats` times and each buggy tree once (one batch on the pool);
    lock each task's line. Also returns the table's (instance_id, clean, tree) items and grades: the
    first repeat's candidates and the buggy trees of the tasks whose candidates check out."""
    todo = [
        (p, c) for p, c in zip(prepared, checks) if c is not None and p.candidates is not None and p.hidden
    ]
    hidden = {p.task.instance_id: p.hidden.suite() for p, _ in todo}
    items = [
        (p.task, trees[p.task.family], e.apply(p.buggy) if _applies(e, p.buggy) else p.buggy)
        for p, _ in todo
        for _ in range(repeats)
        for e in p.candidates.edits
    ] + [(p.task, trees[p.task.family], p.buggy) for p, _ in todo]
    graded = iter(grade_many(default_pool(limits), items, hidden) if items else [])
    out: dict[str, TaskCheck] = {}
    table: list[tuple[Any, Grade]] = []
    for p, check in todo:
        c = p.candidates
        n = len(c.edits)
        grades = [[next(graded) for _ in range(n)] for _ in range(repeats)]
        where = f"{path}: task {p.task.instance_id}"
        problems = check_candidates(c, p.buggy, trees[p.task.family], grades, where)
        errors.extend(problems)
        if not problems:
            out[p.task.instance_id] = check.model_copy(
                update={"candidates": n, "candidates_sha256": sha256_bytes(line_json(c).encode())}
            )
            table += [
                ((p.task.instance_id, trees[p.task.family], e.apply(p.buggy)), g)
                for e, g in zip(c.edits, grades[0])
            ]
    for p, _ in todo:  # the buggy trees, last in the batch
        g = next(graded)
        if p.task.instance_id in out:
            table.append(((p.task.instance_id, trees[p.task.family], p.buggy), g))
    checked = [out.get(c.instance_id) if c is not None else None for c in checks]
    return checked, ([item for item, _ in table], [g for _, g in table])


def _applies(edit: object, tree: dict[str, bytes]) -> bool:
    try:
        edit.apply(tree)
    except PappoError:
        return False  # reported by check_candidates
    return True


def _check_typed(
    p: _Prepared, check: TaskCheck | None, clean: list[TestRun], errors: list[str]
) -> TaskCheck | None:
    """Every clean run's asserts see exactly the operand types of the task's typed-assertion table."""
    h = p.hidden
    if check is None or h is None:
        return check
    for k, run in enumerate(clean, 1):
        seen = {t: run.types.get(t, {}) for t in h.typed_asserts}
        if set(h.typed_asserts) != {*p.task.FAIL_TO_PASS, *p.task.PASS_TO_PASS} or seen != h.typed_asserts:
            errors.append(
                f"task {p.task.instance_id}: typed assertions: the clean tree's operand types (run {k}) "
                "differ from `typed_asserts` of its hidden checks; run `pappo hidden-checks`"
            )
            return None
    return check


def _run_problem(run: TestRun, limits_note: str) -> str | None:
    if run.timed_out:
        return f"test run timed out ({limits_note})"
    if run.infra_error:
        return f"sandbox error: {run.infra_error}"
    if run.collect_errors:
        return f"tests could not be collected: {', '.join(run.collect_errors)}"
    slow = sorted(t for t, o in run.outcomes.items() if o == "timeout")
    if slow:
        return f"test(s) timed out: {', '.join(slow)}"
    return None


def _check_families(
    trees: dict[str, dict[str, bytes]], clean_runs: dict[str, list[TestRun]], errors: list[str]
) -> tuple[dict[str, FamilyLock], dict[str, set[str]]]:
    """Lock entries of the families whose clean tree passes, and each one's test ids."""
    out: dict[str, FamilyLock] = {}
    tests: dict[str, set[str]] = {}
    for family, runs in clean_runs.items():
        problems = [p for r in runs if (p := _run_problem(r, "clean tree"))]
        failing = sorted({t for r in runs for t in r.failing()})
        if problems or failing or not runs[0].outcomes:
            detail = "; ".join(problems) or (f"failing: {', '.join(failing)}" if failing else "no tests")
            errors.append(f"family {family}: clean tree does not pass: {detail}")
            continue
        if any(r.outcomes != runs[0].outcomes for r in runs):
            errors.append(f"family {family}: flaky: clean-tree outcomes differ between runs")
            continue
        out[family] = FamilyLock(
            tree_sha256=tree_sha256(trees[family]),
            n_tests=len(runs[0].outcomes),
            source_lines=source_lines(trees[family]),
        )
        tests[family] = set(runs[0].outcomes)
    return out, tests


def _check_task(
    p: _Prepared, runs: list[TestRun], family_tests: dict[str, set[str]], errors: list[str]
) -> TaskCheck | None:
    task, tid = p.task, p.task.instance_id
    if task.family not in family_tests:
        return None  # the family's clean tree already failed; reported once there
    all_tests = family_tests[task.family]
    listed = set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS)
    if listed != all_tests:
        missing, extra = sorted(all_tests - listed), sorted(listed - all_tests)
        errors.append(
            f"task {tid}: FAIL_TO_PASS + PASS_TO_PASS do not list the family's tests "
            f"(unlisted: {missing[:3]}, unknown: {extra[:3]}); re-run `pappo synthesize`"
        )
        return None
    for k, run in enumerate(runs, 1):
        if problem := _run_problem(run, "buggy tree"):
            errors.append(f"task {tid}: run {k}: {problem}")
            return None
    if any(r.outcomes != runs[0].outcomes for r in runs):
        diff = sorted(t for t in all_tests if len({r.outcomes.get(t) for r in runs}) > 1)
        errors.append(f"task {tid}: flaky: outcomes differ between runs for {', '.join(diff[:5])}")
        return None
    outcome = runs[0].outcomes
    still_pass = sorted(t for t in task.FAIL_TO_PASS if outcome.get(t) == "passed")
    broken = sorted(t for t in task.PASS_TO_PASS if outcome.get(t) != "passed")
    if still_pass:
        errors.append(
            f"task {tid}: the bug breaks no listed test: FAIL_TO_PASS test(s) pass on "
            f"the buggy tree: {', '.join(still_pass)}"
        )
    if broken:
        errors.append(f"task {tid}: PASS_TO_PASS test(s) fail on the buggy tree: {', '.join(broken)}")
    if still_pass or broken:
        return None
    return TaskCheck(
        instance_id=tid,
        family=task.family,
        task_sha256=task_sha256(task),
        fail_to_pass_fail_on_bug=True,
        fail_to_pass_pass_on_fix=True,
        pass_to_pass_pass_on_bug=True,
        pass_to_pass_pass_on_fix=True,
        runs=len(runs),
        hidden_checks=0,
        hidden_sha256="0" * 64,
        hidden_pass_on_fix=False,
        hidden_fail_on_bug=False,  # filled in by _check_hidden
        candidates=2,
        candidates_sha256="0" * 64,  # filled in by _check_candidates
    )
