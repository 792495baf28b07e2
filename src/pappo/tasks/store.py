"""A task set loaded for use: tasks by id, each family's validated tree, each task's buggy tree."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar

from pappo.config import Params
from pappo.io import PappoError
from pappo.sandbox.grading import HiddenSuite
from pappo.tasks.candidates import TaskCandidates, candidates_path, read_candidates
from pappo.tasks.families import files_sha256, load_tree
from pappo.tasks.hidden import hidden_path, read_hidden
from pappo.tasks.manifest import read_manifest
from pappo.tasks.models import Task
from pappo.tasks.patches import apply_patch

T = TypeVar("T")


class TaskStore:
    """Tasks of one manifest; family trees are read once and checked against `files_sha256`."""

    def __init__(self, manifest: Path, repos: Path) -> None:
        tasks, errors = read_manifest(Path(manifest))
        if errors:
            raise PappoError(f"{manifest}: invalid manifest:\n" + "\n".join(errors))
        self.manifest = Path(manifest)
        self.repos = Path(repos)
        self.tasks: dict[str, Task] = {t.instance_id: t for t in tasks}
        self._clean: dict[str, dict[str, bytes]] = {}
        self._hidden: dict[str, HiddenSuite] | None = None
        self._candidates: dict[str, TaskCandidates] | None = None

    @property
    def hidden(self) -> dict[str, HiddenSuite]:
        """Every task's hidden checks, for `grading.grade_many` (read on first use)."""
        if self._hidden is None:
            found = self._every_task(
                read_hidden(hidden_path(self.manifest)),
                hidden_path(self.manifest),
                "hidden checks",
                "pappo hidden-checks",
            )
            self._hidden = {tid: h.suite() for tid, h in found.items()}
        return self._hidden

    @property
    def candidates(self) -> dict[str, TaskCandidates]:
        """Every task's candidate edits (the candidates action mode; read on first use)."""
        if self._candidates is None:
            self._candidates = self._every_task(
                read_candidates(candidates_path(self.manifest)),
                candidates_path(self.manifest),
                "candidate edits",
                "pappo candidates",
            )
        return self._candidates

    def _every_task(self, found: dict[str, T], path: Path, what: str, command: str) -> dict[str, T]:
        """`found`'s entries for this store's tasks, in task order; an error if one is lacking."""
        lacking = sorted(set(self.tasks) - set(found))
        if lacking:
            raise PappoError(f"{path}: no {what} for {', '.join(lacking[:5])}; run `{command}`")
        return {tid: found[tid] for tid in self.tasks}

    @classmethod
    def from_params(cls, params: Params, task_set: Literal["repofix", "warmup"] = "repofix") -> TaskStore:
        sp = getattr(params.tasks, task_set)
        return cls(sp.manifest, sp.repos)

    def task(self, instance_id: str) -> Task:
        if instance_id not in self.tasks:
            near = sorted(t for t in self.tasks if t.split("-")[0] == instance_id.split("-")[0])
            hint = f" (tasks of that family: {', '.join(near)})" if near else ""
            raise PappoError(f"{self.manifest}: no task {instance_id!r}{hint}")
        return self.tasks[instance_id]

    def clean(self, task: Task) -> dict[str, bytes]:
        """The family's tree as validated: grading restores tests from here."""
        if task.family not in self._clean:
            tree = load_tree(self.repos / task.family)
            if files_sha256(tree) != task.files_sha256:
                changed = sorted(set(files_sha256(tree).items()) ^ set(task.files_sha256.items()))
                paths = ", ".join(sorted({p for p, _ in changed}))
                raise PappoError(
                    f"{self.repos / task.family}: differs from the manifest's files_sha256 ({paths}); "
                    "restore the family files (git checkout) or re-run `pappo synthesize`"
                )
            self._clean[task.family] = tree
        return self._clean[task.family]

    def buggy(self, task: Task) -> dict[str, bytes]:
        """The tree an episode starts from: the clean tree with `bug_patch` applied."""
        clean = self.clean(task)
        try:
            return apply_patch(clean, task.bug_patch)
        except PappoError as e:
            raise PappoError(
                f"{self.manifest}: task {task.instance_id}: bug_patch does not apply to "
                f"{self.repos / task.family} ({e}); restore the manifest (git checkout) or re-run "
                "`pappo synthesize`"
            ) from None


def find_task(params: Params, instance_id: str) -> tuple[TaskStore, Task]:
    """(store, task) for an id from the benchmark or the warm-up set."""
    stores = [TaskStore.from_params(params, s) for s in ("repofix", "warmup")]
    for store in stores:
        if instance_id in store.tasks:
            return store, store.task(instance_id)
    return stores[0], stores[0].task(instance_id)  # raises, naming close matches
