"""Contracts of the task set: a task (SWE-bench fields plus ours) and the manifest lock."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Operator = Literal[
    "comparison_flip",
    "off_by_one",
    "bool_op_swap",
    "dropped_negation",
    "wrong_variable",
    "wrong_constant",
    "swapped_arguments",
    "removed_branch",
    "arithmetic_op",
    "wrong_default",
]
OPERATORS: tuple[str, ...] = Operator.__args__
Difficulty = Literal["easy", "medium", "hard"]

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"  # a family name (also the task ids' prefix)
_SHA = r"^[0-9a-f]{64}$"
# `file.py::test_x`, or in a class (unittest.TestCase or a pytest class, maybe nested):
# `file.py::TestX::test_y`; parametrised ids may hold spaces. What pytest collects: Python
# identifiers (Unicode word characters, `def test_größe`) and file names with hyphens
# (`tests/test_core-v2.py`); `\w` is Unicode-aware on str patterns.
_TEST_ID = r"^tests/[\w/-]+\.py(::[^\W\d]\w*)+(\[[^\n]*\])?$"


def valid_test_id(test_id: str) -> bool:
    """Whether a Task can hold this test id (FAIL_TO_PASS / PASS_TO_PASS)."""
    return re.match(_TEST_ID, test_id) is not None


class Task(BaseModel):
    """One repair task: a family's clean tree with `bug_patch` applied; `patch` repairs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str = Field(pattern=r"^[a-z][a-z0-9_]*-\d{3}$", description="Unique id, `<family>-NNN`.")
    repo: str = Field(pattern=NAME_PATTERN, description="SWE-bench `repo`: the family this task belongs to.")
    family: str = Field(pattern=NAME_PATTERN, description="Family folder name under the task set's repos/.")
    problem_statement: str = Field(min_length=40, description="User-style report of the failing behaviour.")
    patch: str = Field(min_length=1, description="The fix: unified diff from the buggy to the clean tree.")
    test_patch: str = Field("", description="SWE-bench field; empty here (tests are never changed).")
    FAIL_TO_PASS: list[str] = Field(
        min_length=1, description="Tests failing on the bug, passing after the fix."
    )
    PASS_TO_PASS: list[str] = Field(description="Tests passing both before and after the fix.")
    bug_patch: str = Field(min_length=1, description="Unified diff that injects the bug into the clean tree.")
    operator: Operator = Field(description="Mutation operator that made the bug.")
    difficulty: Difficulty = Field(description="Heuristic difficulty (see docs/tasks.md).")
    files_sha256: dict[str, str] = Field(
        min_length=1, description="sha256 of every file of the clean family tree, by relative path."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if self.repo != self.family:
            raise ValueError(f"repo {self.repo!r} must equal family {self.family!r}")
        if not self.instance_id.startswith(self.family + "-"):
            raise ValueError(f"instance_id {self.instance_id!r} must start with '{self.family}-'")
        if self.test_patch:
            raise ValueError("test_patch must be empty: RepoFix tasks never change tests")
        for tid in [*self.FAIL_TO_PASS, *self.PASS_TO_PASS]:
            if not valid_test_id(tid):
                raise ValueError(f"test id {tid!r} is not of the form tests/<file>.py::[<Class>::]<name>")
        overlap = set(self.FAIL_TO_PASS) & set(self.PASS_TO_PASS)
        if overlap:
            raise ValueError(f"tests in both FAIL_TO_PASS and PASS_TO_PASS: {sorted(overlap)}")
        if len(set(self.FAIL_TO_PASS)) != len(self.FAIL_TO_PASS) or len(set(self.PASS_TO_PASS)) != len(
            self.PASS_TO_PASS
        ):
            raise ValueError("FAIL_TO_PASS and PASS_TO_PASS must not repeat a test id")
        for path, digest in self.files_sha256.items():
            if not re.match(_SHA, digest) or path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"files_sha256 entry {path!r}: need a relative path and a sha256")
        return self


