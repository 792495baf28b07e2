"""The decisive choice of the candidates tier: which id a policy applies right after a revert.

    python benchmarks/post_revert_choice.py [--params params.yaml] [--seeds 0 1 2]
                                            [--methods base ppo pappo] [--runs DIR] [--out FILE.json]

Plays each published policy (the base checkpoint plus `reports/runs/seed_S/<method>/adapters`,
so run it after `dvc repro`; `--runs` reads other run folders, e.g. a trial's) greedily on its
seed's held-out boards, as the evaluation does, and reports per (seed, method): greedy success,
how often the first apply after a revert re-applies the id just reverted (which cannot pass: it
just failed), and the mean probability the policy gives that reverted id at that token
(temperature `rollout.temperature`). A context-free policy gains over the base only by lowering
that probability below the others' (docs/experiment.md); this says how far RL moved it.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

from pappo.config import Params
from pappo.env.protocol import ToolCall, parse_tool_call
from pappo.env.vec import VecEnv, board_seed, task_env
from pappo.io import atomic_write_json
from pappo.policy.adapters import POLICY
from pappo.policy.constrained import call_trie
from pappo.policy.decisions import ARG, decision_flags
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, Trajectory
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.splits import read_split

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import candidates_params, candidates_policy


def calls(tok: Any, traj: Trajectory) -> list[tuple[int, int, ToolCall | None]]:
    """(start, end, parsed call or None) of each sampled turn."""
    out = []
    for a, b in traj.turn_spans:
        call = parse_tool_call(tok.decode(traj.token_ids[a:b]), "candidates")
        out.append((a, b, call if isinstance(call, ToolCall) else None))
    return out


def decisions(tok: Any, traj: Trajectory) -> list[tuple[int, int, int]]:
    """(reverted id, applied id, position of the applied id's token) of each apply right after a revert."""
    turns, out, last_applied = calls(tok, traj), [], None
    for n, (_, _, call) in enumerate(turns):
        if call is not None and call.name == "apply":
            last_applied = call.arguments.get("id")
        if call is None or call.name != "revert" or last_applied is None or n + 1 >= len(turns):
            continue
        na, nb, nxt = turns[n + 1]
        if nxt is None or nxt.name != "apply":
            continue
        # the id's first token: the choice itself, as the decisions loss and constrained decoding see it
        flags = decision_flags(tok, traj.token_ids[na:nb])
        pos = next((na + i for i, kind in enumerate(flags) if kind == ARG), None)
        if pos is not None:
            out.append((int(last_applied), int(nxt.arguments["id"]), pos))
    return out


def measure(
    params: Params, seed: int, method: str, pool: SandboxPool, runs: Path = Path("reports/runs")
) -> dict[str, Any]:
    _, _, eval_ids = read_split(params, seed)
    adapters = runs / f"seed_{seed}" / method / "adapters" if method != "base" else None
    ac, tok, codec, store = candidates_policy(params, Path("models/base"), adapters)
    ids = sorted(eval_ids)
    envs = [task_env(store, i, params.env, board_seed(seed, n)) for n, i in enumerate(ids)]
    with ac.adapter(POLICY):
        engine = RolloutEngine(Qwen2Decoder(ac.peft), codec, params.rollout, call_trie(codec, params))
        trajs = engine.run(
            VecEnv(envs, functools.partial(grade_many, pool, hidden=store.hidden)),
            seed=0,
            greedy=True,
            episode_seeds=list(range(len(ids))),
        )
        found, p_reverted = [], []
        spelled = {tok.decode([i]): i for i in range(len(tok))}
        with torch.no_grad():
            for t in trajs:
                for reverted, applied, pos in decisions(tok, t):
                    logits = ac.peft(input_ids=torch.tensor([t.token_ids[:pos]])).logits[0, -1]
                    probs = torch.softmax(logits / params.rollout.temperature, -1)
                    # the vocabulary entry that spells the reverted id where the applied one stands
                    want = tok.decode([t.token_ids[pos]]).replace(str(applied), str(reverted))
                    if want in spelled:
                        p_reverted.append(float(probs[spelled[want]]))
                    found.append(applied == reverted)
    return {
        "seed": seed,
        "method": method,
        "greedy_success": statistics.fmean(bool(t.metrics["success"]) for t in trajs),
        "applies_after_revert": len(found),
        "reapplies_reverted": sum(found),
        "mean_p_reverted_id": statistics.fmean(p_reverted) if p_reverted else None,
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=["base", "ppo", "pappo"])
    ap.add_argument(
        "--runs", type=Path, default=Path("reports/runs"), help="Run folders: RUNS/seed_S/<method>/adapters."
    )
    ap.add_argument("--out", type=Path, default=None, help="Write the rows as JSON here.")
    args = ap.parse_args(argv)
    params = candidates_params(args.params)
    rows = []
    with SandboxPool(params.sandbox) as pool:
        for seed in args.seeds:
            for method in args.methods:
                rows.append(measure(params, seed, method, pool, args.runs))
                print(json.dumps(rows[-1]))
    if args.out is not None:
        atomic_write_json(args.out, rows)
    return rows


if __name__ == "__main__":
    main()
