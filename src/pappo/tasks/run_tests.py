"""`pappo run-tests`: grade one task's buggy tree, or it with a git diff applied, in the sandbox, as an
episode's submission would be graded (public tests, then the hidden checks)."""

from __future__ import annotations

from pathlib import Path

from pappo.config import Params
from pappo.io import PappoError
from pappo.sandbox.grading import Grade, grade
from pappo.sandbox.pool import SandboxPool, require_containment
from pappo.tasks.patches import apply_git_patch
from pappo.tasks.store import find_task


def grade_task(params: Params, instance_id: str, patch: Path | None = None) -> Grade:
    """The grade of task `instance_id` (benchmark or warm-up) as is, or with the diff `patch` applied."""
    store, task = find_task(params, instance_id)
    candidate = store.buggy(task)
    if patch is not None:
        if not patch.is_file():
            raise PappoError(f"--patch {patch}: no such file")
        candidate = apply_git_patch(candidate, patch.read_text())
    require_containment(params.sandbox)
    with SandboxPool(params.sandbox, workers=1) as pool:
        return grade(pool, task, store.clean(task), candidate, store.hidden)
