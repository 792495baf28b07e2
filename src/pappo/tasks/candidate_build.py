"""`pappo candidates`: build each task's candidate edits (the fix and validated-wrong edits).

Fault localisation: one sandboxed trace run of the buggy tree per task records the entry calls of
its FAIL_TO_PASS tests (`sandbox.checks.Tracer`); the functions those calls reach, plus the bug's
own function, are the covered functions. Line coverage is not recorded: a covered function counts
as executed as a whole. Wrong edits are mutants (`tasks.mutations`), ranked and interleaved from:

1. near misses: the clean file mutated on the lines the fix restores (the fix's site, another
   wrong content; for a removed branch, the branch put back with another bug);
2. neighbours: the buggy file mutated in the bug's function, nearest line first;
3. inverses: the bug's operator applied at the other covered sites (seeded order);
4. the other operators at the other covered sites (seeded order);
then, only where those run out, 5. the rest of the bug's file, nearest line first.
A site is covered when its function, or a function it is nested in, is covered.

Ranked edits are graded by the full grader in rounds until `MAX_WRONG` wrong ones are found; an
edit is kept when it fails at least one visible test (so `run_tests` tells it from the fix;
plausible-wrong edits, which pass the visible tests and fail hidden checks, are left out), has no
infra error and gives a tree no earlier edit gave. A task with fewer records why (`shortfall`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pappo.config import Params
from pappo.config.data import SandboxParams
from pappo.io import PappoError, tree_sha256
from pappo.sandbox.grading import Grade, HiddenSuite, grade_many
from pappo.sandbox.pool import SandboxPool, TestRun
from pappo.tasks.candidates import (
    MAX_EDIT_LINES,
    MAX_WRONG,
    CandidateEdit,
    TaskCandidates,
    candidates_path,
    edit_between,
    write_candidates,
)
from pappo.tasks.families import load_tree, source_files
from pappo.tasks.hidden import (
    HiddenChecks,
    bug_function,
    family_roots,
    hidden_path,
    read_hidden,
    refuse_problems,
    spread,
)
from pappo.tasks.manifest import read_manifest
from pappo.tasks.models import Task
from pappo.tasks.mutations import Mutant, enumerate_mutants
from pappo.tasks.patches import apply_patch

ROUND = 16  # ranked edits graded per round
MAX_ROUNDS = 4  # at most ROUND x MAX_ROUNDS gradings per task
NEIGHBOUR_LINES = 5  # without a bug function: mutants this close to the bug are its neighbours


@dataclass
class _Plan:
    task: Task
    clean: dict[str, bytes]
    buggy: dict[str, bytes]
    fix: CandidateEdit
    covered: list[str]
    ranked: list[CandidateEdit]


def module_of(path: str) -> str:
    return path[:-3].replace("/", ".").removesuffix(".__init__")


def covered_functions(trace: TestRun, task: Task, bug_fn: str | None) -> list[str]:
    """`module:qualname` (nested functions without `<locals>`) the FAIL_TO_PASS tests reach, plus the bug's."""
    reached = {
        q for t in trace.trace if t["nodeid"] in task.FAIL_TO_PASS for e in t["entries"] for q in e["reached"]
    }
    return sorted({q.replace(".<locals>", "") for q in reached | ({bug_fn} if bug_fn else set())})


