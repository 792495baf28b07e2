"""Trusted grading of a candidate tree for one task.

1. The static scan (`hackscan`) runs on the candidate; a hit is a `hack_attempt`, not run.
2. Test files are restored from the validated family tree: edited tests are reset, deleted tests
   come back, added files under tests/ and conftest.py files anywhere are dropped.
3. The restored tree runs in the sandbox; every FAIL_TO_PASS and PASS_TO_PASS test must be
   reported `passed` over the authenticated result channel. Missing, skipped, errored, timed-out
   or uncollected tests count as failed.
4. A sandbox fault is an `infra_error`: reported, never turned into a failure of the policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

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
    n_failing: int  # graded tests that did not pass
    hack_attempt: bool
    hack_reasons: list[str]
    infra_error: str | None
    restored: list[str]  # test paths put back or dropped before running
    first_failure: dict[str, Any] | None  # details of the first graded test that did not pass
    duration_s: float
    isolation: str  # how the run was contained ("namespaces" or "rlimits"; "" if not run)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def trusted_tree(family: Mapping[str, bytes], candidate: Mapping[str, bytes]) -> tuple[dict[str, bytes], list[str]]:
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
    pool: "SandboxPool", items: Sequence[tuple["Task", Mapping[str, bytes], Mapping[str, bytes]]]
) -> list[Grade]:
    """Grade (task, validated family tree, candidate tree) triples; runs go to the pool in parallel."""
    prepared = []
    for task, family, candidate in items:
        tree, restored = trusted_tree(family, candidate)
        prepared.append((task, tree, restored, scan(family, candidate)))
    jobs = [(tree, _graded(task)) for task, tree, _, reasons in prepared if not reasons]
    runs = iter(pool.run_many(jobs))
    return [
        _rejected(task, restored, reasons) if reasons else _grade(task, next(runs), restored)
        for task, _, restored, reasons in prepared
    ]


def grade(pool: "SandboxPool", task: "Task", family: Mapping[str, bytes], candidate: Mapping[str, bytes]) -> Grade:
    return grade_many(pool, [(task, family, candidate)])[0]


def _graded(task: "Task") -> list[str]:
    return [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]


def _rejected(task: "Task", restored: list[str], reasons: list[str]) -> Grade:
    outcomes = {t: "not_run" for t in _graded(task)}
    return Grade(task.instance_id, False, outcomes, len(outcomes), True, reasons, None, restored,
                 None, 0.0, "")  # fmt: skip


def _grade(task: "Task", run: TestRun, restored: list[str]) -> Grade:
    outcomes = {t: run.outcomes.get(t, "missing") for t in _graded(task)}
    failing = [t for t in _graded(task) if outcomes[t] != "passed"]
    hack = bool(run.tamper)
    first = None
    if failing:
        first = {"test": failing[0], "outcome": outcomes[failing[0]], **run.failures.get(failing[0], {})}
    success = not failing and not hack and run.infra_error is None
    return Grade(
        instance_id=task.instance_id, success=success, outcomes=outcomes, n_failing=len(failing),
        hack_attempt=hack, hack_reasons=list(run.tamper), infra_error=run.infra_error,
        restored=restored, first_failure=first, duration_s=run.duration_s, isolation=run.isolation,
    )  # fmt: skip
