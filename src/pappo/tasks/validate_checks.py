"""The checks `pappo validate` makes of one task and of a family, given their sandboxed runs.

A family: its clean tree passes, with the same outcomes in every run. A task: FAIL_TO_PASS +
PASS_TO_PASS list the family's tests, every FAIL_TO_PASS test fails and every PASS_TO_PASS test
passes on the buggy tree, run after run; its hidden checks reproduce their locked answers on the
clean tree and the bug fails one; the clean runs' assert operand types match its typed-assertion
table; its candidate edits, graded again, fail or succeed as `pappo candidates` recorded. Each
check appends what it finds wrong to `errors` and gives a task that fails it None for a lock line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pappo.config.data import SandboxParams
from pappo.io import PappoError, canonical_json, sha256_bytes, tree_sha256
from pappo.sandbox.grading import Grade, grade_many, outcomes_digest, same_outcome
from pappo.sandbox.pool import default_pool
from pappo.sandbox.runner import TestRun
from pappo.tasks.candidates import TaskCandidates, check_candidates, line_json
from pappo.tasks.families import source_lines
from pappo.tasks.hidden import HiddenChecks
from pappo.tasks.models import FamilyLock, Task, TaskCheck


@dataclass
class Prepared:
    task: Task
    buggy: dict[str, bytes]
    hidden: HiddenChecks | None = None
    candidates: TaskCandidates | None = None


def task_sha256(task: Task) -> str:
    return sha256_bytes(canonical_json(task.model_dump(mode="json")).encode())


def check_families(
    trees: dict[str, dict[str, bytes]], clean_runs: dict[str, list[TestRun]], errors: list[str]
) -> tuple[dict[str, FamilyLock], dict[str, set[str]]]:
    """Lock entries of the families whose clean tree passes, and each one's test ids."""
    out: dict[str, FamilyLock] = {}
    tests: dict[str, set[str]] = {}
    for family, runs in clean_runs.items():
        bad = [(k, r) for k, r in enumerate(runs, 1) if _run_problem(r, "clean tree") or r.failing()]
        if bad or not runs[0].outcomes:
            k, run = bad[0] if bad else (1, runs[0])
            errors.append(f"family {family}: clean tree does not pass (run {k}): {run.describe()}")
            continue
        if any(r.outcomes != runs[0].outcomes for r in runs):
            errors.append(f"family {family}: flaky: clean-tree outcomes differ between runs{_differ(runs)}")
            continue
        out[family] = FamilyLock(
            tree_sha256=tree_sha256(trees[family]),
            n_tests=len(runs[0].outcomes),
            source_lines=source_lines(trees[family]),
        )
        tests[family] = set(runs[0].outcomes)
    return out, tests


def check_task(
    p: Prepared, runs: list[TestRun], family_tests: dict[str, set[str]], errors: list[str]
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
        errors.append(f"task {tid}: flaky: outcomes differ between runs{_differ(runs)}")
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
        hidden_fail_on_bug=False,  # filled in by check_hidden
        candidates=2,
        candidates_sha256="0" * 64,  # filled in by regrade_candidates
    )


def _run_problem(run: TestRun, limits_note: str) -> str | None:
    """Why a run cannot be judged (the deadline, the sandbox, collection, a test's own deadline),
    with what the sandbox said about it; None where its outcomes can be."""
    slow = any(o == "timeout" for o in run.outcomes.values())
    if run.timed_out or run.infra_error or run.collect_errors or slow:
        return f"{limits_note}: {run.describe()}"
    return None


def _differ(runs: list[TestRun]) -> str:
    """' for <test> (<outcome> then <outcome>...)', up to five tests whose outcomes differ."""
    tests = sorted({t for r in runs for t in r.outcomes})
    differ = [t for t in tests if len({r.outcomes.get(t) for r in runs}) > 1]
    return " for " + ", ".join(
        f"{t} ({' then '.join(str(r.outcomes.get(t, 'missing')) for r in runs)})" for t in differ[:5]
    )


def check_hidden(
    p: Prepared, check: TaskCheck | None, clean: list[TestRun], bug: list[TestRun], errors: list[str]
) -> TaskCheck | None:
    """The clean tree reproduces the locked answers in every run; the bug fails at least one check."""
    h, tid = p.hidden, p.task.instance_id
    if check is None or h is None:
        return None
    digests = [outcomes_digest(r.hidden) if r.hidden is not None else None for r in clean]
    if any(d != h.outcomes_sha256 for d in digests):
        why = _nondeterministic(h, clean) if len(set(digests)) > 1 else "differ from outcomes_sha256"
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


def _nondeterministic(h: HiddenChecks, clean: list[TestRun]) -> str:
    """Which checks the clean runs answered differently (the first three), for the message."""
    answers = [r.hidden for r in clean]
    if any(a is None or len(a) != len(h.checks) for a in answers):
        return (
            "are nondeterministic (a run gave no answers: "
            + "; ".join(r.infra_error or r.describe() for r in clean if r.hidden is None)
            + ")"
        )
    differ = [i for i in range(len(h.checks)) if len({canonical_json(a[i]) for a in answers}) > 1]
    named = ", ".join(f"checks[{i}] ({h.checks[i]['target']})" for i in differ[:3])
    return f"are nondeterministic: {named} differ between clean runs"


def check_typed(
    p: Prepared, check: TaskCheck | None, clean: list[TestRun], errors: list[str]
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


def regrade_candidates(
    prepared: list[Prepared],
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
