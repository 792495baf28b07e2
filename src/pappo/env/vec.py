"""B episodes stepped together, so the sandbox pool grades all of a step's trees in parallel; and
`GradeCache`, a grade function that grades each distinct tree of a task once per process.

An episode already keeps the grade of every tree it has seen (`RepairEnv._grades`: a grade is a
function of the task and the tree), but in the candidates tier the same trees recur across
episodes: every episode of a task starts from the same buggy tree (graded at reset), and the k
candidate edits give few distinct trees, replayed by the K episodes of a group, by every update and
by every evaluation. `GradeCache` extends the episode's rule across episodes: a grade without an
infra error is kept, keyed by (task, clean tree, candidate tree) digests, and returned for the next
request of the same key; an infra error is never kept (the next request runs again), as in the env.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pappo.config import Params
from pappo.config.env import EnvParams
from pappo.env.episode import GradeFn, GradeItem, RepairEnv, StepResult
from pappo.io import PappoError, tree_sha256
from pappo.sandbox.grading import Grade, HiddenSuite, grade_many
from pappo.tasks.grade_table import read_table

if TYPE_CHECKING:
    from pappo.sandbox.pool import SandboxPool
    from pappo.tasks.store import TaskStore


def board_seed(seed: int, n: int) -> int:
    """The env seed (candidate order) of eval episode `n` of run seed `seed`: fixed across updates
    and methods, so every evaluation point of every method, and the base model's own evaluation
    of that split, sees the same boards. String-seeded: the same in every process."""
    return random.Random(f"board/{seed}/{n}").getrandbits(31)


def task_env(store: TaskStore, instance_id: str, params: EnvParams, seed: int = 0) -> RepairEnv:
    """The episode env of one task from its store; in candidates mode with the task's candidate
    edits, shown in the order of episode seed `seed`."""
    task = store.task(instance_id)
    candidates = store.candidates[instance_id] if params.actions == "candidates" else None
    return RepairEnv(task, store.clean(task), store.buggy(task), params, candidates=candidates, seed=seed)


class VecEnv:
    """Steps the envs still running; each reset or step makes at most one `grade_fn` call."""

    def __init__(self, envs: Sequence[RepairEnv], grade_fn: GradeFn) -> None:
        if not envs:
            raise PappoError("VecEnv needs at least one environment")
        self.envs = list(envs)
        self.grade_fn = grade_fn

    def __len__(self) -> int:
        return len(self.envs)

    @property
    def done(self) -> list[bool]:
        return [env.done for env in self.envs]

    def reset(self) -> list[list[dict[str, Any]]]:
        """Start every episode; the buggy trees are graded in one call."""
        grades = self._grade_all([env.begin_reset() for env in self.envs])
        return [env.end_reset(g) for env, g in zip(self.envs, grades)]

    def step(self, texts: Sequence[str | None]) -> list[StepResult | None]:
        """One assistant turn per running env; pass None for (and get None from) finished ones."""
        if len(texts) != len(self.envs):
            raise PappoError(f"VecEnv.step: got {len(texts)} texts for {len(self.envs)} environments")
        for i, (env, text) in enumerate(zip(self.envs, texts)):
            if env.done != (text is None):
                state = "finished; pass None" if env.done else "running; pass its assistant text"
                raise PappoError(f"VecEnv.step: environment {i} is {state}")
        requests = [[] if t is None else env.begin_step(t) for env, t in zip(self.envs, texts)]
        grades = self._grade_all(requests)
        return [None if t is None else env.end_step(g) for env, t, g in zip(self.envs, texts, grades)]

    def truncate(self, indices: Sequence[int]) -> list[float]:
        """End the given running episodes between turns (token budget spent); one grade_fn call."""
        envs = [self.envs[i] for i in indices]
        grades = self._grade_all([env.begin_truncate() for env in envs])
        return [env.end_truncate(g) for env, g in zip(envs, grades)]

    def _grade_all(self, requests: list[list[GradeItem]]) -> list[list[Grade]]:
        """One grade_fn call for every request, split back per env (no call when none)."""
        flat = [item for items in requests for item in items]
        graded = list(self.grade_fn(flat)) if flat else []
        if len(graded) != len(flat):
            raise PappoError(f"grade_fn returned {len(graded)} grades for {len(flat)} trees")
        out, at = [], 0
        for items in requests:
            out.append(graded[at : at + len(items)])
            at += len(items)
        return out


Key = tuple[str, str, str]  # (instance_id, clean tree sha256, candidate tree sha256)


class GradeCache:
    """Wraps `grade_fn`; same contract (one grade per item, in order). `calls`/`graded`: how many
    requests came and how many trees went to `grade_fn` (diagnostics)."""

    def __init__(self, grade_fn: GradeFn, kept: Mapping[Key, Grade] | None = None) -> None:
        self.grade_fn = grade_fn
        self.kept: dict[Key, Grade] = dict(kept or {})  # e.g. validate's grade table (tasks/grade_table.py)
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
            raise PappoError(f"grade_fn returned {len(fresh)} grades for {len(first)} trees")
        self.graded += len(fresh)
        now = dict(zip(first, fresh))  # this call's grades, infra errors included
        self.kept.update((k, g) for k, g in now.items() if g.infra_error is None)
        return [now[k] if k in now else self.kept[k] for k in keys]


def table_grader(params: Params, pool: SandboxPool, hidden: Mapping[str, HiddenSuite]) -> GradeCache:
    """The sandbox grader of a run (training and evaluation) or of the headroom agents: `pool`'s
    grades, each distinct tree of a task graded once, none that validate's grade table holds."""
    return GradeCache(functools.partial(grade_many, pool, hidden=hidden), read_table(params))
