"""One PPO step at model scale: batched multi-turn rollouts, freeze, update; throughput, MFU, memory.

    python benchmarks/gpu_step.py --config 7b --device cuda --out gpu_step-7b.json
    python benchmarks/gpu_step.py --config tiny --device cpu [--episodes 2x2] [--max-turns 3]
    python benchmarks/gpu_step.py --config 7b --dtype float16 --logits-fp32 --rollout-is token ...

Builds the Qwen2.5-Coder-7B-Instruct architecture (`--config 7b`, the dims of its config.json) or
the params.yaml tiny profile with random weights (nothing is downloaded), wraps it in the
trainer's ActorCritic (policy LoRA + critic LoRA + value head over one frozen base) and times the
trainer's own phases of one PPO update: `Trainer.rollouts` (tasks x group episodes in lockstep, a
stand-in grader, no sandbox), then `update.optimise`, timed in two at its freeze lap: the freeze
(old log-probs, values, advantages) and the ppo_epochs x minibatches steps of actor and critic
(target_kl off, so the work is fixed; no critic warm-up, which only the first update of a run
does). Prints each phase's numbers as soon as it ends (tokens/s, MFU, peak memory next to the
memory model's prediction, `pappo.policy.memory`, and the trainer's sampler-vs-trainer
`rollout/logprob_gap_*`) and rewrites the JSON receipt atomically after every phase
(`complete: false` until the end), so a run killed by a timeout or an out-of-memory error keeps
what it measured. Outside a git checkout the receipt's commit is null and `source.note` says why.

The profile (`--profile`; default for `--config 7b`: profiles/qwen2.5-coder-7b.yaml) sets what it
sets for a user: LoRA, rollout (batch, turn and episode token limits, calls), rl (tasks x group =
64 episodes, ppo_epochs, minibatches, micro-batches: use_dynamic_bsz with ppo_max_token_len_per_gpu,
or micro_batch_size; loss_tokens). With `--config 7b`,
max_turns defaults to enough turns for every episode to reach rollout.max_tokens_per_episode (a
random-weight policy rarely stops or submits). `--dtype`, `--logits-fp32` and `--rollout-is` go
through params overrides (model.dtype, model.logits_fp32, rl.rollout_is_level): a knob this
checkout's config does not have is refused by name.

Vocabulary: the 7B runs at Qwen's 152064 ids (the real embedding and lm_head: their memory, the
(B, V) logits, the lm_head FLOPs and the sampler's softmax over V) while the pappo tokenizer
(built from the warm-up repos; Qwen's cannot be downloaded) has 4096. So that every sampled id
decodes, the lm_head gets a bias: 0 for the tokenizer's ids, -1e4 beyond them (finite: no NaN in
the entropy's p log p); exp(-1e4) is exactly 0 in float32 and bfloat16, so the ids beyond the
tokenizer have probability 0 for the sampler and the trainer alike, and the sampler-vs-trainer
gap is unchanged. `--vocab` sets another size (the tokenizer's own: no bias).

MFU (model FLOPs utilisation: the FLOPs counted, over which peak) is defined in the docstring of
benchmarks/gpu_step_record.py, which also makes the receipt and the printed lines from what this
script measures.

Measured on 2 CPU cores (tiny, 2x2 episodes, 3 turns x 32 tokens, fp32): 384 generated tokens at
700-840 tokens/s; 20840 trained tokens at 3000-6200 tokens/s; 0.8 GiB peak RSS; 12-16 s in all. The 7B
built on CPU in bf16: 6.555B parameters, 12.6 GiB peak RSS. The issue-44 H200 run at c24b699 used
params.yaml's LoRA and limits with a 4096 vocabulary; the profile at 152064 ids: benchmarks/gpu_check.sh.
The last line is `receipt: <path>`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from pappo.experiment import machine
from pappo.io import atomic_write_json
from pappo.policy import decode_graphs, memory
from pappo.policy.adapters import ActorCritic
from pappo.policy.attention import ATTN_IMPLEMENTATION
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import tiny_config
from pappo.rl.batch import from_trajectories
from pappo.rl.trainer import Trainer
from pappo.rl.update import optimise
from pappo.tasks.store import TaskStore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # common.py, gpu_step_params.py, gpu_step_record.py
from common import copy_bandwidth, fresh_tokenizer, padded_tokens, sampled_context, stand_in_grades
from gpu_step_params import DEFAULTS, DTYPES, bench_params
from gpu_step_record import BEYOND_TOKENIZER_BIAS, SCHEMA, head_lines, phase_lines, receipt, say

QWEN25_CODER_7B = dict(
    hidden_size=3584,
    intermediate_size=18944,
    num_hidden_layers=28,
    num_attention_heads=28,
    num_key_value_heads=4,
    max_position_embeddings=32768,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    hidden_act="silu",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(DEFAULTS), default="tiny")
    ap.add_argument(
        "--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda if available"
    )
    ap.add_argument(
        "--dtype", choices=["auto", *DTYPES], default="auto", help="model.dtype; auto: bf16 on cuda"
    )
    ap.add_argument("--logits-fp32", action="store_true", help="model.logits_fp32: true")
    ap.add_argument("--rollout-is", choices=["token", "sequence"], help="rl.rollout_is_level")
    ap.add_argument(
        "--profile", type=Path, help="params overlay; default: the hub profile for 7b, none for tiny"
    )
    ap.add_argument("--episodes", help="TASKSxGROUP: rl.tasks_per_update x rl.group_size (default: profile)")
    ap.add_argument("--max-new-tokens-per-turn", type=int, help="default: the profile's (7b), 32 (tiny)")
    ap.add_argument("--max-tokens-per-episode", type=int, help="default: the profile's (7b), params (tiny)")
    ap.add_argument(
        "--max-turns", type=int, help="env.max_turns; 7b default: enough to reach the token limit"
    )
    ap.add_argument("--micro-batch-size", type=int, help="rl.micro_batch_size; default: the profile's")
    ap.add_argument(
        "--use-dynamic-bsz",
        action=argparse.BooleanOptionalAction,
        help="rl.use_dynamic_bsz; default: the profile's",
    )
    ap.add_argument(
        "--ppo-max-token-len-per-gpu", type=int, help="rl.ppo_max_token_len_per_gpu; default: the profile's"
    )
    ap.add_argument("--ppo-epochs", type=int, help="rl.ppo_epochs; default: the profile's")
    ap.add_argument("--minibatches", type=int, help="rl.minibatches; default: the profile's")
    ap.add_argument("--kv-cache", choices=["grow", "static"], help="rollout.kv_cache; default: the profile's")
    ap.add_argument(
        "--enforce-eager",
        action=argparse.BooleanOptionalAction,
        help="rollout.enforce_eager (--no-enforce-eager: decode steps as CUDA graphs); default: the profile's",
    )
    ap.add_argument("--vocab", type=int, help="model vocabulary (7b default 152064; tiny: the tokenizer's)")
    ap.add_argument(
        "--gradient-checkpointing", action=argparse.BooleanOptionalAction, help="default: on for 7b only"
    )
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument(
        "--out", type=Path, help="receipt; default: docs/receipts/gpu_step-<config>-<device>.json"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for key, value in DEFAULTS[args.config].items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    return args


def model_config(name: str, tokenizer: Any, params: Any, vocab: int | None = None) -> Any:
    ids = {k: getattr(tokenizer, k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    if name == "tiny":
        return tiny_config(params.model.tiny, vocab or len(tokenizer), **ids)
    return Qwen2Config(
        vocab_size=vocab or len(tokenizer),
        use_sliding_window=False,
        attn_implementation=ATTN_IMPLEMENTATION,
        **QWEN25_CODER_7B,
        **ids,
    )


def build_model(
    cfg: Any, device: torch.device, dtype: torch.dtype, seed: int, ckpt: bool, decodable: int | None = None
):
    """Random weights made on `device` in `dtype` directly (no 30 GB float32 7B on the host first).
    decodable: the tokenizer's size, when the vocabulary is larger (module docstring: the lm_head bias)."""
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM._from_config(cfg, dtype=dtype, attn_implementation=ATTN_IMPLEMENTATION)
        if decodable is not None and decodable < cfg.vocab_size:
            head = torch.nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=True, dtype=dtype)
            with torch.no_grad():
                head.weight.copy_(model.lm_head.weight)
                head.bias.zero_()
                head.bias[decodable:] = BEYOND_TOKENIZER_BIAS
            model.lm_head = head
    if not ckpt:
        return model.eval()
    # As pappo.experiment.run.place: HF checkpoints in train mode only (LoRA dropout must be 0). The
    # trainer's forwards run the decoder (Qwen2Model) with use_cache=False, so this applies to them.
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model.train()


