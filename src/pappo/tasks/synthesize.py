"""`pappo synthesize`: enumerate mutants per family, keep the ones real tests catch, pick tasks.

A mutant is kept when it parses, at least one test fails on it, every other test still passes,
no test times out or goes uncollected, and two runs agree test by test. Selection then picks
`tasks_per_family` tasks per family with varied operators and difficulty.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pappo.config import Params
from pappo.config.data import SandboxParams, SynthesisParams
from pappo.io import PappoError
from pappo.sandbox.runner import TestRun, run_many
from pappo.tasks.families import (
    check_families,
    files_sha256,
    is_test_file,
    list_families,
    load_tree,
    source_files,
)
from pappo.tasks.models import OPERATORS, Task, valid_test_id
from pappo.tasks.mutations import Mutant, enumerate_mutants
from pappo.tasks.patches import apply_git_patch, apply_patch, changed_lines, make_patch
from pappo.tasks.statements import problem_statement


@dataclass(frozen=True)
class Candidate:
    mutant: Mutant
    failing: list[str]
    passing: list[str]
    difficulty: str
    statement: str


def candidate_order(files: dict[str, bytes], family: str, seed: int) -> list[Mutant]:
    """All mutants of the family's source, interleaved across operators in a seeded order."""
    by_op: dict[str, list[Mutant]] = {op: [] for op in OPERATORS}
    for path, data in source_files(files).items():
        for m in enumerate_mutants(path, data.decode()):
            by_op[m.operator].append(m)
    rng = random.Random(f"synthesize:{seed}:{family}")  # str seeds hash the same in every process
    ops = [op for op in OPERATORS if by_op[op]]
    rng.shuffle(ops)
    for op in ops:
        rng.shuffle(by_op[op])
    order: list[Mutant] = []
    for k in range(max((len(v) for v in by_op.values()), default=0)):
        order += [by_op[op][k] for op in ops if k < len(by_op[op])]
    return order


def check_clean_tree(family: str, files: dict[str, bytes], limits: SandboxParams) -> list[str]:
    """Run the clean family twice; every test must pass both times. Returns the test ids."""
    runs = run_many([(files, None), (files, None)], limits)
    for k, run in enumerate(runs, 1):
        bad = run.failing() or run.collect_errors
        if run.timed_out or run.infra_error or bad or not run.outcomes:
            raise PappoError(
                f"family {family}: clean tree does not pass its tests (run {k}): {run.describe()}"
            )
    if runs[0].outcomes != runs[1].outcomes:
        differ = sorted(
            t for t in {*runs[0].outcomes, *runs[1].outcomes} if len({r.outcomes.get(t) for r in runs}) > 1
        )
        raise PappoError(
            f"family {family}: flaky: clean-tree test outcomes differ between two runs for "
            + ", ".join(
                f"{t} ({' then '.join(str(r.outcomes.get(t, 'missing')) for r in runs)})" for t in differ[:5]
            )
        )
    ids = sorted(runs[0].outcomes)
    refused = [t for t in ids if not valid_test_id(t)]
    if refused:  # a Task would refuse them after every sandbox run; say so before the first mutant
        raise PappoError(
            f"family {family}: test ids the task format cannot hold: {', '.join(refused[:5])}; a test id is "
            "tests/<path>.py::[<Class>::]<name> with word characters (hyphens allowed in paths): "
            "rename the test file or function"
        )
    return ids


def evaluate(
    family: str,
    files: dict[str, bytes],
    mutants: list[Mutant],
    params: SynthesisParams,
    limits: SandboxParams,
    all_tests: list[str],
) -> list[Candidate]:
    """Run each mutant twice and keep the valid, deterministic ones."""
    trees = [{**files, m.path: m.source.encode()} for m in mutants]
    first = run_many([(t, all_tests) for t in trees], limits)
    kept = [(m, t, r) for m, t, r in zip(mutants, trees, first) if _usable(r, params)]
    second = run_many([(t, all_tests) for _, t, _ in kept], limits)
    tests = {p: d.decode() for p, d in files.items() if is_test_file(p) and p.endswith(".py")}
    out = []
    for (m, tree, run), again in zip(kept, second):
        if run.outcomes != again.outcomes:
            continue  # flaky mutant
        failing = run.failing()
        try:
            statement = problem_statement(tests, failing, run.failures)
        except (ValueError, KeyError, StopIteration, SyntaxError):
            continue
        if _leaks(statement, make_patch(files, tree)):
            continue
        difficulty = _difficulty(m, failing, run, tests, len(all_tests))
        out.append(Candidate(m, failing, run.passing(), difficulty, statement))
    return out


def _usable(run: TestRun, params: SynthesisParams) -> bool:
    if run.timed_out or run.infra_error or run.collect_errors:
        return False
    outcomes = set(run.outcomes.values())
    if outcomes & {"timeout", "missing", "skipped", "error"}:
        return False
    failing = run.failing()
    return 0 < len(failing) <= params.max_fail_fraction * len(run.outcomes)


def _leaks(statement: str, bug_patch: str) -> bool:
    """A statement must not quote the mutated source (it is written from tests only)."""
    return any(len(line.strip()) >= 8 and line.strip() in statement for line in changed_lines(bug_patch))


def _difficulty(m: Mutant, failing: list[str], run: TestRun, tests: dict[str, str], n_tests: int) -> str:
    """easy/medium/hard from three signals (docs/tasks.md): silent, few failing tests, indirect."""
    crash = any(run.failures.get(t, {}).get("exc_type") not in ("AssertionError", "Failed") for t in failing)
    few = len(failing) <= 2
    func = (m.function or "").split(".")[-1]
    direct = bool(func) and any(
        f"{func}(" in tests.get(run.failures.get(t, {}).get("test_file", ""), "") for t in failing
    )
    score = int(not crash) + int(few) + int(not direct)
    return "easy" if score <= 1 else "medium" if score == 2 else "hard"


