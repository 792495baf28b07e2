"""Headroom of the candidates tier: scripted agents on a seed's held-out tasks (`pappo headroom`).

Plays the random, systematic and oracle agents (env/candidate_agents.py) in candidates mode on the
eval tasks of a seed's split (`tasks.splits.make_split`, the split `pappo validate` locks), each
task `episodes` times with episode seeds 0..episodes-1 (they order the shown candidates), graded
for real in the sandbox (by validate for the trees its grade table holds, `tasks/grade_table.py`).
A trained policy has room to learn between systematic search and the oracle only when trying
every candidate does not fit in `env.max_turns`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from pappo.config import Params
from pappo.config.env import EnvParams
from pappo.env.agents import play_all
from pappo.env.candidate_agents import make_candidate_agent
from pappo.env.episode import RepairEnv
from pappo.env.vec import VecEnv, table_grader
from pappo.io import PappoError
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.splits import make_split
from pappo.tasks.store import TaskStore

AGENTS = ("random", "systematic", "oracle")


def headroom(
    params: Params,
    env_params: EnvParams,
    seed: int,
    episodes: int,
    agents: tuple[str, ...] = AGENTS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Success of each agent on seed `seed`'s eval tasks: mean over tasks of the per-task mean."""
    store = TaskStore.from_params(params, "repofix")
    split = make_split(
        list(store.tasks.values()), seed, params.tasks.n_train_families, params.tasks.n_eval_families
    )
    tasks = [store.task(t) for t in split.eval_instance_ids]
    env_params = env_params.model_copy(update={"actions": "candidates"})
    out: dict[str, Any] = {
        "seed": seed,
        "episodes_per_task": episodes,
        "k": env_params.candidates.k,
        "max_turns": env_params.max_turns,
        "eval_tasks": len(tasks),
        "shown_per_task": {
            t.instance_id: min(env_params.candidates.k, len(store.candidates[t.instance_id].edits))
            for t in tasks
        },
        "agents": {},
    }
    with SandboxPool(params.sandbox) as pool:
        # validate's grade table holds every tree these agents reach; others are graded live
        grade_fn = table_grader(params, pool, store.hidden)
        for name in agents:
            envs = [
                RepairEnv(
                    t,
                    store.clean(t),
                    store.buggy(t),
                    env_params,
                    candidates=store.candidates[t.instance_id],
                    seed=e,
                )
                for t in tasks
                for e in range(episodes)
            ]
            vec = VecEnv(envs, grade_fn)
            vec.reset()
            bots = [make_candidate_agent(name, env, seed=1000 * i + env.seed) for i, env in enumerate(envs)]
            play_all(vec, bots, reset=False)
            out["agents"][name] = _summary(envs, episodes)
            if progress:
                progress(f"{name}: success {out['agents'][name]['success']:.3f}")
    return out


def _summary(envs: list[RepairEnv], episodes: int) -> dict[str, Any]:
    per_task: dict[str, list[float]] = {}
    for env in envs:
        per_task.setdefault(env.task.instance_id, []).append(float(env.metrics.success))
    ms = [env.metrics for env in envs]
    return {
        "success": statistics.fmean(statistics.fmean(v) for v in per_task.values()),
        "tasks_ever_solved": sum(any(v) for v in per_task.values()),
        "mean_turns": statistics.fmean(m.turns for m in ms),
        "failed_edits_per_episode": statistics.fmean(m.failed_edit for m in ms),
        "repeated_tests_per_episode": statistics.fmean(m.repeated_test for m in ms),
        "infra_errors": sum(m.infra_error for m in ms),
        "per_task_success": {t: statistics.fmean(v) for t, v in sorted(per_task.items())},
    }


def env_with(env: EnvParams, k: int | None = None, max_turns: int | None = None) -> EnvParams:
    """`env` with the candidates shown (`k`) and the turn budget replaced where given, checked again
    as params.yaml's would be (the cross-field checks see the new values)."""
    if k is not None:
        env = env.model_copy(update={"candidates": env.candidates.model_copy(update={"k": k})})
    if max_turns is not None:
        env = env.model_copy(update={"max_turns": max_turns})
    try:
        return type(env).model_validate(env.model_dump())
    except ValidationError as e:
        flags = {("candidates", "k"): f"--k {k}", ("max_turns",): f"--max-turns {max_turns}"}
        named = [flags.get(tuple(err["loc"]), ".".join(map(str, err["loc"]))) for err in e.errors()]
        why = "; ".join(err["msg"] for err in e.errors())
        raise PappoError(f"{', '.join(named)}: {why}; pass another value or leave it out") from None


def without_per_task(result: dict[str, Any]) -> dict[str, Any]:
    """`headroom`'s result without each agent's per-task successes (kept in the written file)."""
    agents = {n: {k: v for k, v in a.items() if k != "per_task_success"} for n, a in result["agents"].items()}
    return {**result, "agents": agents}
