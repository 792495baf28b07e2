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
        candidate = apply_patch_file(candidate, patch)
    require_containment(params.sandbox)
    with SandboxPool(params.sandbox, workers=1) as pool:
        return grade(pool, task, store.clean(task), candidate, store.hidden)


def read_patch(patch: Path) -> str:
    """The text of the diff file `patch`, read as bytes: read_text()'s universal newlines would drop
    the \r of a CRLF file's lines, and the diff would then not apply to that file."""
    if patch.is_dir():
        raise PappoError(f"--patch {patch}: is a directory; pass a diff file (`git diff > fix.diff`)")
    if not patch.is_file():
        raise PappoError(f"--patch {patch}: no such file")
    try:
        return patch.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise PappoError(
            f"--patch {patch}: not a UTF-8 text diff (byte {e.start}); pass a git diff of the task's tree"
        ) from None


def apply_patch_file(files: dict[str, bytes], patch: Path) -> dict[str, bytes]:
    """`files` with the diff file `patch` applied; a refusal names the file."""
    text = read_patch(patch)
    try:
        return apply_git_patch(files, text)
    except PappoError as e:
        raise PappoError(f"--patch {patch}: {e}; make the diff against the task's buggy tree") from None