def select(
    candidates: list[Candidate], k: int, usage: Counter[str], seed: int, family: str
) -> list[Candidate]:
    """Pick k candidates: new operators first, then new functions, operators rare across the
    whole set, varied difficulty; never two on the same line."""
    rng = random.Random(f"select:{seed}:{family}")
    pool = sorted(candidates, key=lambda c: (c.mutant.path, c.mutant.start, c.mutant.replacement))
    rng.shuffle(pool)
    chosen: list[Candidate] = []
    while len(chosen) < k:
        used_ops = {c.mutant.operator for c in chosen}
        used_lines = {(c.mutant.path, c.mutant.lineno) for c in chosen}
        used_funcs = {c.mutant.function for c in chosen}
        levels = Counter(c.difficulty for c in chosen)
        options = [c for c in pool if c not in chosen and (c.mutant.path, c.mutant.lineno) not in used_lines]
        if not options:
            break
        best = min(
            options,
            key=lambda c: (
                c.mutant.operator in used_ops,
                c.mutant.function in used_funcs,
                usage[c.mutant.operator],
                levels[c.difficulty],
                pool.index(c),
            ),
        )
        chosen.append(best)
    return chosen


def synthesize_family(
    repos: Path,
    family: str,
    params: SynthesisParams,
    limits: SandboxParams,
    k: int,
    usage: Counter[str],
) -> list[Task]:
    files = load_tree(repos / family)
    all_tests = check_clean_tree(family, files, limits)
    order = candidate_order(files, family, params.seed)[: params.max_candidates]
    candidates = evaluate(family, files, order, params, limits, all_tests)
    chosen = select(candidates, k, usage, params.seed, family)
    kinds = {c.mutant.operator for c in chosen}
    if len(chosen) < k or len(kinds) < params.min_operator_kinds:
        raise PappoError(
            f"family {family}: only {len(chosen)} usable tasks with {len(kinds)} operator kinds "
            f"from {len(order)} mutants ({len(candidates)} valid); strengthen its tests or raise "
            "synthesis.max_candidates in params.yaml"
        )
    usage.update(c.mutant.operator for c in chosen)
    chosen.sort(key=lambda c: (c.mutant.path, c.mutant.start, c.mutant.replacement))
    return [_task(family, n, c, files) for n, c in enumerate(chosen, 1)]


def _task(family: str, n: int, c: Candidate, files: dict[str, bytes]) -> Task:
    buggy = {**files, c.mutant.path: c.mutant.source.encode()}
    bug_patch, patch = make_patch(files, buggy), make_patch(buggy, files)
    where = f"family {family}: the {c.mutant.operator} bug at {c.mutant.path}:{c.mutant.lineno}"
    check_round_trip(where, files, buggy, bug_patch, patch)
    try:
        return Task(
            instance_id=f"{family}-{n:03d}",
            repo=family,
            family=family,
            problem_statement=c.statement,
            patch=patch,
            test_patch="",
            FAIL_TO_PASS=c.failing,
            PASS_TO_PASS=c.passing,
            bug_patch=bug_patch,
            operator=c.mutant.operator,
            difficulty=c.difficulty,
            files_sha256=files_sha256(files),
        )
    except ValidationError as e:  # a family the layout checks let through: say which, not a traceback
        why = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'task'}: {x['msg']}" for x in e.errors()[:3])
        raise PappoError(f"family {family}: task {family}-{n:03d} cannot be made: {why}") from e


def check_round_trip(
    where: str, clean: dict[str, bytes], buggy: dict[str, bytes], bug_patch: str, patch: str
) -> None:
    """`bug_patch` must turn the clean tree into the buggy one and `patch` turn it back, both with the
    strict applier validation uses and with `git apply` (an agent's tools): a task whose diffs no
    tool applies would be written, then fail every later step."""
    for tool, apply in (("pappo's strict apply", apply_patch), ("git apply", apply_git_patch)):
        try:
            ok = apply(clean, bug_patch) == buggy and apply(buggy, patch) == clean
            why = "" if ok else "it gives other bytes"
        except PappoError as e:
            ok, why = False, str(e)
        if not ok:
            raise PappoError(
                f"{where}: its bug_patch/patch do not round-trip with {tool} ({why}); the family's "
                "line endings or control characters confuse the diff: re-save its files with \\n line ends"
            )


def synthesize_set(params: Params, task_set: str, log: Callable[[str], None]) -> list[Task]:
    """Synthesise the bugs of every family of one task set (`pappo synthesize`; the caller writes the
    manifest once every later step succeeded too); the operator usage is shared across the set's
    families, so they draw different operators."""
    sp = getattr(params.tasks, task_set)
    usage: Counter[str] = Counter()
    tasks: list[Task] = []
    families = list_families(sp.repos)
    check_families(Path(sp.repos), families)  # every family's layout first, before any sandbox run
    for family in families:
        new = synthesize_family(
            sp.repos, family, params.synthesis, params.sandbox, params.tasks.tasks_per_family, usage
        )
        log(f"{task_set}/{family}: " + ", ".join(f"{t.operator}[{t.difficulty}]" for t in new))
        tasks += new
    log(f"{task_set}: {len(tasks)} tasks, operators {dict(sorted(usage.items()))}")
    return tasks
