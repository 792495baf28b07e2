"""The memory model (pappo.policy.memory) against measured peaks on CPU, four small configurations.

    python benchmarks/memory_check.py

Each configuration runs in its own process: a random Qwen2 with LoRA (ActorCritic), then either the
update phase (the trainer's actor pass, `rl.batch.policy_outputs` with its entropy, and backward,
over one micro-batch of full-length rows, every token sampled) or the rollout phase (a decoder
snapshot, a prompt prefill, then one token at a time to the episode limit through the growing KV
cache, with the sampler's softmax) or a whole rollout (`RolloutEngine` over stand-in episodes that
run to the token budget). Measured: the process's peak resident memory (ru_maxrss) minus
its resident memory before the model was built; with a fixed mmap threshold (MALLOC_MMAP_THRESHOLD_,
set for each configuration's process) glibc hands every large tensor back to the kernel when
freed, so resident memory follows the live tensors. Predicted:
the model's weights, adapters and the phase's parts, at the same sizes. Prints one line per
configuration and the ratio measured / predicted.

Measured on 2 quiet CPU cores (float32, torch 2.13 CPU, 2026-12-05), measured / predicted:
update-mb2-t512 965 / 928 MiB = 1.04; update-mb4-t512-ckpt 1633 / 1686 MiB = 0.97;
rollout-b16-t640-mha 325 / 376 MiB = 0.86 (decode only: the bound counts one layer at full capacity
while growth holds the old, half-size one); engine-b16-t1024-mha (the RolloutEngine itself: turns,
observations, rows dropped and repacked, compaction) 366 / 381 MiB = 0.96. Each is within 15%.
Again at 40ef037 (the batch kept within the episode limit; 2026-12-06): 1.04, 0.97, 0.86, and the
engine 383 / 381 MiB = 1.01. The
engine configuration with the code before the cache moved rows and reallocated layer by layer
(5833010): 551 MiB measured. On a GPU, gpu_step's receipts put torch.cuda.max_memory_allocated
next to the same prediction, at the profile's bound and at the run's own shapes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [  # name, phase, rows, tokens (episode limit), gradient checkpointing, KV heads
    ("update-mb2-t512", "update", 2, 512, False, 2),
    ("update-mb4-t512-ckpt", "update", 4, 512, True, 2),
    ("rollout-b16-t640-mha", "rollout", 16, 640, False, 8),  # 8 KV heads: the KV cache's growth dominates
    ("engine-b16-t1024-mha", "engine", 16, 1024, False, 8),  # RolloutEngine: turns, observations, compaction
]
DIMS = dict(
    vocab_size=32000, hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8
)
PROMPT = 128  # rollout: the first prefill (also the prefill chunk the model counts)
TURN, OBSERVATION = (
    PROMPT,
    32,
)  # engine: tokens per assistant turn (the prefill the model counts) and per observation


def rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def current_rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


def update_pass(ac: Any, ids: Any) -> None:
    """The operations of rl.batch.policy_outputs (entropy on) over ids (rows, tokens), then backward."""
    import torch

    from pappo.policy.adapters import POLICY

    rows, tokens = ids.shape
    ones = torch.ones(rows, tokens)
    with ac.adapter(POLICY):
        hidden = ac.policy_hidden(ids, torch.ones_like(ids))
        picked = ones[:, 1:].bool()
        logits = ac.lm_head(hidden[:, :-1][picked]).float() / 1.0
        logp = torch.log_softmax(logits, -1)
        ent = -(logp.exp() * logp).sum(-1)
        (logp.gather(-1, ids[:, 1:][picked][:, None]).sum() + ent.sum()).backward()


def decode_loop(ac: Any, ids: Any) -> None:
    """The lean decoder over ids (rows, tokens): the first PROMPT in one forward, then a token a step."""
    import torch

    from pappo.config.policy import RolloutParams
    from pappo.policy.adapters import POLICY
    from pappo.policy.decoder import Qwen2Decoder
    from pappo.policy.sampler import Sampler

    rows, tokens = ids.shape
    with ac.adapter(POLICY):
        dec = Qwen2Decoder(ac.peft)
    cache, prompt = dec.new_cache(), PROMPT
    sample = Sampler(RolloutParams(), list(range(rows)))
    mask = torch.ones(rows, prompt, dtype=torch.long)
    logits = dec(ids[:, :prompt], mask, torch.arange(prompt).expand(rows, prompt), cache, True)[:, -1]
    for t in range(prompt, tokens):
        nxt, _ = sample(logits, list(range(rows)))
        mask = torch.cat([mask, torch.ones(rows, 1, dtype=torch.long)], 1)
        logits = dec(nxt[:, None], mask, torch.full((rows, 1), t), cache, True)[:, -1]


def one(name: str, phase: str, rows: int, tokens: int, ckpt: bool, kv_heads: int) -> dict:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from pappo.config import load_params
    from pappo.policy import memory
    from pappo.policy.adapters import ActorCritic

    torch.manual_seed(0)
    params = load_params(ROOT / "params.yaml")
    cfg = Qwen2Config(
        **DIMS, num_key_value_heads=kv_heads, tie_word_embeddings=False, max_position_embeddings=4096
    )
    base = current_rss()
    model = Qwen2ForCausalLM(cfg)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train(ckpt)
    ac = ActorCritic(model, params.lora)
    ids = torch.randint(0, cfg.vocab_size, (rows, tokens))
    if phase == "update":
        update_pass(ac, ids)
    elif phase == "engine":
        engine_rollout(ac, rows, tokens)
    else:
        decode_loop(ac, ids)
    measured = rss() - base
    p = params.model_copy(
        update={
            "model": params.model.model_copy(update={"gradient_checkpointing": ckpt}),
            "rollout": params.rollout.model_copy(
                update={
                    "max_tokens_per_episode": tokens,
                    "batch_size": rows,
                    "max_new_tokens_per_turn": TURN if phase == "engine" else PROMPT,
                }
            ),
            "rl": params.rl.model_copy(update={"micro_batch_size": rows}),
        }
    )
    pred = memory.predict(
        p, memory.Dims.from_config(cfg), rows=rows, prompt_tokens=PROMPT, sampled_fraction=1.0
    )
    fixed = pred.parts["weights"] + pred.parts["adapters_and_optimizer"]
    # no optimizer step here: no AdamW states (half of ADAPTER_BYTES), and no gradients in the rollout
    absent = pred.parts["adapters_and_optimizer"] * (2 if phase == "update" else 3) // 4
    predicted = (pred.update if phase == "update" else pred.rollout) - absent
    return {
        "name": name,
        "measured_bytes": measured,
        "predicted_bytes": predicted,
        "fixed_bytes": fixed,
        "ratio": measured / predicted,
    }


class _Codec:
    """Ids for the engine run: a prompt of its own length per episode, fixed-length observations;
    no id is a stop (turns run to their limit; the episodes' budgets stop them apart)."""

    pad_id, stop_ids = 0, frozenset({1})

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        n = int(messages[-1]["content"])
        return [2 + (7 * i) % (self.vocab - 2) for i in range(n)]

    def observation_ids(self, message: dict, stopped_on: int | None) -> list[int]:
        return [2 + (11 * i) % (self.vocab - 2) for i in range(OBSERVATION)]

    def decode(self, ids: list[int]) -> str:
        return "x"


class _Env:
    def __init__(self, i: int, prompt: int) -> None:
        self.task = SimpleNamespace(instance_id=f"episode-{i}")
        self.prompt, self.done, self.turns = prompt, False, 0
        self.per_turn_rewards: list[float] = []
        self.terminal_reward = 0.0
        self.metrics = SimpleNamespace(to_json=dict)


class _Vec:
    """The VecEnv protocol RolloutEngine plays: every episode goes on until the token budget
    ends it (`truncate`)."""

    def __init__(self, prompts: list[int]) -> None:
        self.envs = [_Env(i, p) for i, p in enumerate(prompts)]

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self) -> list[list[dict]]:
        return [[{"role": "user", "content": str(e.prompt)}] for e in self.envs]

    def step(self, texts: list[str | None]) -> list[SimpleNamespace | None]:
        out: list[SimpleNamespace | None] = []
        for env, text in zip(self.envs, texts):
            if text is None:
                out.append(None)
                continue
            env.turns += 1
            env.per_turn_rewards.append(0.0)
            out.append(SimpleNamespace(done=False, observation={"role": "tool", "content": ""}))
        return out

    def truncate(self, indices: list[int]) -> list[float]:
        for i in indices:
            self.envs[i].done = True
        return [0.0] * len(indices)


