"""A grade function that grades each distinct tree of a task once per process.

An episode already keeps the grade of every tree it has seen (`RepairEnv._grades`: a grade is a
function of the task and the tree), but in the candidates tier the same trees recur across
episodes: every episode of a task starts from the same buggy tree (graded at reset), and the k
candidate edits give few distinct trees, replayed by the K episodes of a group, by every update and
by every evaluation. `GradeCache` extends the episode's rule across episodes: a grade without an
infra error is kept, keyed by (task, clean tree, candidate tree) digests, and returned for the next
request of the same key; an infra error is never kept (the next request runs again), as in the env.
"""

from __future__ import annotations

from collections.abc import Sequence

from pappo.env.episode import GradeFn, GradeItem
from pappo.io import tree_sha256
from pappo.sandbox.grading import Grade

Key = tuple[str, str, str]  # (instance_id, clean tree sha256, candidate tree sha256)


class GradeCache:
    """Wraps `grade_fn`; same contract (one grade per item, in order). `calls`/`graded`: how many
    requests came and how many trees went to `grade_fn` (diagnostics)."""

    def __init__(self, grade_fn: GradeFn) -> None:
        self.grade_fn = grade_fn
        self.kept: dict[Key, Grade] = {}
        self.calls = self.graded = 0

    def __call__(self, items: Sequence[GradeItem]) -> list[Grade]:
        keys = [
            (task.instance_id, tree_sha256(dict(clean)), tree_sha256(dict(tree)))
            for task, clean, tree in items
        ]
        self.calls += len(items)
        first: dict[Key, int] = {}  # key -> index of its first item among those to grade
        for i, key in enumerate(keys):
            if key not in self.kept and key not in first:
                first[key] = i
        fresh = list(self.grade_fn([items[i] for i in first.values()])) if first else []
        if len(fresh) != len(first):
            raise ValueError(f"grade_fn returned {len(fresh)} grades for {len(first)} trees")
        self.graded += len(fresh)
        now = dict(zip(first, fresh))  # this call's grades, infra errors included
        self.kept.update((k, g) for k, g in now.items() if g.infra_error is None)
        return [now[k] if k in now else self.kept[k] for k in keys]
