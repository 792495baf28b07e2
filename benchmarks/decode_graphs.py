"""CUDA-graph decoding against eager decoding: the same episodes, tokens/s and agreement.

    python benchmarks/decode_graphs.py --config 7b --device cuda    # 64 episodes x 4 turns x 512 tokens
    python benchmarks/decode_graphs.py --config tiny --device cpu   # smoke: the static step, uncaptured

One model with random weights (gpu_step's builders: the Qwen2.5-Coder-7B architecture at Qwen's
152064 ids, or the tiny profile), one set of episodes (warm-up tasks cycled, a stand-in grader, no
sandbox, every token sampled), played by `RolloutEngine` with the same episode seeds: a short
warm-up, then eager (rollout.enforce_eager true), then graphed (false; `pappo.policy.decode_graphs`).
The 7b default is the shape of the first H200 measurement (1,624 tokens/s eager: 64 episodes, 4
turns of 512 tokens, 2048 a episode). Prints each side's generated tokens/s, the graphs captured
and replayed, and the agreement: episodes with identical ids, and the largest |log-prob difference|
over the sampled tokens before each episode's first differing id (the paths sum in different
orders: in bf16 a near-tie can draw another token, and the episode differs from there).
`--out` writes the numbers as JSON, after each side. The last line is `ratio: X.XX`, graphed over eager tokens/s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch

from pappo.config import Params, load_params
from pappo.env.protocol import tools_for
from pappo.env.vec import VecEnv
from pappo.io import atomic_write_json
from pappo.policy import decode_graphs
from pappo.policy.chat import ChatCodec
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, Trajectory

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py, gpu_step*.py
import gpu_step as gs
from common import (
    copy_bandwidth,
    fresh_tokenizer,
    graph_counts,
    sampled_context,
    stand_in_grades,
    warmup_envs,
)
from gpu_step_params import DTYPES, QWEN25_VOCAB
from gpu_step_record import memory_bound_tokens_per_s

# --config -> episodes, turns, tokens per turn, tokens per episode
SHAPES = {"7b": (64, 4, 512, 2048), "tiny": (4, 3, 24, 1024)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    ap.add_argument("--dtype", choices=["auto", *DTYPES], default="auto", help="auto: bf16 on cuda")
    ap.add_argument("--episodes", type=int, help="rows decoded together; default by --config")
    ap.add_argument("--turns", type=int, help="env.max_turns")
    ap.add_argument("--tokens-per-turn", type=int, help="rollout.max_new_tokens_per_turn")
    ap.add_argument("--tokens-per-episode", type=int, help="rollout.max_tokens_per_episode")
    ap.add_argument("--kv-cache", choices=["grow", "static"], default="static")
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="the numbers as JSON")
    args = ap.parse_args(argv)
    for key, value in zip(
        ("episodes", "turns", "tokens_per_turn", "tokens_per_episode"), SHAPES[args.config]
    ):
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    return args


def setup(
    args: argparse.Namespace, device: torch.device, dtype: torch.dtype
) -> tuple[Params, Any, ChatCodec]:
    """The params with the benchmark's shape, the model on `device`, its codec."""
    params = load_params(args.params)
    rollout = params.rollout.model_copy(
        update={
            "batch_size": args.episodes,
            "max_new_tokens_per_turn": args.tokens_per_turn,
            "max_tokens_per_episode": args.tokens_per_episode,
            "kv_cache": args.kv_cache,
            "calls": "sampled",
        }
    )
    params = params.model_copy(
        update={"rollout": rollout, "env": params.env.model_copy(update={"max_turns": args.turns})}
    )
    tokenizer = fresh_tokenizer(params)
    vocab = QWEN25_VOCAB if args.config == "7b" else None
    cfg = gs.model_config(args.config, tokenizer, params, vocab)
    model = gs.build_model(cfg, device, dtype, args.seed, ckpt=False, decodable=len(tokenizer))
    return params, model, ChatCodec(tokenizer, tools_for(params.env.actions))


def play(
    params: Params, model: Any, codec: ChatCodec, episodes: int, graphs: bool, bandwidth: float
) -> tuple[list[Trajectory], dict[str, Any]]:
    """`episodes` episodes of the warm-up tasks, in one lockstep batch; returns them and their
    generated tokens, seconds, tokens/s, (CUDA) peak allocated bytes, and the memory-bound ceiling
    at `bandwidth` bytes/s (`gpu_step_record.memory_bound_tokens_per_s`) with the share of it reached."""
    envs = warmup_envs(params, episodes)
    engine = RolloutEngine(Qwen2Decoder(model, graphs=graphs), codec, params.rollout)
    device = engine.decoder.device
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start = gs.sync_time(device)
    trajs = engine.run(VecEnv(envs, stand_in_grades), seed=0)
    seconds = gs.sync_time(device) - start
    tokens = sum(t.metrics["tokens"] for t in trajs)
    peak = int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None
    ceiling = memory_bound_tokens_per_s(
        model.config, model.dtype.itemsize, episodes, tokens, sampled_context(trajs), bandwidth
    )
    side = {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds, "peak_bytes": peak}
    return trajs, side | {"memory_bound_tokens_per_s": ceiling, "of_memory_bound": tokens / seconds / ceiling}


