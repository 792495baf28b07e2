"""What the policy's candidate id depends on: the id slots of the candidates tier, probed.

    python benchmarks/id_slot.py [--params params.yaml] [--base models/base] [--adapters DIR]
                                 [--seed 0] [--tasks 5] [--out FILE.json]

On the first `--tasks` held-out boards of seed S (the evaluation's boards), a scripted episode
applies wrong candidate r, runs the tests and reverts it, in the real environment (graded in the
sandbox). Then, teacher-forced, it reads the policy's distribution over the shown ids at two slots:
- **post-revert**: after the thought's "Try candidate" that opens the next turn, for every r;
- **call**: at `{"id":` of an apply call whose thought named id y, for every y (r fixed).
It reports each slot's mean distribution, the probability of the reverted id (post-revert) and of
the thought's id (call), and the slot's context dependence: the largest total-variation distance
between two of its distributions on one board. 0 means the id does not depend on what was
reverted (or on the thought); a policy doing systematic search needs it far from 0.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

from pappo.env.candidate_agents import board_of, call
from pappo.env.vec import board_seed, task_env
from pappo.io import atomic_write_json
from pappo.policy.adapters import POLICY
from pappo.policy.chat import ChatCodec
from pappo.policy.sft import encode_episode
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.splits import read_split

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import candidates_params, candidates_policy


def after_revert(env: Any, codec: ChatCodec, reverted: int) -> list[int]:
    """Ids of the transcript apply r, run_tests, revert, up to the next assistant turn's start."""
    env.reset()
    for text in (
        call("apply", {"id": reverted}, f"Try candidate {reverted}."),
        call("run_tests", {}, "Does it help?"),
        call("revert", {}, "It does not; undo it."),
    ):
        env.step(text)
    ids, _ = encode_episode(codec, env.transcript)
    return ids + codec.observation_ids(env.transcript[-1], codec.im_end_id)


def id_probs(model: Any, codec: ChatCodec, ids: list[int], id_tokens: list[int]) -> list[float]:
    """The policy's next-token probabilities of the k id tokens (temperature 1)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
    return torch.softmax(logits.float(), -1)[id_tokens].tolist()


def id_token_ids(codec: ChatCodec, k: int) -> list[int]:
    """The token that completes each id 1..k where the slots read it (after "Try candidate" and
    after `{"id":`); the probe needs one token per id, the same at both slots."""
    out = []
    for i in range(1, k + 1):
        call_id, thought_id = codec.encode(f'{{"id": {i}')[-1], codec.encode(f"Try candidate {i}")[-1]
        if call_id != thought_id or codec.decode([call_id]).strip() != str(i):
            raise SystemExit(
                f"id {i} is not one token spelled alike at both slots; this probe reads one-token ids"
            )
        out.append(call_id)
    return out


def tv(p: list[float], q: list[float]) -> float:
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q))


def probe_board(model: Any, codec: ChatCodec, env: Any, id_tokens: list[int]) -> dict[str, Any]:
    env.reset()
    k, fix = board_of(env)
    wrong = [r for r in range(1, k + 1) if r != fix]
    post = {
        r: id_probs(model, codec, after_revert(env, codec, r) + codec.encode("Try candidate"), id_tokens)
        for r in wrong
    }
    base = after_revert(env, codec, wrong[0])
    calls = {
        y: id_probs(
            model,
            codec,
            base + codec.encode(f'Try candidate {y}.\n<tool_call>\n{{"name": "apply", "arguments": {{"id":'),
            id_tokens,
        )
        for y in range(1, k + 1)
    }
    return {
        "post_revert": post,
        "call": calls,
        "post_revert_tv": max(
            (tv(post[a], post[b]) for a, b in itertools.combinations(post, 2)), default=0.0
        ),
        "call_tv": max(tv(calls[a], calls[b]) for a, b in itertools.combinations(calls, 2)),
        "p_reverted": statistics.fmean(post[r][r - 1] for r in post),
        "p_thought_id": statistics.fmean(calls[y][y - 1] for y in calls),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--base", type=Path, default=Path("models/base"), help="Base checkpoint folder.")
    ap.add_argument(
        "--adapters", type=Path, default=None, help="A run's adapters/ (default: the base alone)."
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", type=int, default=5, help="Held-out boards probed (the first N in id order).")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    params = candidates_params(args.params)
    ac, _, codec, store = candidates_policy(params, args.base, args.adapters)
    id_tokens = id_token_ids(codec, params.env.candidates.k)
    ids = sorted(read_split(params, args.seed)[2])[: args.tasks]
    boards = []
    with SandboxPool(params.sandbox) as pool, ac.adapter(POLICY):

        def grade(items):
            return grade_many(pool, items, hidden=store.hidden)

        for n, instance_id in enumerate(ids):
            env = task_env(store, instance_id, params.env, board_seed(args.seed, n))
            env.grade_fn = grade
            boards.append({"instance_id": instance_id, **probe_board(ac.peft, codec, env, id_tokens)})
    k = params.env.candidates.k

    def mean(key):
        return [round(statistics.fmean(p[i] for b in boards for p in b[key].values()), 4) for i in range(k)]

    out = {
        "base": str(args.base),
        "adapters": str(args.adapters),
        "seed": args.seed,
        "boards": len(boards),
        "post_revert_mean": mean("post_revert"),
        "call_mean": mean("call"),
        "post_revert_tv_max": max(b["post_revert_tv"] for b in boards),
        "call_tv_max": max(b["call_tv"] for b in boards),
        "p_reverted_mean": statistics.fmean(b["p_reverted"] for b in boards),
        "p_thought_id_mean": statistics.fmean(b["p_thought_id"] for b in boards),
        "per_board": boards,
    }
    print(json.dumps({key: v for key, v in out.items() if key != "per_board"}))
    if args.out is not None:
        atomic_write_json(args.out, out)
    return out


if __name__ == "__main__":
    main()
