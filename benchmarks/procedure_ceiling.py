"""What the benchmark asks beyond procedure: success of scripted agents through the real env.

    python benchmarks/procedure_ceiling.py [--params params.yaml] [--split 0] [--seeds 5]
                                           [--tasks eval|all] [--limit N] [--max-turns 12] [--out FILE.json]

On the eval tasks of one split (or all benchmark tasks; `--limit N`: the first N), graded by the
sandbox, in the free-form action mode (`env.actions: free`, whatever params say: these agents write
their own edits) at `--max-turns` (12, the free tier's budget the receipts were measured at):
  * oracle: knows the fix (a check that every task is solvable in the turn budget: 1.0);
  * submit: submits at once (0.0: no task is solved by its buggy tree);
  * grounded, line order and shuffled (one run per seed): the transcript-only procedure of
    `pappo.env.grounded` (search the titled symbol, view it, try one-token flips with run_tests,
    undo). A policy that has learned the procedure but no semantics succeeds about this often.
The last line is `ceiling: X.XX` = the mean success of the shuffled grounded agent.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from pathlib import Path
from typing import Any

from pappo.config import load_params
from pappo.env.agents import OracleAgent, SubmitAgent, play_all
from pappo.env.episode import RepairEnv
from pappo.env.grounded import GroundedAgent
from pappo.env.vec import VecEnv
from pappo.io import atomic_write_json
from pappo.policy.base_model import eval_tasks
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.store import TaskStore


def run_agent(store: Any, ids: list[str], make_agent: Any, params: Any, pool: SandboxPool) -> dict[str, Any]:
    """One episode per task, in lockstep (grades batched per step); per-task outcome and turns."""
    envs = [
        RepairEnv(store.task(i), store.clean(store.task(i)), store.buggy(store.task(i)), params.env)
        for i in ids
    ]
    play_all(
        VecEnv(envs, functools.partial(grade_many, pool, hidden=store.hidden)),
        [make_agent(k, env) for k, env in enumerate(envs)],
    )
    infra = [e.task.instance_id for e in envs if e.metrics.infra_error]
    if infra:
        raise SystemExit(f"sandbox infra errors on {infra}: rerun (`pappo run-tests` checks the sandbox)")
    solved = sorted(e.task.instance_id for e in envs if e.metrics.success)
    return {
        "success_rate": len(solved) / len(envs),
        "solved": solved,
        "mean_turns": statistics.fmean(e.metrics.turns for e in envs),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--split", type=int, default=0, help="Split seed whose eval tasks are played.")
    ap.add_argument("--seeds", type=int, default=5, help="Shuffled grounded runs (one per seed).")
    ap.add_argument("--tasks", choices=["eval", "all"], default="eval")
    ap.add_argument("--limit", type=int, default=0, help="Play only the first N tasks (0: all).")
    ap.add_argument("--max-turns", type=int, default=12, help="Turns an episode (the free tier's budget).")
    ap.add_argument("--out", type=Path, default=None, help="Write the results as JSON here.")
    args = ap.parse_args(argv)
    params = load_params(args.params)
    base_model = params.base_model.model_copy(update={"eval_split_seed": args.split})
    env = params.env.model_copy(update={"actions": "free", "max_turns": args.max_turns})
    params = params.model_copy(update={"base_model": base_model, "env": env})
    if args.tasks == "all":
        store = TaskStore.from_params(params, "repofix")
        ids = sorted(store.tasks)
    else:
        store, ids = eval_tasks(params)  # from the validated lock
    ids = ids[: args.limit or None]
    start = time.perf_counter()
    runs: dict[str, Any] = {}
    with SandboxPool(params.sandbox) as pool:
        runs["oracle"] = run_agent(store, ids, lambda k, e: OracleAgent(e.task, e.buggy_tree), params, pool)
        runs["submit"] = run_agent(store, ids, lambda k, e: SubmitAgent(), params, pool)
        runs["grounded_line"] = run_agent(store, ids, lambda k, e: GroundedAgent(order="line"), params, pool)
        for s in range(args.seeds):
            runs[f"grounded_shuffle_{s}"] = run_agent(
                store,
                ids,
                lambda k, e, s=s: GroundedAgent(seed=s * 1_000_003 + k, order="shuffle"),
                params,
                pool,
            )
    shuffled = [r["success_rate"] for name, r in runs.items() if name.startswith("grounded_shuffle")]
    out = {
        "tasks": args.tasks,
        "split": args.split,
        "n_tasks": len(ids),
        "max_turns": params.env.max_turns,
        "runs": runs,
        "ceiling": statistics.fmean(shuffled) if shuffled else None,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    for name, r in runs.items():
        print(
            f"{name:20s} success {r['success_rate']:.3f} ({len(r['solved'])}/{len(ids)}), "
            f"{r['mean_turns']:.1f} turns"
        )
    if args.out:
        atomic_write_json(args.out, out)
    if shuffled:
        print(f"ceiling: {out['ceiling']:.2f}")
    return out


if __name__ == "__main__":
    main()
