"""Trusted grading of a candidate tree for one task.

1. The static scan (`hackscan`) runs on the candidate; a hit is a `hack_attempt`, not run.
2. Test files are restored from the validated family tree: edited tests are reset, deleted tests
   come back, added files under tests/ and conftest.py files anywhere are dropped.
3. The restored tree runs in the sandbox; every FAIL_TO_PASS and PASS_TO_PASS test must be
   reported `passed` over the authenticated result channel. Missing, skipped, errored, timed-out
   or uncollected tests count as failed (`visible_pass`), and so does a test whose asserts'
   `==`/`!=` operands have other exact types than on the clean tree (`sandbox.typed`); a rigged
   type of the candidate's own there is a `hack_attempt`.
4. In the same run, after the tests, the task's hidden checks call the family's functions with
   inputs the agent never sees; the encoded answers (`sandbox.values`) are compared here, as data,
   with the clean tree's answers to the same inputs (`hidden_pass`). Grade = both.
5. A sandbox fault is an `infra_error`: reported, never turned into a failure of the policy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pappo.io import PappoError, sha256_bytes
from pappo.sandbox import typed
from pappo.sandbox.hackscan import is_test_path, scan
from pappo.sandbox.runner import TestRun

if TYPE_CHECKING:
    from pappo.sandbox.pool import SandboxPool
    from pappo.tasks.models import Task


@dataclass(frozen=True)
class Grade:
    """The grade of one candidate tree. `success` needs every graded test passed, no hack, no fault."""

    instance_id: str
    success: bool
    outcomes: dict[str, str]  # every FAIL_TO_PASS + PASS_TO_PASS id -> outcome ("not_run" if rejected)
    n_failing: int  # graded (visible) tests that did not pass
    hack_attempt: bool
    hack_reasons: list[str]
    infra_error: str | None
    restored: list[str]  # test paths put back or dropped before running
    first_failure: dict[str, Any] | None  # details of the first graded test that did not pass
    duration_s: float
    isolation: str  # how the run was contained ("namespaces" or "rlimits"; "" if not run)
    visible_pass: bool = False  # every graded visible test passed (the old grade)
    hidden_pass: bool = False  # every hidden check answered as the clean tree does
    hidden_failed: int = 0  # checks answered differently (never shown to the agent); 0 if not run
    # The checks run only when every visible test passed: otherwise the grade has failed anyway.
    hidden_total: int = 0
    typed_failed: int = 0  # graded tests that passed but whose asserts saw other operand types

    @property
    def plausible_wrong(self) -> bool:
        """Passes the visible tests, fails hidden checks: a wrong (or gamed) patch that looks right."""
        return (
            self.visible_pass and not self.hidden_pass and not self.hack_attempt and self.infra_error is None
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "plausible_wrong": self.plausible_wrong}


@dataclass
class HiddenSuite:
    """A task's hidden checks as the grader holds them: inputs, and the digest of the clean answers.

    The answers themselves are computed from the clean tree on first use (`expected`) and kept in
    memory only; they are checked against `outcomes_sha256`, which `pappo validate` locked."""

    instance_id: str
    roots: list[str]
    checks: list[dict[str, Any]]
    outcomes_sha256: str
    expected: list[dict[str, Any]] | None = field(default=None, repr=False)
    # Per graded test: assert site -> the clean tree's [left, right] operand types (None: not typed).
    typed_asserts: dict[str, dict[str, list[list[str]]]] | None = field(default=None, repr=False)

    def spec(self, always: bool = False) -> dict[str, Any]:
        """What the sandbox run needs; without `always` the checks run only if every test passed."""
        return {"roots": self.roots, "checks": self.checks, "always": always}


def same_outcome(a: Any, b: Any) -> bool:
    """Equal encodings (plain JSON data); floats within 1e-9 relative, as reordered sums differ.

    Every leaf sits under its type tag and floats travel as text, so plain `==` on the parsed JSON
    is exact; the walk below only runs where it found a difference (float tolerance)."""
    if a == b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_outcome(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) == 2 and len(b) == 2 and a[0] == b[0] == "dict" and _pairs(a[1]) and _pairs(b[1]):
            # A plain dict equals another with its keys in any order, as `==` (what the family's own
            # tests use) says; an OrderedDict ("odict") compares in order, as its `==` does.
            key = _pair_key
            pairs = zip(sorted(a[1], key=key), sorted(b[1], key=key))
            return len(a[1]) == len(b[1]) and all(same_outcome(x, y) for x, y in pairs)
        if len(a) == 2 and len(b) == 2 and a[0] == b[0] == "float":
            x, y = float(a[1]), float(b[1])
            return (
                x == y or (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
            )
        return len(a) == len(b) and all(same_outcome(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _pairs(items: Any) -> bool:
    """An encoded dict's items: [[key encoding, value encoding], ...] (not an object's [name, value])."""
    return isinstance(items, list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], list) for p in items
    )


def _pair_key(pair: list[Any]) -> str:
    return json.dumps(pair[0], sort_keys=True)


def outcomes_digest(outcomes: list[dict[str, Any]]) -> str:
    text = json.dumps(outcomes, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_bytes(text.encode())


def trusted_tree(
    family: Mapping[str, bytes], candidate: Mapping[str, bytes]
) -> tuple[dict[str, bytes], list[str]]:
    """The candidate with every test path taken from the validated `family` tree."""
    tree = {p: d for p, d in candidate.items() if not is_test_path(p)}
    restored = sorted(p for p in candidate if is_test_path(p) and family.get(p) != candidate[p])
    for path, data in family.items():
        if is_test_path(path):
            tree[path] = data
            if path not in candidate:
                restored.append(path)
    return dict(sorted(tree.items())), sorted(set(restored))


def grade_many(
    pool: SandboxPool,
    items: Sequence[tuple[Task, Mapping[str, bytes], Mapping[str, bytes]]],
    hidden: Mapping[str, HiddenSuite],
) -> list[Grade]:
    """Grade (task, validated family tree, candidate tree) triples; runs go to the pool in parallel.

    `hidden` holds every task's hidden checks (`TaskStore.hidden`); a task without any is an error."""
    missing = sorted({t.instance_id for t, _, _ in items if t.instance_id not in hidden})
    if missing:
        raise PappoError(f"no hidden checks for {', '.join(missing[:5])}; run `pappo hidden-checks`")
    _expect(pool, [(hidden[t.instance_id], family) for t, family, _ in items])
    prepared = []
    for task, family, candidate in items:
        tree, restored = trusted_tree(family, candidate)
        prepared.append((task, tree, restored, scan(family, candidate)))
    jobs = [
        (tree, _graded(task), hidden[task.instance_id].spec())
        for task, tree, _, reasons in prepared
        if not reasons
    ]
    runs = iter(pool.run_many(jobs))
    return [
        _rejected(task, restored, reasons)
        if reasons
        else _grade(task, next(runs), restored, hidden[task.instance_id])
        for task, _, restored, reasons in prepared
    ]


