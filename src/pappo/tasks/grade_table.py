"""The grade table: the sandbox grade of every tree a candidates-mode episode can reach, written by
`pappo validate` next to the manifest lock and read by every run.

In the candidates action mode a tree is the buggy tree or the buggy tree with one candidate edit
applied (`env/candidate_board.py`), so each task has a few reachable trees, and validate grades
every one of them in the sandbox anyway (each candidate edit to check it; the buggy tree once more
for this table). A run's grade cache (`env/vec.py`) starts from these grades instead of grading the
same trees again in every run; a tree outside the table (the free action mode's edits) is graded
live. Episodes do not change: the grader is deterministic per tree (validate's repeats check it)
and an episode reads no timing field of a grade. The table names the manifest, hidden checks,
candidates and sandbox limits it was made with; a run refuses a table made from others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params
from pappo.config.data import SandboxParams
from pappo.io import PappoError, atomic_write_json, sha256_bytes, tree_sha256
from pappo.sandbox.grading import Grade
from pappo.tasks.candidates import candidates_path
from pappo.tasks.hidden import hidden_path

Key = tuple[str, str, str]  # (instance_id, clean tree sha256, graded tree sha256), as env/vec.py's cache
LIMITS = ("timeout_s", "test_timeout_s", "cpu_s", "memory_mb", "max_procs", "max_file_mb")


class GradeRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instance_id: str
    clean_sha256: str
    tree_sha256: str
    grade: dict[str, Any] = Field(description="sandbox/grading.py Grade, field by field.")


class GradeTable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = 1
    made_with: dict[str, Any] = Field(description="Input hashes and sandbox limits (`made_with`).")
    rows: list[GradeRow]


def grades_path(lock: Path) -> Path:
    """Where a task set's grade table lives: next to its lock (manifest.lock.json -> manifest.grades.json)."""
    lock = Path(lock)
    return lock.with_name(lock.name.removesuffix(".lock.json") + ".grades.json")


def made_with(manifest: Path, sandbox: SandboxParams) -> dict[str, Any]:
    """What the grades depend on besides the trees: the task data's hashes and the sandbox limits."""
    manifest = Path(manifest)
    files = {
        "manifest": manifest,
        "hidden_checks": hidden_path(manifest),
        "candidates": candidates_path(manifest),
    }
    return {
        **{f"{k}_sha256": sha256_bytes(p.read_bytes()) for k, p in files.items()},
        "sandbox": sandbox.model_dump(include=set(LIMITS)),
    }


def build_table(
    items: Sequence[tuple[str, dict[str, bytes], dict[str, bytes]]],
    grades: Sequence[Grade],
    manifest: Path,
    sandbox: SandboxParams,
) -> GradeTable:
    """The table of (instance_id, clean tree, graded tree) items and their grades; infra errors left
    out (a run grades those trees again, as its cache would)."""
    rows = {
        (iid, tree_sha256(clean), tree_sha256(tree)): g
        for (iid, clean, tree), g in zip(items, grades, strict=True)
        if g.infra_error is None
    }
    return GradeTable(
        made_with=made_with(manifest, sandbox),
        rows=[
            GradeRow(instance_id=k[0], clean_sha256=k[1], tree_sha256=k[2], grade=asdict(g))
            for k, g in sorted(rows.items())
        ],
    )


def write_table(table: GradeTable, path: Path) -> None:
    atomic_write_json(Path(path), table.model_dump(mode="json"))


def read_table(params: Params) -> dict[Key, Grade]:
    """The benchmark set's table as cache entries; {} when there is none (every tree graded live).
    A table made from other task data or sandbox limits is refused: it would grade other trees."""
    sp = params.tasks.repofix
    path = grades_path(sp.lock)
    if not path.is_file():
        return {}
    try:
        table = GradeTable.model_validate(json.loads(path.read_text()))
        grades = {(r.instance_id, r.clean_sha256, r.tree_sha256): Grade(**r.grade) for r in table.rows}
    except (ValueError, TypeError) as e:
        raise PappoError(
            f"{path}: not a grade table ({e}); rerun `pappo validate` (dvc repro validate)"
        ) from e
    now = made_with(sp.manifest, params.sandbox)
    stale = sorted(k for k in now if table.made_with.get(k) != now[k])
    if stale:
        raise PappoError(
            f"{path}: made with other {', '.join(stale)} than params.yaml and the task data now give; "
            "rerun `pappo validate` (dvc repro validate)"
        )
    return grades
