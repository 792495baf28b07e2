"""Hidden differential checks per task, made from the clean family tree (the reference).

Build (`pappo hidden-checks`, also run by `pappo synthesize`): one sandboxed run of the clean tree
records the visible tests' entry calls (`sandbox.checks.Tracer`) and, per test, the exact operand
types of its asserts' `==`/`!=` (`sandbox.typed`: the task's typed-assertion table, which a second
clean run must reproduce). A task's seeds are the entry calls that reached the function the bug is
in (located from `bug_patch`; without one, the entry calls of its FAIL_TO_PASS tests). Seeds plus
their type-aware mutants (`amplify`) run on the clean tree twice and on the buggy tree once; a
check is kept when the clean tree answers it the same way twice with an encodable value or an
API-level exception. Seeds come first, then mutants the bug answers differently, then the rest, up to
`MAX_CHECKS` (visible calls the bug answers differently first, then at most `MAX_SEEDS` others,
then the mutants). The file stores inputs and the sha256 of the clean answers, never the answers:
the grader recomputes them from the clean tree, so nothing on disk tells a candidate what to
return.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params
from pappo.config.data import SandboxParams
from pappo.io import PappoError, atomic_write_text, canonical_json, read_model_lines
from pappo.sandbox.grading import HiddenSuite, outcomes_digest, same_outcome
from pappo.sandbox.pool import TestRun
from pappo.sandbox.runner import run_many
from pappo.tasks import amplify
from pappo.tasks.families import is_test_file
from pappo.tasks.models import Task
from pappo.tasks.patches import apply_patch, split_lines

MAX_CHECKS = 120  # per task: grading latency (docs/sandbox.md) is the limit
MAX_SEEDS = 40  # of them, at most this many are the visible calls themselves
MAX_CANDIDATES = 1200  # inputs tried per task before selection
# Exceptions an API raises on purpose; others (AttributeError, RecursionError...) on a mutated
# input mean the input left the API's domain, where a correct alternative fix may differ.
API_ERRORS = (
    "builtins:ValueError",
    "builtins:TypeError",
    "builtins:KeyError",
    "builtins:IndexError",
    "builtins:ZeroDivisionError",
    "builtins:OverflowError",
    "builtins:LookupError",
    "builtins:ArithmeticError",
    "decimal:InvalidOperation",
)


class HiddenChecks(BaseModel):
    """One line of `<manifest>.hidden_checks.jsonl`: a task's hidden checks (inputs only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    bug_function: str | None = Field(description="`module:qualname` the bug is in (None: not in a function).")
    roots: list[str] = Field(
        min_length=1, description="Family packages and test modules whose objects encode."
    )
    n_visible_calls: int = Field(ge=0, description="Distinct calls of FAIL_TO_PASS tests that reach the bug.")
    checks: list[dict[str, Any]] = Field(description="Call specs (`sandbox.checks`).")
    outcomes_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the clean tree's answers.")
    n_revealing: int = Field(ge=0, description="Checks the buggy tree answers differently.")
    uncovered: str | None = Field(None, description="Why no check reveals the bug (reported, not hidden).")
    typed_asserts: dict[str, dict[str, list[list[str]]]] = Field(
        description="Per FAIL_TO_PASS/PASS_TO_PASS test: assert site (`tests/test_x.py:<line>:<k>`) -> the "
        "[left, right] exact operand types of its `==`/`!=` on the clean tree (`sandbox.typed`)."
    )

    def suite(self) -> HiddenSuite:
        return HiddenSuite(
            self.instance_id,
            list(self.roots),
            list(self.checks),
            self.outcomes_sha256,
            typed_asserts=self.typed_asserts,
        )

    @property
    def typed_operands(self) -> int:
        """Operands whose exact types the grader checks: two per assert comparison site per test."""
        return 2 * sum(len(sites) for sites in self.typed_asserts.values())


def hidden_path(manifest: Path) -> Path:
    """Where a task set's hidden checks live: next to its manifest, outside every family tree."""
    return Path(manifest).with_name(Path(manifest).stem + ".hidden_checks.jsonl")


def read_hidden(path: Path) -> dict[str, HiddenChecks]:
    return {
        h.instance_id: h
        for _, h in read_model_lines(path, HiddenChecks, "hidden checks", "pappo hidden-checks")
    }


def write_hidden(path: Path, items: list[HiddenChecks]) -> None:
    atomic_write_text(Path(path), "".join(canonical_json(h.model_dump(mode="json")) + "\n" for h in items))


def family_roots(tree: dict[str, bytes]) -> list[str]:
    """Top-level packages of the family, plus its test modules (their helper classes encode too)."""
    packages = {p.split("/")[0] for p in tree if p.endswith("/__init__.py") and not is_test_file(p)}
    tests = {Path(p).stem for p in tree if is_test_file(p) and p.endswith(".py")}
    return sorted(packages | tests)