def grade(
    pool: SandboxPool,
    task: Task,
    family: Mapping[str, bytes],
    candidate: Mapping[str, bytes],
    hidden: Mapping[str, HiddenSuite],
) -> Grade:
    return grade_many(pool, [(task, family, candidate)], hidden)[0]


def _expect(pool: SandboxPool, suites: Sequence[tuple[HiddenSuite, Mapping[str, bytes]]]) -> None:
    """Fill `expected` of suites seen for the first time: the clean tree's answers, checked against
    the locked digest (a mismatch means the data or the family changed since `pappo validate`)."""
    todo = list({id(s): (s, fam) for s, fam in suites if s.expected is None}.values())
    if not todo:
        return
    runs = pool.run_many([(dict(fam), [], s.spec(always=True)) for s, fam in todo])
    for (suite, _), run in zip(todo, runs):
        if run.hidden is None or outcomes_digest(run.hidden) != suite.outcomes_sha256:
            why = run.infra_error or (
                "no answers: " + run.describe()
                if run.hidden is None
                else "answers differ from the locked digest: the family changed, or a check is nondeterministic"
            )
            raise PappoError(
                f"hidden checks of {suite.instance_id} do not reproduce on the clean tree ({why}); "
                "run `pappo validate`, or `pappo hidden-checks` if the family changed"
            )
        suite.expected = run.hidden


def _graded(task: Task) -> list[str]:
    return [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]


def _rejected(task: Task, restored: list[str], reasons: list[str]) -> Grade:
    outcomes = {t: "not_run" for t in _graded(task)}
    return Grade(
        task.instance_id, False, outcomes, len(outcomes), True, reasons, None, restored, None, 0.0, ""
    )


def _grade(task: Task, run: TestRun, restored: list[str], suite: HiddenSuite) -> Grade:
    outcomes = {t: run.outcomes.get(t, "missing") for t in _graded(task)}
    typed_problems, rigged = _typed(outcomes, run, suite)
    for t in typed_problems:
        outcomes[t] = "failed"
    failing = [t for t in _graded(task) if outcomes[t] != "passed"]
    hack = bool(run.tamper) or bool(rigged)
    first = None
    if failing:
        first = {"test": failing[0], "outcome": outcomes[failing[0]], **run.failures.get(failing[0], {})}
        if failing[0] in typed_problems:
            first.update(exc_type="TypedAssertion", message="\n".join(typed_problems[failing[0]][:3]))
    expected = suite.expected if suite.expected is not None else []
    answers = run.hidden if run.hidden is not None and len(run.hidden) == len(expected) else None
    visible_pass = not failing
    if not visible_pass and run.hidden is None:  # not run: the grade failed on the visible tests
        hidden_failed, hidden_pass = 0, False
    else:
        hidden_failed = (
            len(expected)
            if answers is None
            else sum(not same_outcome(a, e) for a, e in zip(answers, expected))
        )
        hidden_pass = suite.expected is not None and hidden_failed == 0
    success = visible_pass and hidden_pass and not hack and run.infra_error is None
    reasons = list(run.tamper) + [f"typed assertion: rigged comparison by {r}" for r in rigged]
    return Grade(
        instance_id=task.instance_id,
        success=success,
        outcomes=outcomes,
        n_failing=len(failing),
        hack_attempt=hack,
        hack_reasons=reasons,
        infra_error=run.infra_error,
        restored=restored,
        first_failure=first,
        duration_s=run.duration_s,
        isolation=run.isolation,
        visible_pass=visible_pass,
        hidden_pass=hidden_pass,
        hidden_failed=hidden_failed,
        hidden_total=len(expected),
        typed_failed=len(typed_problems),
    )


def _typed(
    outcomes: dict[str, str], run: TestRun, suite: HiddenSuite
) -> tuple[dict[str, list[str]], list[str]]:
    """Passed graded tests whose asserts' operand types differ from the clean tree's, and the
    candidate's rigged types among them (`typed.rigged`)."""
    problems: dict[str, list[str]] = {}
    rigged: list[str] = []
    if suite.typed_asserts is None:
        return problems, rigged
    for t, outcome in outcomes.items():
        expected, seen = suite.typed_asserts.get(t, {}), run.types.get(t, {})
        if outcome == "passed" and (why := typed.mismatches(expected, seen)):
            problems[t] = why
            rigged += [r for r in typed.rigged(expected, seen, suite.roots) if r not in rigged]
    return problems, rigged