def side_line(name: str, side: dict[str, Any]) -> str:
    peak = "" if side["peak_bytes"] is None else f"; peak {side['peak_bytes'] / 2**30:.2f} GiB"
    return (
        f"{name} {side['tokens']} tokens in {side['seconds']:.1f} s = {side['tokens_per_s']:.0f} tokens/s "
        f"({side['of_memory_bound']:.1%} of the memory-bound {side['memory_bound_tokens_per_s']:.0f}){peak}"
    )


def agreement(eager: list[Trajectory], graphed: list[Trajectory]) -> tuple[int, float]:
    """Episodes with identical ids; the largest |log-prob difference| over the sampled tokens before
    each episode's first differing id."""
    same, worst = 0, 0.0
    for a, b in zip(eager, graphed):
        same += a.token_ids == b.token_ids
        n = next((i for i, (x, y) in enumerate(zip(a.token_ids, b.token_ids)) if x != y), len(a.token_ids))
        diffs = [abs(p - q) for p, q, m in zip(a.logprobs[:n], b.logprobs[:n], a.response_mask[:n]) if m]
        worst = max([worst, *diffs])
    return same, worst


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if cuda and not torch.cuda.is_available():
        print("decode_graphs: --device cuda, but torch sees no CUDA device here", file=sys.stderr)
        return 2
    device = torch.device("cuda" if cuda else "cpu")
    dtype = DTYPES.get(args.dtype) or (torch.bfloat16 if cuda else torch.float32)
    bandwidth = copy_bandwidth(device)  # first: the GPU holds nothing else yet
    params, model, codec = setup(args, device, dtype)
    rec: dict[str, Any] = {
        "schema": "pappo.decode_graphs/1",
        "config": args.config,
        "device_name": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch": torch.__version__,
        "dtype": str(dtype).removeprefix("torch."),
        "copy_bandwidth_bytes_per_s": bandwidth,
        "shape": {
            k: getattr(args, k)
            for k in ("episodes", "turns", "tokens_per_turn", "tokens_per_episode", "kv_cache")
        },
    }
    print(
        f"{args.config} on {rec['device_name']} ({rec['dtype']}): {args.episodes} episodes, {args.turns} turns x "
        f"{args.tokens_per_turn} tokens, {args.tokens_per_episode} a episode (kv_cache {args.kv_cache}); "
        f"copy bandwidth {bandwidth / 1e12:.2f} TB/s"
    )
    warm = params.model_copy(
        update={"rollout": params.rollout.model_copy(update={"max_new_tokens_per_turn": 8, "batch_size": 2})}
    )
    for graphs in (False, True):  # allocator, cuBLAS and the first captures, before either side is timed
        play(warm, model, codec, 2, graphs, bandwidth)
    eager, rec["eager"] = play(params, model, codec, args.episodes, False, bandwidth)
    print(side_line("eager:  ", rec["eager"]), flush=True)  # before the graphed side can fail
    save(args.out, rec)
    decode_graphs.reset_stats()
    graphed, rec["graphed"] = play(params, model, codec, args.episodes, True, bandwidth)
    rec["graphed"] |= decode_graphs.reset_stats()
    print(f"{side_line('graphed:', rec['graphed'])}; {graph_counts(rec['graphed'])}")
    same, worst = agreement(eager, graphed)
    rec |= {
        "identical_episodes": same,
        "logprob_max_abs_diff_before_change": worst,
        "ratio": rec["graphed"]["tokens_per_s"] / rec["eager"]["tokens_per_s"],
    }
    print(
        f"agreement: {same}/{len(eager)} episodes identical; max |log-prob difference| before a change {worst:.3g}"
    )
    save(args.out, rec)
    print(f"ratio: {rec['ratio']:.2f}")
    return 0


def save(out: Path | None, rec: dict[str, Any]) -> None:
    """The numbers so far, atomically (a run killed later keeps them)."""
    if out is not None:
        atomic_write_json(out, rec)


if __name__ == "__main__":
    sys.exit(main())