def bug_function(clean: dict[str, bytes], bug_patch: str) -> str | None:
    """`module:qualname` of the innermost function holding the first line the bug changes."""
    buggy = apply_patch(clean, bug_patch)
    for path in sorted(p for p in clean if p.endswith(".py") and buggy.get(p) != clean[p]):
        old, new = split_lines(clean[path].decode()), split_lines(buggy[path].decode())
        line = next((k + 1 for k, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        module = path[:-3].replace("/", ".").removesuffix(".__init__")
        found = _enclosing(ast.parse(clean[path]), line, [])
        return f"{module}:{found}" if found else None
    return None


def _enclosing(node: ast.AST, line: int, prefix: list[str]) -> str | None:
    for child in ast.iter_child_nodes(node):
        start = (
            min([child.lineno, *[d.lineno for d in getattr(child, "decorator_list", [])]])
            if hasattr(child, "lineno")
            else 0
        )
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and start <= line <= (
            child.end_lineno or 0
        ):
            inner = _enclosing(
                child,
                line,
                [*prefix, child.name] + (["<locals>"] if not isinstance(child, ast.ClassDef) else []),
            )
            if inner:
                return inner
            return ".".join([*prefix, child.name]) if not isinstance(child, ast.ClassDef) else None
    return None


@dataclass
class _Plan:
    task: Task
    buggy: dict[str, bytes]
    bug_fn: str | None
    seeds: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    n_visible: int


def build_family(
    tree: dict[str, bytes], tasks: list[Task], limits: SandboxParams
) -> tuple[list[HiddenChecks], list[str]]:
    """Hidden checks for the tasks of one family; problems are returned, one line per task."""
    roots = family_roots(tree)
    trace = run_many([(tree, None, None, {"roots": roots})], limits)[0]
    if trace.infra_error or trace.failing():
        return [], [
            f"family {tasks[0].family}: the clean tree's trace run failed: {trace.infra_error or trace.failing()[:3]}"
        ]
    plans = [_plan(t, tree, trace) for t in tasks]
    jobs: list[tuple[Any, ...]] = []
    for p in plans:
        spec = {"roots": roots, "checks": p.candidates, "always": True}
        jobs += [(tree, None, spec), (tree, None, spec), (p.buggy, None, spec)]
    *runs, again = run_many([*jobs, (tree, None)], limits)
    if again.types != trace.types:  # the typed-assertion tables must not depend on the run
        differ = sorted(
            t for t in set(trace.types) | set(again.types) if trace.types.get(t) != again.types.get(t)
        )
        return [], [
            f"family {tasks[0].family}: the asserts' operand types differ between two clean runs "
            f"in {differ[:3]}"
        ]
    out, problems = [], []
    for k, p in enumerate(plans):
        result = _select(p, roots, runs[3 * k : 3 * k + 3])
        if isinstance(result, str):
            problems.append(f"task {p.task.instance_id}: {result}")
        else:
            graded = [*p.task.FAIL_TO_PASS, *p.task.PASS_TO_PASS]
            out.append(
                result.model_copy(
                    update={"typed_asserts": {t: trace.types.get(t, {}) for t in sorted(graded)}}
                )
            )
    return out, problems


def _plan(task: Task, tree: dict[str, bytes], trace: TestRun) -> _Plan:
    bug_fn = bug_function(tree, task.bug_patch)
    entries = [(t["nodeid"], e) for t in trace.trace for e in t["entries"]]
    seeds = [e for _, e in entries if bug_fn in e["reached"]] if bug_fn else []
    if not seeds:  # no function, or never reached by name: the failing tests' own calls
        seeds = [e for n, e in entries if n in task.FAIL_TO_PASS]
    seeds = _unique([{k: v for k, v in e.items() if k != "reached"} for e in seeds])
    f2p = _unique(
        [
            {k: v for k, v in e.items() if k != "reached"}
            for n, e in entries
            if n in task.FAIL_TO_PASS and (not bug_fn or bug_fn in e["reached"])
        ]
    )
    pool: dict[str, dict[str, Any]] = {}
    for e in (e for _, e in entries):
        amplify.collect([*e["args"], *(v for _, v in e["kwargs"]), *([e["self"]] if e["self"] else [])], pool)
    mutants = _unique([m for s in seeds for m in amplify.mutate_call(s, pool)], exclude=seeds)
    random.Random(f"hidden:{task.instance_id}").shuffle(mutants)
    candidates = (seeds + mutants)[:MAX_CANDIDATES]
    return _Plan(task, apply_patch(tree, task.bug_patch), bug_fn, seeds, candidates, max(1, len(f2p)))


def _unique(specs: list[dict[str, Any]], exclude: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    seen = {amplify.key(s) for s in exclude}
    out = []
    for s in specs:
        if amplify.key(s) not in seen:
            seen.add(amplify.key(s))
            out.append(s)
    return out


def _select(p: _Plan, roots: list[str], runs: list[TestRun]) -> HiddenChecks | str:
    first, second, buggy = (r.hidden for r in runs)
    if first is None or second is None:
        return (
            f"the hidden-check runs did not complete on the clean tree ({runs[0].infra_error or 'no answer'})"
        )
    if buggy is None:  # the bug hangs or kills the run: every check fails on it
        buggy = [{"x": "no answer"}] * len(first)
    n_seeds = len(p.seeds)  # the visible calls themselves come first
    keep, revealing, rest = [], [], []
    for i, (c, a, b, bug) in enumerate(zip(p.candidates, first, second, buggy)):
        if a != b or not _usable(a, roots):
            continue
        target = keep if i < n_seeds else revealing if not same_outcome(a, bug) else rest
        target.append((c, a, same_outcome(a, bug)))
    seeds_revealing = [k for k in keep if not k[2]]
    seeds_other = [k for k in keep if k[2]]
    chosen = (seeds_revealing + seeds_other[:MAX_SEEDS] + revealing + rest + seeds_other[MAX_SEEDS:])[
        :MAX_CHECKS
    ]
    n_revealing = sum(not ok for _, _, ok in chosen)
    uncovered = None
    if not chosen:
        uncovered = "no deterministic, encodable check could be made from the visible tests' calls"
    elif not n_revealing:
        uncovered = "no check made from the visible tests' calls answers differently on the buggy tree"
    return HiddenChecks(
        instance_id=p.task.instance_id,
        bug_function=p.bug_fn,
        roots=roots,
        n_visible_calls=p.n_visible,
        checks=[c for c, _, _ in chosen],
        outcomes_sha256=outcomes_digest([a for _, a, _ in chosen]),
        n_revealing=n_revealing,
        uncovered=uncovered,
        typed_asserts={},
    )


def _usable(outcome: dict[str, Any], roots: list[str]) -> bool:
    if "r" in outcome:
        return True
    exc = outcome.get("x", "")
    return exc in API_ERRORS or exc.split(".")[0].split(":")[0] in roots


def build_set(manifest: Path, repos: Path, limits: SandboxParams) -> tuple[list[HiddenChecks], list[str]]:
    """Hidden checks for every task of a manifest, family by family, in manifest order."""
    from pappo.tasks.manifest import read_manifest

    tasks, errors = read_manifest(manifest)
    if errors:
        raise PappoError(f"{manifest}: invalid manifest:\n" + "\n".join(errors))
    return build_tasks(tasks, repos, limits)


def build_tasks(
    tasks: list[Task], repos: Path, limits: SandboxParams
) -> tuple[list[HiddenChecks], list[str]]:
    """Hidden checks for `tasks` (families under `repos`), in their order, and the problems found."""
    from pappo.tasks.families import load_tree

    by_family: dict[str, list[Task]] = {}
    for t in tasks:
        by_family.setdefault(t.family, []).append(t)
    built: dict[str, HiddenChecks] = {}
    problems: list[str] = []
    for family, mine in by_family.items():
        items, bad = build_family(load_tree(Path(repos) / family), mine, limits)
        built.update((h.instance_id, h) for h in items)
        problems += bad
    return [built[t.instance_id] for t in tasks if t.instance_id in built], problems


def spread(values: list[int]) -> str:
    """`min a / median b / max c` of counts, for a build's one-line summary."""
    v = sorted(values)
    return f"min {v[0]} / median {v[len(v) // 2]} / max {v[-1]}"


def refuse_problems(what: str, task_set: str, problems: list[str]) -> None:
    """A PappoError listing every problem of a set's build, before anything is written."""
    if problems:
        raise PappoError(
            f"{what} for {task_set}: nothing written:\n" + "\n".join(f"  - {p}" for p in problems)
        )


def build_hidden(params: Params, task_set: str, log: Callable[[str], None]) -> list[HiddenChecks]:
    """Build and write the hidden checks of one task set (`pappo hidden-checks`); nothing is written
    unless every task's checks were built."""
    sp = getattr(params.tasks, task_set)
    items, problems = build_set(sp.manifest, sp.repos, params.sandbox)
    refuse_problems("hidden checks", task_set, problems)
    save_hidden(hidden_path(sp.manifest), items, log)
    return items


def save_hidden(path: Path, items: list[HiddenChecks], log: Callable[[str], None]) -> None:
    """Write a set's hidden checks and say what they cover."""
    write_hidden(path, items)
    log(f"wrote {path}: {len(items)} tasks, checks per task {spread([len(h.checks) for h in items])}")
    for h in items:
        if h.uncovered:
            log(f"  {h.instance_id}: the bug is not covered by hidden checks: {h.uncovered}")
