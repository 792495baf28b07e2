"""The small interface most callers need: files in, per-test outcomes out.

`run_tests` / `run_many` use a process-wide warm pool (`pool.default_pool`) per set of limits;
callers that step many episodes manage a `pool.SandboxPool` themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pappo.config.data import SandboxParams
from pappo.sandbox.pool import Outcome, TestRun, default_pool

Limits = SandboxParams
__all__ = ["Limits", "Outcome", "TestRun", "run_many", "run_tests"]


def run_tests(files: Mapping[str, bytes], limits: Limits, test_ids: Sequence[str] | None = None) -> TestRun:
    """Run the family's pytest suite on an in-memory tree in a fresh sandboxed workspace."""
    return default_pool(limits).run(files, test_ids)


def run_many(
    jobs: Sequence[tuple[Mapping[str, bytes], Sequence[str] | None]], limits: Limits
) -> list[TestRun]:
    """Run several (files, test_ids) jobs on the pool's parallel workers, results in order."""
    return default_pool(limits).run_many(jobs)