class TaskCheck(BaseModel):
    """What `pappo validate` established for one task (only passing tasks reach a lock)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    family: str
    task_sha256: str = Field(pattern=_SHA, description="sha256 of the task's canonical JSON.")
    fail_to_pass_fail_on_bug: bool = Field(description="Every FAIL_TO_PASS test failed on the bug.")
    fail_to_pass_pass_on_fix: bool = Field(description="Every FAIL_TO_PASS test passed after the fix.")
    pass_to_pass_pass_on_bug: bool = Field(description="Every PASS_TO_PASS test passed on the bug.")
    pass_to_pass_pass_on_fix: bool = Field(description="Every PASS_TO_PASS test passed after the fix.")
    runs: int = Field(ge=2, description="Buggy-tree runs that agreed test by test.")
    hidden_checks: int = Field(ge=0, description="Hidden differential checks of the task.")
    hidden_sha256: str = Field(
        pattern=_SHA, description="sha256 of the task's line in the hidden checks file."
    )
    hidden_pass_on_fix: bool = Field(description="The clean tree reproduced the locked answers in every run.")
    hidden_fail_on_bug: bool = Field(
        description="At least one hidden check fails on the buggy tree "
        "(False only where the hidden checks record why: `uncovered`)."
    )
    candidates: int = Field(
        ge=2, description="Candidate edits (the fix + validated-wrong ones), all graded as recorded."
    )
    candidates_sha256: str = Field(
        pattern=_SHA, description="sha256 of the task's line in the candidates file."
    )


class FamilyLock(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tree_sha256: str = Field(pattern=_SHA, description="Hash of the clean family tree.")
    n_tests: int = Field(ge=1, description="Tests collected on the clean tree.")
    source_lines: int = Field(ge=1, description="Lines of package source (tests excluded).")


class Split(BaseModel):
    """Split of one seed, BY FAMILY: no eval family has any task in training."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    train_families: list[str]
    eval_families: list[str]
    train_instance_ids: list[str]
    eval_instance_ids: list[str]

    @model_validator(mode="after")
    def _disjoint(self) -> Split:
        if set(self.train_families) & set(self.eval_families):
            raise ValueError("a family is in both train and eval")
        if set(self.train_instance_ids) & set(self.eval_instance_ids):
            raise ValueError("a task is in both train and eval")
        return self


class SandboxRecord(BaseModel):
    """How the checks of a lock were run: the sandbox limits and the isolation in force."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float
    test_timeout_s: float
    cpu_s: int
    memory_mb: int
    max_procs: int
    max_file_mb: int
    isolation: Literal["namespaces", "rlimits"] = Field(
        description="namespaces: no network, read-only host, own PID namespace; rlimits: limits only."
    )


class ManifestLock(BaseModel):
    """Written by `pappo validate` once every task of a set passed; binds hashes and splits.

    Holds no timings or other run-to-run noise: the same inputs give the same bytes, so a
    reviewer's `dvc repro` reproduces the hash recorded in dvc.lock.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[4] = 4
    task_set: Literal["repofix", "warmup"]
    manifest_sha256: str = Field(pattern=_SHA, description="sha256 of the manifest file bytes.")
    hidden_checks_sha256: str = Field(pattern=_SHA, description="sha256 of <manifest>.hidden_checks.jsonl.")
    candidates_sha256: str = Field(pattern=_SHA, description="sha256 of <manifest>.candidates.jsonl.")
    n_tasks: int = Field(ge=1)
    families: dict[str, FamilyLock]
    tasks: list[TaskCheck]
    splits: dict[int, Split] = Field(description="Per-seed split (benchmark only; empty for warm-up).")
    sandbox: SandboxRecord = Field(description="Sandbox limits and isolation the checks ran under.")
    repeats: int = Field(ge=2, description="Runs per check; all agreed test by test.")