def engine_rollout(ac, rows: int, tokens: int) -> list:
    """RolloutEngine over `rows` episodes with prompts of PROMPT/2 to PROMPT tokens, turns of
    TURN tokens and observations of OBSERVATION, to the `tokens` budget: the cache grows, rows are
    dropped and repacked, and the last turn's rows stop apart (compaction)."""
    from pappo.config.policy import RolloutParams
    from pappo.policy.adapters import POLICY
    from pappo.policy.decoder import Qwen2Decoder
    from pappo.policy.rollout import RolloutEngine

    with ac.adapter(POLICY):
        dec = Qwen2Decoder(ac.peft)
    params = RolloutParams(batch_size=rows, max_new_tokens_per_turn=TURN, max_tokens_per_episode=tokens)
    prompts = [PROMPT // 2 + (PROMPT // 2) * i // max(rows - 1, 1) for i in range(rows)]
    engine = RolloutEngine(dec, _Codec(ac.peft.config.vocab_size), params)
    trajs = engine.run(_Vec(prompts), seed=0)
    assert engine.compactions > 0, "no compaction: the configuration does not exercise it"
    return trajs


def main() -> int:
    if len(sys.argv) > 1:
        print(json.dumps(one(*json.loads(sys.argv[1]))))
        return 0
    # The fixed mmap threshold the measure needs (module docstring), set for every configuration's
    # process whatever the caller exported: without it the peaks came out 5-40% higher (2026-12-05).
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    for config in CONFIGS:
        proc = subprocess.run(
            [sys.executable, __file__, json.dumps(config)],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )
        if proc.returncode != 0:
            print(f"{config[0]}: failed: {proc.stderr[-2000:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"{r['name']}: measured {r['measured_bytes'] / 2**20:.0f} MiB, predicted "
            f"{r['predicted_bytes'] / 2**20:.0f} MiB, measured / predicted {r['ratio']:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