def sync_time(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def peak_bytes(device: torch.device, reset: bool = False) -> int:
    """CUDA: max_memory_allocated since the last reset; CPU: the process's peak RSS so far."""
    if device.type == "cuda":
        peak = int(torch.cuda.max_memory_allocated(device))
        if reset:
            torch.cuda.reset_peak_memory_stats(device)
        return peak
    return int(machine.collect_resources().peak_rss_mb * 2**20)


def run_rollout(trainer: Any, device: torch.device, out: dict[str, Any]) -> Any:
    """Time the rollout phase into `out`; returns the trainer batch built from it."""
    out["peak_bytes"] = {"setup": peak_bytes(device, reset=True)}
    decode_graphs.reset_stats()
    start = sync_time(device)
    trajs, groups, index = trainer.rollouts(0)  # the pipeline's own path: a decoder snapshot on `device`
    out["rollout_s"] = sync_time(device) - start
    out["decode_graphs"] = decode_graphs.reset_stats()
    out["peak_bytes"]["rollout"] = peak_bytes(device, reset=True)
    out["generated"], out["episodes"] = sum(int(t.metrics["tokens"]) for t in trajs), len(trajs)
    out["sampled_context"] = sampled_context(trajs)
    out["episode_tokens"] = [len(t.token_ids) for t in trajs]
    if device.type == "cuda":
        torch.cuda.empty_cache()  # hand the snapshot's and KV cache's blocks back before training
    batch = from_trajectories(trajs, groups, trainer.learner.codec.pad_id, index).to(device)
    out["rows_tokens"] = batch.attention_mask.sum(-1).tolist()
    out["rows_sampled"] = batch.response_mask.sum(-1).long().tolist()
    return batch


# What the update's micro-batches held: the most padded and the most sampled tokens of one (the memory
# model's update phase), and the padded and real tokens of all (the share of its forwards that is padding)
MICRO_FIELDS = ("padded_tokens", "sampled_tokens", "padded_total", "tokens_total")


def run_optimise(trainer: Any, batch: Any, device: torch.device, out: dict[str, Any], on_freeze: Any) -> None:
    """Time the freeze and the update into `out`; `on_freeze()` runs once the freeze is measured."""
    marks: dict[str, float] = {}
    learner = trainer.learner
    cut = learner.micro

    def micro(b: Any, idx: torch.Tensor) -> list[torch.Tensor]:  # the update's micro-batches, recorded
        parts = cut(b, idx)
        if "update_start" in marks:
            seen = out.setdefault("update_micro", dict.fromkeys(MICRO_FIELDS, 0))
            for m in parts:
                padded, sampled = padded_tokens(b, m), int(b.response_mask[m].sum())
                seen["padded_tokens"] = max(seen["padded_tokens"], padded)  # the largest micro-batch's
                seen["sampled_tokens"] = max(seen["sampled_tokens"], sampled)
                seen["padded_total"] += padded
                seen["tokens_total"] += int(b.attention_mask[m].sum())
        return parts

    learner.micro = micro

    def frozen(name: str) -> None:  # optimise's lap("freeze"): ends the freeze phase, starts the update's
        marks["freeze_end"] = sync_time(device)
        out["peak_bytes"]["freeze"] = peak_bytes(device, reset=True)
        out["freeze_s"] = marks["freeze_end"] - start
        on_freeze()
        marks["update_start"] = sync_time(device)

    start = sync_time(device)
    fields = optimise(trainer.learner, batch, 0, lap=frozen)
    end = sync_time(device)
    out["update_s"] = end - marks["update_start"]
    out["peak_bytes"]["update"] = peak_bytes(device)
    out["steps"], out["epochs"] = len(fields["steps"]), fields["epochs_used"]
    gaps = fields["freeze"].items()
    out["gap"] = {k.removeprefix("rollout/"): float(v) for k, v in gaps if "logprob_gap" in k}


def setup(args: argparse.Namespace, device: torch.device, dtype: torch.dtype):
    params = bench_params(args, dtype)
    tokenizer = fresh_tokenizer(params)
    cfg = model_config(args.config, tokenizer, params, args.vocab)
    model = build_model(cfg, device, dtype, args.seed, args.gradient_checkpointing, decodable=len(tokenizer))
    base = sum(p.numel() for p in model.parameters())
    torch.manual_seed(args.seed)  # LoRA and value-head init
    ac = ActorCritic(model, params.lora, params.model.logits_fp32)
    store = TaskStore.from_params(params, "warmup")
    unused = Path(tempfile.gettempdir()) / "pappo-gpu-step-unused"  # only checkpoints go there: never written
    trainer = Trainer(
        "ppo",
        params,
        ac,
        ChatCodec(tokenizer),
        store,
        sorted(store.tasks),
        stand_in_grades,
        unused,
        seed=args.seed,
    )
    return params, cfg, trainer, base, len(tokenizer)


def rollout_oom(
    out: Path, args: argparse.Namespace, device: torch.device, dtype: torch.dtype, error: str, predicted: Any
) -> None:
    """Write and say the receipt of a rollout that ran out of memory: the error, the prediction, the peak."""
    peak = peak_bytes(device)
    atomic_write_json(
        out,
        {
            "schema": SCHEMA,
            "complete": False,
            "error": error,
            "phase": "rollout",
            "config": args.config,
            "device": str(device),
            "dtype": str(dtype),
            "peak_bytes_at_error": peak,
            "predicted": predicted.as_dict(),
        },
    )
    print(f"gpu_step: {error} in the rollout (peak {peak / 2**30:.2f} GiB); receipt: {out}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            f"gpu_step: --device cuda, but torch {torch.__version__} sees no CUDA device here; "
            "use --device cpu (or auto). Nothing was written.",
            file=sys.stderr,
        )
        return 2
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    dtype = DTYPES.get(args.dtype) or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    out = args.out or Path(f"docs/receipts/gpu_step-{args.config}-{device.type}.json")
    clock = machine.Clock.start()
    r: dict[str, Any] = {"copy_bandwidth": copy_bandwidth(device)}  # first: the GPU holds nothing else yet
    built = setup(args, device, dtype)
    r["decode_rows"] = min(args.tasks * args.group, built[0].rollout.batch_size)

    def record(complete: bool) -> dict[str, Any]:
        rec = receipt(args, device, dtype, built, r, clock, complete)
        atomic_write_json(out, rec)  # after every phase: a run killed later keeps what it measured
        return rec

    params, cfg = built[0], built[1]
    predicted = memory.predict(params, memory.Dims.from_config(cfg), rows=args.tasks * args.group)
    say(
        [
            f"built: vocab {cfg.vocab_size}, {args.tasks * args.group} episodes on {device} in {dtype}; "
            f"predicted peak {predicted.peak / 2**30:.2f} GiB (rollout {predicted.rollout / 2**30:.2f}, update "
            f"{predicted.update / 2**30:.2f})"
        ]
    )
    try:
        batch = run_rollout(built[2], device, r)
        rec = record(False)
        say(head_lines(rec) + phase_lines(rec, "rollout"))
        run_optimise(built[2], batch, device, r, on_freeze=lambda: say(phase_lines(record(False), "freeze")))
    except torch.OutOfMemoryError as e:
        r["error"] = f"out of memory: {str(e).splitlines()[0]}"
        if "episodes" not in r:  # the rollout did not finish: the error, the prediction and the peak
            rollout_oom(out, args, device, dtype, r["error"], predicted)
            return 3
        r.pop("update_s", None)
        record(False)
        print(f"gpu_step: {r['error']}; receipt with the phases measured so far: {out}", flush=True)
        return 3
    say(phase_lines(record(True), "update"))
    print(f"receipt: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
