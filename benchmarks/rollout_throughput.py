"""Generated tokens per second: the batched multi-turn rollout against a naive per-episode loop.

    python benchmarks/rollout_throughput.py [--episodes B] [--checkpoint models/base] [--params params.yaml]

Same model, tasks, sampling settings and token budgets on both sides, in one run:
  * batched: `RolloutEngine` (B episodes in lockstep, one KV cache kept across turns);
  * naive: for each episode, for each turn, `model.generate` on the whole history so far
    (re-encoded every turn), one episode at a time.
Episodes are graded by a stand-in grader (no sandbox), so only generation is timed. The model is
the checkpoint in --checkpoint if it exists (the trained base policy: turns of very different
lengths, so lockstep batching waits for the longest), else, or with --random-weights, the tiny
profile built from params with a fresh tokenizer (every turn runs to the per-turn token limit).
Candidates mode (the default params) shows each episode its task's candidate edits. Measured at
B = 32 with random weights on 2 cores shared with other jobs: 4.9x, and 13.7x with
OMP_NUM_THREADS=1 (docs/policy.md).
The last line is `ratio: X.X` = batched tokens/s over naive tokens/s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from pappo.config import load_params
from pappo.env.episode import RepairEnv
from pappo.env.protocol import tools_for
from pappo.env.vec import VecEnv
from pappo.policy.chat import ChatCodec
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import fresh_tokenizer, stand_in_grades, warmup_envs


def load_model(params, checkpoint: Path | None):
    from transformers import AutoModelForCausalLM

    from pappo.policy.loading import load_tokenizer

    if checkpoint is not None and (checkpoint / "config.json").exists():
        return AutoModelForCausalLM.from_pretrained(checkpoint), load_tokenizer(checkpoint)
    from pappo.policy.checkpoint import build_tiny_model

    tokenizer = fresh_tokenizer(params)
    return build_tiny_model(params.model.tiny, tokenizer), tokenizer


def naive(model, codec, envs, params, seed: int) -> int:
    """One episode at a time, one `generate` call per turn on the whole re-encoded history."""
    torch.manual_seed(seed)
    tokens = 0
    rp = params.rollout
    for env in envs:
        ids = codec.prompt_ids(env.reset())
        while not env.done:
            room = min(rp.max_new_tokens_per_turn, rp.max_tokens_per_episode - len(ids))
            out = model.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=room,
                do_sample=True,
                temperature=rp.temperature,
                top_p=rp.top_p,
                top_k=0,
                eos_token_id=sorted(codec.stop_ids),
                pad_token_id=codec.pad_id,
            )
            turn = out[0, len(ids) :].tolist()
            tokens += len(turn)
            ids += turn
            result = env.step(codec.decode(turn))
            if not result.done:
                stop = turn[-1] if turn and turn[-1] in codec.stop_ids else None
                obs = codec.observation_ids(result.observation, stop)
                if len(ids) + len(obs) + 1 > rp.max_tokens_per_episode:
                    VecEnv([env], env.grade_fn).truncate([0])  # same budget rule as the engine
                    break
                ids += obs
    return tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/base"))
    ap.add_argument("--episodes", type=int, default=0, help="default: rollout.batch_size")
    ap.add_argument("--random-weights", action="store_true", help="ignore --checkpoint")
    args = ap.parse_args()
    params = load_params(args.params)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    model, tokenizer = load_model(params, None if args.random_weights else args.checkpoint)
    model.eval()
    codec = ChatCodec(tokenizer, tools_for(params.env.actions))
    n = args.episodes or params.rollout.batch_size  # the warm-up tasks, cycled past 30

    def envs() -> list[RepairEnv]:
        return warmup_envs(params, n)

    # No call trie: `model.generate` cannot force the call format, so both sides sample every token
    # (rollout.calls: sampled) and the comparison measures generation alone.
    engine = RolloutEngine(Qwen2Decoder(model), codec, params.rollout.model_copy(update={"batch_size": n}))
    start = time.perf_counter()
    trajs = engine.run(VecEnv(envs(), stand_in_grades), seed=0)
    batched_s = time.perf_counter() - start
    batched_tokens = sum(t.metrics["tokens"] for t in trajs)
    with torch.no_grad():
        start = time.perf_counter()
        naive_tokens = naive(model, codec, envs(), params, seed=0)
        naive_s = time.perf_counter() - start
    fast, slow = batched_tokens / batched_s, naive_tokens / naive_s
    weights = (
        "random"
        if args.random_weights or not (args.checkpoint / "config.json").exists()
        else str(args.checkpoint)
    )
    print(
        f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters ({weights}); {n} episodes; "
        f"max {params.rollout.max_new_tokens_per_turn} tokens/turn, {params.rollout.max_tokens_per_episode}/episode"
    )
    print(f"batched: {batched_tokens} tokens in {batched_s:.1f} s = {fast:.0f} tokens/s")
    print(f"naive:   {naive_tokens} tokens in {naive_s:.1f} s = {slow:.0f} tokens/s")
    print(f"ratio: {fast / slow:.1f}")


if __name__ == "__main__":
    main()