def rank_wrong(
    task: Task, clean: dict[str, bytes], buggy: dict[str, bytes], fix: CandidateEdit, covered: list[str]
) -> list[CandidateEdit]:
    """Candidate wrong edits of the buggy tree, best first (see the module docstring); not yet graded."""
    bug_fn = (bug_function(clean, task.bug_patch) or "").replace(".<locals>", "")
    near = [m for m in enumerate_mutants(fix.path, clean[fix.path].decode()) if _on_fix(m, clean, fix)]
    near.sort(key=lambda m: (m.start, m.replacement))
    neighbours, inverses, others, rest = [], [], [], []
    for path, data in source_files(buggy).items():
        for m in enumerate_mutants(path, data.decode()):
            site = f"{module_of(path)}:{m.function}" if m.function else ""
            if path == fix.path and (
                _within(site, [bug_fn]) if bug_fn else abs(m.lineno - fix.line) <= NEIGHBOUR_LINES
            ):
                neighbours.append(m)
            elif _within(site, covered):
                (inverses if m.operator == task.operator else others).append(m)
            elif path == fix.path:
                rest.append(m)
    for group in (neighbours, rest):
        group.sort(key=lambda m: (abs(m.lineno - fix.line), m.start, m.replacement))
    rng = random.Random(f"candidates:{task.instance_id}")
    for group in (inverses, others):
        group.sort(key=lambda m: (m.path, m.start, m.replacement))
        rng.shuffle(group)
    out, seen = [], {tree_sha256(buggy), tree_sha256(clean)}
    ranked = [
        *_interleave([(near, clean), (neighbours, buggy), (inverses, buggy), (others, buggy)]),
        *((m, buggy) for m in rest),
    ]
    for m, base in ranked:
        tree = {**base, m.path: m.source.encode()}
        key = tree_sha256(tree)
        if key in seen:
            continue
        seen.add(key)
        edit = edit_between(buggy, tree, f"{m.operator}: {m.description} at {m.path}:{m.lineno}")
        if max(len(edit.before), len(edit.after)) <= MAX_EDIT_LINES:
            out.append(edit)
    return out


def _within(site: str, functions: list[str]) -> bool:
    """`site` is one of `functions` or nested in one."""
    return bool(site) and any(site == f or site.startswith(f + ".") for f in functions if f)


def _on_fix(m: Mutant, clean: dict[str, bytes], fix: CandidateEdit) -> bool:
    """The mutant touches the lines the fix writes (in the clean file's numbering)."""
    data = clean[fix.path]
    first = data[: m.start].count(b"\n") + 1
    last = first + data[m.start : max(m.start, m.end - 1)].count(
        b"\n"
    )  # a span ending in a newline ends on that line
    lo, hi = fix.line, fix.line + max(len(fix.after), 1) - 1
    return first <= hi and last >= lo


def _interleave(
    groups: list[tuple[list[Mutant], dict[str, bytes]]],
) -> Iterator[tuple[Mutant, dict[str, bytes]]]:
    for k in range(max(len(g) for g, _ in groups)):
        for g, base in groups:
            if k < len(g):
                yield g[k], base


def build_set(manifest: Path, repos: Path, limits: SandboxParams) -> tuple[list[TaskCandidates], list[str]]:
    """Candidate edits of every task of a manifest (manifest order) and the problems found."""
    tasks, errors = read_manifest(manifest)
    if errors:
        raise PappoError(f"{manifest}: invalid manifest:\n" + "\n".join(errors))
    return build_tasks(tasks, list(read_hidden(hidden_path(manifest)).values()), repos, limits)


def build_tasks(
    tasks: list[Task], hidden_checks: list[HiddenChecks], repos: Path, limits: SandboxParams
) -> tuple[list[TaskCandidates], list[str]]:
    """Candidate edits of `tasks` (in their order), graded with their hidden checks, and the problems."""
    hidden = {h.instance_id: h.suite() for h in hidden_checks}
    trees = {f: load_tree(Path(repos) / f) for f in sorted({t.family for t in tasks})}
    built, problems = [], []
    with SandboxPool(limits) as pool:
        plans = _plans(pool, tasks, trees)
        for plan in plans:
            try:
                built.append(_select(pool, plan, hidden))
            except PappoError as e:
                problems.append(f"task {plan.task.instance_id}: {e}")
    return built, problems


