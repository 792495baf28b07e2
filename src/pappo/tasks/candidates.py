"""Candidate edits per task (the `candidates` action mode): the contract, the file, the checks.

A task's candidates are single-hunk edits of its buggy tree: `edits[0]` is the fix (the task's
`patch` as one hunk), the rest are wrong edits that the full grader failed (at least one visible
test fails with the edit applied, so `run_tests` tells them from the fix). They are built by
`pappo candidates` (`tasks/candidate_build.py`, also run by `pappo synthesize`) and stored next to
the manifest as `<manifest>.candidates.jsonl`, one line per task; `pappo validate` grades them
again (`check_candidates`) and locks each line's sha256 and the file's.

The file is never shown to an agent: the environment shows the edits (path, line, before, after)
in an order shuffled per episode, never `origin` or which one is the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from pappo.io import PappoError, atomic_write_text, canonical_json, read_model_lines, tree_sha256

if TYPE_CHECKING:
    from pappo.sandbox.grading import Grade

MAX_WRONG = 11  # wrong edits stored per task: env.candidates.k may go up to 12
MAX_EDIT_LINES = 6  # a wrong edit replacing or adding more lines than this is not offered


class CandidateEdit(BaseModel):
    """One single-hunk edit of the buggy tree: lines `line`..`line+len(before)-1` of `path` become `after`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="File edited (relative posix path, never under tests/).")
    line: int = Field(
        ge=1, description="First line replaced, 1-based in the buggy file (an insertion goes before it)."
    )
    before: list[str] = Field(description="The lines replaced, without newlines (empty: a pure insertion).")
    after: list[str] = Field(description="The lines put in their place (empty: a pure deletion).")
    origin: str = Field(
        description="How it was made: 'fix', or the mutation operator and site (never shown)."
    )
    n_failing: int = Field(
        ge=0, description="Visible graded tests failing with the edit applied (0 for the fix)."
    )

    def apply(self, tree: Mapping[str, bytes]) -> dict[str, bytes]:
        """`tree` with this edit applied; PappoError if `before` is not at `line` of `path`."""
        if self.path not in tree:
            raise PappoError(f"candidate edit of {self.path}: no such file in the tree")
        lines = tree[self.path].decode().split("\n")
        at = self.line - 1
        if at > len(lines) or lines[at : at + len(self.before)] != self.before:
            raise PappoError(
                f"candidate edit of {self.path}: line {self.line} does not read {self.before[:1]!r}"
            )
        new = lines[:at] + self.after + lines[at + len(self.before) :]
        return {**tree, self.path: "\n".join(new).encode()}


class TaskCandidates(BaseModel):
    """One line of `<manifest>.candidates.jsonl`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    covered: list[str] = Field(
        description="`module:qualname` of the functions the FAIL_TO_PASS tests enter on "
        "the buggy tree, plus the bug's own (the sites wrong edits come from)."
    )
    edits: list[CandidateEdit] = Field(
        min_length=1, description="edits[0]: the fix; then wrong edits, best first."
    )
    shortfall: str | None = Field(None, description=f"Why fewer than {MAX_WRONG} wrong edits were found.")

    @property
    def fix(self) -> CandidateEdit:
        return self.edits[0]

    def shown(self, k: int) -> list[CandidateEdit]:
        """The edits an episode offers: the fix and the first k-1 wrong ones (fewer if the task has fewer)."""
        return self.edits[:k]


def candidates_path(manifest: Path) -> Path:
    """Where a task set's candidates live: next to its manifest, outside every family tree."""
    return Path(manifest).with_name(Path(manifest).stem + ".candidates.jsonl")


def read_candidates(path: Path) -> dict[str, TaskCandidates]:
    out: dict[str, TaskCandidates] = {}
    for n, c in read_model_lines(path, TaskCandidates, "candidate edits", "pappo candidates"):
        if c.instance_id in out:
            raise PappoError(f"{path}:{n}: task {c.instance_id} listed twice; re-run `pappo candidates`")
        out[c.instance_id] = c
    return out


def line_json(item: TaskCandidates) -> str:
    """A task's line of the file, as written (its sha256 goes into the lock)."""
    return canonical_json(item.model_dump(mode="json"))


def write_candidates(path: Path, items: Sequence[TaskCandidates]) -> None:
    atomic_write_text(Path(path), "".join(line_json(c) + "\n" for c in items))


def edit_between(
    old: Mapping[str, bytes], new: Mapping[str, bytes], origin: str, n_failing: int = 0
) -> CandidateEdit:
    """The single hunk turning tree `old` into `new` (they differ in one file; the hunk spans every change)."""
    changed = sorted(p for p in old if old[p] != new.get(p))
    if len(changed) != 1 or set(old) != set(new):
        raise PappoError(
            f"a candidate edit changes exactly one existing file; this one changes {changed or 'none'}"
        )
    path = changed[0]
    a, b = old[path].decode().split("\n"), new[path].decode().split("\n")
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    i1, i2, j1, j2 = ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]
    return CandidateEdit(
        path=path, line=i1 + 1, before=a[i1:i2], after=b[j1:j2], origin=origin, n_failing=n_failing
    )


def check_candidates(
    item: TaskCandidates,
    buggy: Mapping[str, bytes],
    clean: Mapping[str, bytes],
    grades: Sequence[Sequence[Grade]],
    where: str,
) -> list[str]:
    """Problems with one task's candidates, given `grades[r][i]`: repeat r of edit i's grade.

    The fix restores the clean tree and succeeds in every repeat; every other edit applies, yields
    a tree of its own, fails at least one visible test with the recorded `n_failing` in every repeat."""
    problems, seen = [], {tree_sha256(dict(buggy)): "the buggy tree"}
    for i, edit in enumerate(item.edits):
        field = f"{where}: edits[{i}] ({edit.path}:{edit.line})"
        try:
            tree = edit.apply(buggy)
        except PappoError as e:
            problems.append(f"{field}: does not apply to the buggy tree ({e})")
            continue
        key = tree_sha256(tree)
        if key in seen:
            problems.append(f"{field}: gives the same tree as {seen[key]}")
        seen.setdefault(key, f"edits[{i}]")
        if (i == 0) != (key == tree_sha256(dict(clean))):
            problems.append(
                f"{field}: "
                + (
                    "the fix does not restore the clean tree"
                    if i == 0
                    else "restores the clean tree: it is a fix, not a wrong edit"
                )
            )
        problems += _check_grades(edit, [g[i] for g in grades], i == 0, field)
    if len(item.edits) < 2:
        problems.append(
            f"{where}: no wrong edit; a task needs at least one ({item.shortfall or 'no reason given'})"
        )
    return problems


def _check_grades(edit: CandidateEdit, grades: list[Grade], is_fix: bool, field: str) -> list[str]:
    if any(g.infra_error for g in grades):
        return [
            f"{field}: sandbox error while grading ({next(g.infra_error for g in grades if g.infra_error)})"
        ]
    if is_fix:
        return [] if all(g.success for g in grades) else [f"{field}: the fix does not pass the grader"]
    if any(g.success or g.visible_pass for g in grades):
        return [f"{field}: passes the visible tests; a wrong edit must fail one (re-run `pappo candidates`)"]
    found = sorted({g.n_failing for g in grades})
    if found != [edit.n_failing]:
        return [
            f"{field}: n_failing {edit.n_failing} recorded, graded {found} (changed or not deterministic)"
        ]
    return []