def build_candidates(params: Params, task_set: str, log: Callable[[str], None]) -> list[TaskCandidates]:
    """Build and write the candidate edits of one task set (`pappo candidates`); nothing is written
    unless every task's edits were built."""
    sp = getattr(params.tasks, task_set)
    items, problems = build_set(sp.manifest, sp.repos, params.sandbox)
    refuse_problems("candidate edits", task_set, problems)
    save_candidates(candidates_path(sp.manifest), items, log)
    return items


def save_candidates(path: Path, items: list[TaskCandidates], log: Callable[[str], None]) -> None:
    """Write a set's candidate edits and say which tasks have fewer than MAX_WRONG wrong ones."""
    write_candidates(path, items)
    short = [c for c in items if c.shortfall]
    log(
        f"wrote {path}: {len(items)} tasks, wrong edits per task "
        f"{spread([len(c.edits) - 1 for c in items])}; {len(short)} with fewer than {MAX_WRONG}"
    )
    for c in short:
        log(f"  {c.instance_id}: {c.shortfall}")


def _plans(pool: SandboxPool, tasks: list[Task], trees: Mapping[str, dict[str, bytes]]) -> list[_Plan]:
    """Each task's fix and ranked wrong edits, from one trace run of its buggy tree."""
    buggy = {t.instance_id: apply_patch(trees[t.family], t.bug_patch) for t in tasks}
    jobs: list[tuple[Any, ...]] = [
        (buggy[t.instance_id], list(t.FAIL_TO_PASS), None, {"roots": family_roots(trees[t.family])})
        for t in tasks
    ]
    plans = []
    for task, trace in zip(tasks, pool.run_many(jobs)):
        if trace.infra_error:
            raise PappoError(
                f"task {task.instance_id}: the trace run of the buggy tree failed: {trace.infra_error}"
            )
        clean, bug = trees[task.family], buggy[task.instance_id]
        fix = edit_between(bug, clean, "fix")
        covered = covered_functions(trace, task, bug_function(clean, task.bug_patch))
        plans.append(_Plan(task, clean, bug, fix, covered, rank_wrong(task, clean, bug, fix, covered)))
    return plans


def _select(pool: SandboxPool, plan: _Plan, hidden: Mapping[str, HiddenSuite]) -> TaskCandidates:
    """Grade the fix and ranked edits in rounds; keep the first MAX_WRONG validated-wrong ones."""
    task, family = plan.task, plan.clean
    fix_grade = grade_many(pool, [(task, family, plan.fix.apply(plan.buggy))], hidden)[0]
    if not fix_grade.success:
        raise PappoError(
            f"the fix does not pass the grader ({fix_grade.infra_error or fix_grade.first_failure})"
        )
    wrong: list[CandidateEdit] = []
    dropped = {"passes the visible tests": 0, "infra error": 0}
    queue = list(plan.ranked)
    for _ in range(MAX_ROUNDS):
        batch, queue = queue[:ROUND], queue[ROUND:]
        if not batch or len(wrong) >= MAX_WRONG:
            break
        grades = grade_many(pool, [(task, family, e.apply(plan.buggy)) for e in batch], hidden)
        for edit, g in zip(batch, grades):
            why = _reject(g)
            if why:
                dropped[why] += 1
            elif len(wrong) < MAX_WRONG:
                wrong.append(edit.model_copy(update={"n_failing": g.n_failing}))
    shortfall = None
    if len(wrong) < MAX_WRONG:
        tried = len(plan.ranked) - len(queue)
        shortfall = (
            f"{len(wrong)} wrong edits from {tried} graded of {len(plan.ranked)} ranked mutants; "
            "dropped: " + ", ".join(f"{n} {why}" for why, n in dropped.items())
        )
    return TaskCandidates(
        instance_id=task.instance_id, covered=plan.covered, edits=[plan.fix, *wrong], shortfall=shortfall
    )


def _reject(g: Grade) -> str | None:
    if g.infra_error:
        return "infra error"
    if g.visible_pass or g.success:
        return "passes the visible tests"
    return None
