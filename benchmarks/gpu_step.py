"""One PPO step at model scale: batched multi-turn rollouts, freeze, update; throughput, MFU, memory.

    python benchmarks/gpu_step.py --config 7b --device cuda --out docs/receipts/gpu_step-7b.json
    python benchmarks/gpu_step.py --config tiny --device cpu [--episodes 2x2] [--max-turns 3]

Builds the Qwen2.5-Coder-7B-Instruct architecture (`--config 7b`, the dims of its config.json) or
the params.yaml tiny profile with random weights (nothing is downloaded), wraps it in the
trainer's ActorCritic (policy LoRA + critic LoRA + value head over one frozen base) and times the
trainer's own phases of one PPO update: `Trainer.rollouts` (tasks x group episodes in lockstep, a
stand-in grader, no sandbox), then `Trainer.optimise`, timed in two at its freeze lap: the freeze
(old log-probs, values, advantages) and the ppo_epochs x minibatches steps of actor and critic
(target_kl off, so the work is fixed; no critic warm-up, which only the first update of a run
does). Prints tokens/s per phase, MFU and peak memory; writes a JSON receipt atomically.

Vocabulary: both configs use the pappo tokenizer built from the warm-up repos (Qwen's cannot be
downloaded), so sampled ids decode. The 7B architecture is therefore run with a 4096-token
vocabulary: embedding + lm_head are 1.06B parameters fewer than the real 152064-vocab model
(6.56B vs 7.62B). FLOPs and MFU are computed for the model actually run.

MFU (model FLOPs utilisation; PaLM, Chowdhery et al. 2022, appendix B; Chinchilla, Hoffmann et
al. 2022, appendix F). N = matmul weights used per token: per layer q, k, v, o (GQA shapes) and
gate, up, down, plus the lm_head (hidden x vocab); embedding lookups, norms, biases and the LoRA
adapters (<1% at 7B r16) are not counted. Forward FLOPs/token = 2N + 2*2*L*d_attn*T (QK^T and AV;
d_attn = heads x head_dim; T = the row's sequence length, no causal halving, as PaLM). Training:
full = 3x forward; LoRA over a frozen base = 2x forward (forward + activation gradients, no base
weight gradients). Gradient-checkpointing recompute is not counted (model, not hardware, FLOPs).
Update FLOPs = epochs x sum over rows of (policy + critic decoder passes over all T_i tokens:
prompt, tool and sampled) + the lm_head at the sampled positions only (the trainer applies it
nowhere else; the critic has none); trained tokens = epochs x 2 passes x sum T_i. MFU = FLOPs / seconds / the device's dense bf16 peak (table
below; None where unknown, e.g. CPU, or for float32 runs). Decode MFU, for information only: 2N x
generated tokens / rollout seconds (which also hold prefill, attention and environment time).

Measured on 2 CPU cores (tiny, 2x2 episodes, 3 turns x 32 tokens, fp32): 384 generated tokens at
700-840 tokens/s; 20840 trained tokens at 3000-6200 tokens/s; 0.8 GiB peak RSS; 12-16 s in all. The 7B
built on CPU in bf16: 6.555B parameters, 12.6 GiB peak RSS. 7B on one H200: not yet run (its
receipt goes to docs/receipts/gpu_step-7b.json). The last line is `receipt: <path>`.
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

from pappo.config import RLParams, RolloutParams, load_params, profile_mapping
from pappo.experiment import receipt as rc
from pappo.numerics import collect as collect_numerics
from pappo.io import atomic_write_json
from pappo.policy.adapters import ActorCritic
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import load_tokenizer, tiny_config
from pappo.policy.tokenizer import build_tokenizer
from pappo.rl.batch import from_trajectories
from pappo.rl.trainer import Trainer
from pappo.tasks.store import TaskStore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import stand_in_grades  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HUB_PROFILE = ROOT / "profiles" / "qwen2.5-coder-7b.yaml"  # its decode path is what the benchmark times
SCHEMA = "pappo.gpu_step/1"
SOURCE_PATHS = ["src/pappo", "benchmarks", "pyproject.toml", "requirements.lock"]
QWEN25_CODER_7B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, max_position_embeddings=32768, rope_theta=1000000.0,
                       rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu")  # fmt: skip
QWEN25_VOCAB = 152064
# Dense (no sparsity) bf16 tensor-core peaks from NVIDIA datasheets; the first substring match wins.
PEAK_BF16 = (("H200 NVL", 835.5e12), ("H200", 989.4e12), ("H100 NVL", 835.5e12), ("H100 PCIe", 756e12),
             ("H100", 989.4e12), ("A100", 312e12), ("L40S", 362e12))  # fmt: skip
_KEYS = ("episodes", "max_turns", "max_new_tokens_per_turn", "gradient_checkpointing")
DEFAULTS = {"7b": dict(zip(_KEYS, ("8x4", None, None, True))), "tiny": dict(zip(_KEYS, ("2x2", 3, 32, False)))}


def model_flops_per_token(cfg: Any, context_len: float, train: bool, lora: bool, lm_head: bool = True) -> float:
    """Model FLOPs per token (module docstring); cfg: any object with Qwen2Config's size fields."""
    h, layers, heads = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or h // heads
    q, kv = heads * head_dim, cfg.num_key_value_heads * head_dim
    n = layers * (h * q + 2 * h * kv + q * h + 3 * h * cfg.intermediate_size) + (h * cfg.vocab_size if lm_head else 0)
    forward = 2 * n + 2 * 2 * layers * q * context_len
    return forward * ((2 if lora else 3) if train else 1)


def peak_bf16(device_name: str | None) -> float | None:
    return next((peak for key, peak in PEAK_BF16 if device_name and key in device_name), None)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(DEFAULTS), default="tiny")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda if available")
    ap.add_argument("--dtype", choices=["auto", "bfloat16", "float32"], default="auto", help="auto: bf16 on cuda")
    ap.add_argument("--episodes", help="TASKSxGROUP: rl.tasks_per_update x rl.group_size (7b 8x4, tiny 2x2)")
    ap.add_argument("--max-new-tokens-per-turn", type=int, help="default: params (7b), 32 (tiny)")
    ap.add_argument("--max-turns", type=int, help="env.max_turns; default: params (7b), 3 (tiny)")
    ap.add_argument("--micro-batch-size", type=int, help="rl.micro_batch_size; default: params")
    ap.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction, help="default: on for 7b only")
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--out", type=Path, help="receipt; default: docs/receipts/gpu_step-<config>-<device>.json")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for key, value in DEFAULTS[args.config].items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    tasks, _, group = str(args.episodes).partition("x")
    if not (tasks.isdigit() and group.isdigit() and int(tasks) > 0 and int(group) > 0):
        ap.error(f"--episodes {args.episodes!r}: expected TASKSxGROUP, e.g. 8x4")
    args.tasks, args.group = int(tasks), int(group)
    return args


def bench_params(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    params = load_params(args.params)
    # critic_warmup_steps 0: time a steady-state update, not the first update's extra critic steps
    rl = {"tasks_per_update": args.tasks, "group_size": args.group, "target_kl": None, "updates": 1,
          "critic_warmup_steps": 0}  # fmt: skip
    rl |= {"micro_batch_size": args.micro_batch_size} if args.micro_batch_size else {}
    # the hub profile's decode path and loss tokens, whatever params.yaml's CPU tier uses
    hub = profile_mapping(args.params, HUB_PROFILE)
    hub_rl, hub_rollout = RLParams.model_validate(hub["rl"]), RolloutParams.model_validate(hub["rollout"])
    rl |= {"loss_tokens": hub_rl.loss_tokens}
    rollout = {"batch_size": args.tasks * args.group, "calls": hub_rollout.calls}  # one lockstep batch
    rollout |= {"max_new_tokens_per_turn": args.max_new_tokens_per_turn} if args.max_new_tokens_per_turn else {}
    env = {"max_turns": args.max_turns} if args.max_turns else {}
    return params.model_copy(update={"rl": params.rl.model_copy(update=rl),
                                     "rollout": params.rollout.model_copy(update=rollout),
                                     "env": params.env.model_copy(update=env)})  # fmt: skip


def model_config(name: str, tokenizer: Any, params: Any):  # type: ignore[no-untyped-def]
    ids = {k: getattr(tokenizer, k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    if name == "tiny":
        return tiny_config(params.model.tiny, len(tokenizer), **ids)
    # len(tokenizer), not rounded up: every id the sampler can draw must decode.
    return Qwen2Config(vocab_size=len(tokenizer), use_sliding_window=False, attn_implementation="sdpa",
                       **QWEN25_CODER_7B, **ids)  # fmt: skip


def build_model(cfg: Any, device: torch.device, dtype: torch.dtype, seed: int, ckpt: bool):  # type: ignore[no-untyped-def]
    """Random weights made on `device` in `dtype` directly (no 30 GB float32 7B on the host first)."""
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
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
    return int(rc.collect_resources().peak_rss_mb * 2**20)


def run_phases(trainer: Any, device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    """Time rollout, freeze and update separately, each with its own peak memory."""
    out: dict[str, Any] = {"peak_bytes": {"setup": peak_bytes(device, reset=True)}}
    start = sync_time(device)
    trajs, groups, index = trainer.rollouts(0)  # the pipeline's own path: a decoder snapshot on `device`
    out["rollout_s"] = sync_time(device) - start
    out["peak_bytes"]["rollout"] = peak_bytes(device, reset=True)
    out["generated"], out["episodes"] = sum(int(t.metrics["tokens"]) for t in trajs), len(trajs)
    if device.type == "cuda":
        torch.cuda.empty_cache()  # hand the snapshot's and KV cache's blocks back before training
    batch = from_trajectories(trajs, groups, trainer.codec.pad_id, index).to(device)
    marks: dict[str, float] = {}

    def frozen(name: str) -> None:  # optimise's lap("freeze"): ends the freeze phase, starts the update's
        marks["freeze_end"] = sync_time(device)
        out["peak_bytes"]["freeze"] = peak_bytes(device, reset=True)
        marks["update_start"] = sync_time(device)

    start = sync_time(device)
    fields = trainer.optimise(batch, 0, lap=frozen)
    end = sync_time(device)
    out["freeze_s"], out["update_s"] = marks["freeze_end"] - start, end - marks["update_start"]
    out["peak_bytes"]["update"] = peak_bytes(device)
    out["steps"], out["epochs"] = len(fields["steps"]), fields["epochs_used"]
    out["rows_tokens"] = batch.attention_mask.sum(-1).tolist()
    out["rows_sampled"] = batch.response_mask.sum(-1).long().tolist()
    return out


def phase_flops(cfg: Any, tokens: list[int], sampled: list[int], train: bool, passes: int, heads: int) -> float:
    """`passes` decoder passes over every row's tokens; `heads` of them (the policy's and the
    reference's, not the critic's) add the lm_head at the row's sampled positions."""
    total = 0.0
    for t, r in zip(tokens, sampled):
        body = model_flops_per_token(cfg, t, train, lora=True, lm_head=False)
        total += passes * t * body + heads * r * (model_flops_per_token(cfg, t, train, lora=True) - body)
    return total


def measures(cfg: Any, r: dict[str, Any], peak: float | None, kl_passes: int) -> dict[str, Any]:
    """Per-phase seconds, tokens, tokens/s, FLOPs and MFU (None without a peak)."""
    tokens, sampled, epochs = r["rows_tokens"], r["rows_sampled"], r["epochs"]
    seq, gen = sum(tokens), r["generated"]
    fl = {"rollout": gen * model_flops_per_token(cfg, 0, train=False, lora=True),  # 2N per generated token
          "freeze": phase_flops(cfg, tokens, sampled, False, 2 + kl_passes, 1 + kl_passes),  # + reference
          "update": epochs * phase_flops(cfg, tokens, sampled, True, 2, 1)}  # actor and critic, every epoch  # fmt: skip
    mfu = {k: fl[k] / r[f"{k}_s"] / peak if peak else None for k in fl}
    return {
        "rollout": {"seconds": r["rollout_s"], "tokens_generated": gen, "tokens_per_s": gen / r["rollout_s"],
                    "decode_flops": fl["rollout"], "decode_mfu": mfu["rollout"]},
        "freeze": {"seconds": r["freeze_s"], "sequence_tokens": seq, "passes": 2 + kl_passes,
                   "tokens_per_s": seq / r["freeze_s"], "flops": fl["freeze"], "mfu": mfu["freeze"]},
        "update": {"seconds": r["update_s"], "epochs_used": epochs, "optimizer_steps": r["steps"],
                   "tokens_trained": 2 * epochs * seq, "tokens_per_s": 2 * epochs * seq / r["update_s"],
                   "flops": fl["update"], "mfu": mfu["update"]},
    }  # fmt: skip


def setup(args: argparse.Namespace, device: torch.device, dtype: torch.dtype):  # type: ignore[no-untyped-def]
    params = bench_params(args)
    with tempfile.TemporaryDirectory(prefix="pappo-bench-tok-") as tmp:
        build_tokenizer(params.model.tiny, params.tasks.warmup.repos, Path(tmp))
        tokenizer = load_tokenizer(Path(tmp))
    cfg = model_config(args.config, tokenizer, params)
    model = build_model(cfg, device, dtype, args.seed, args.gradient_checkpointing)
    base = sum(p.numel() for p in model.parameters())
    torch.manual_seed(args.seed)  # LoRA and value-head init
    ac = ActorCritic(model, params.lora)
    store = TaskStore.from_params(params, "warmup")
    unused = Path(tempfile.gettempdir()) / "pappo-gpu-step-unused"  # only checkpoints go there: never written
    trainer = Trainer("ppo", params, ac, ChatCodec(tokenizer), store, sorted(store.tasks), stand_in_grades,
                      unused, seed=args.seed)  # fmt: skip
    return params, cfg, trainer, base


def model_record(cfg: Any, base: int, ac: Any, name: str) -> dict[str, Any]:
    keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings", "hidden_act")  # fmt: skip
    rope = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", getattr(cfg, "rope_theta", None))
    copies = 1 if cfg.tie_word_embeddings else 2  # embedding, and lm_head unless tied
    full = base + copies * cfg.hidden_size * (QWEN25_VOCAB - cfg.vocab_size) if name == "7b" else None
    return {k: getattr(cfg, k) for k in keys} | {
        "rope_theta": rope, "parameters_base": base, "parameters_base_at_vocab_152064": full,
        "parameters_total": sum(p.numel() for p in ac.parameters()),
        "parameters_trainable": sum(p.numel() for p in ac.parameters() if p.requires_grad)}  # fmt: skip


def receipt(args: argparse.Namespace, device: torch.device, dtype: torch.dtype, built: tuple, r: dict[str, Any],
            clock: Any) -> dict[str, Any]:  # fmt: skip
    params, cfg, trainer, base = built
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = peak_bf16(name)
    phases = measures(cfg, r, peak if dtype == torch.bfloat16 else None, int(params.rl.kl_coef > 0))
    hardware = rc.collect_hardware()
    if device.type == "cpu":  # the kind this run used, also on a machine that has a GPU
        hardware = hardware.model_copy(update={"accelerator": "cpu", "accelerator_model_name": None})
    rp, rl = params.rollout, params.rl
    return {
        "schema": SCHEMA, "config": args.config, "device": str(device), "device_name": name,
        "dtype": str(dtype).removeprefix("torch."), "gradient_checkpointing": args.gradient_checkpointing,
        "vocab_note": f"pappo tokenizer vocabulary ({cfg.vocab_size}), not Qwen's {QWEN25_VOCAB}; FLOPs and "
                      "MFU are for the model actually run",
        "model": model_record(cfg, base, trainer.ac, args.config), "lora": params.lora.model_dump(mode="json"),
        "batch": {"tasks": args.tasks, "group_size": args.group, "episodes": r["episodes"],
                  "max_turns": params.env.max_turns, "max_new_tokens_per_turn": rp.max_new_tokens_per_turn,
                  "max_tokens_per_episode": rp.max_tokens_per_episode, "ppo_epochs": rl.ppo_epochs,
                  "minibatches": rl.minibatches, "micro_batch_size": rl.micro_batch_size, "target_kl": None},
        "phases": phases, "tokens_generated": phases["rollout"]["tokens_generated"],
        "tokens_trained": phases["update"]["tokens_trained"], "peak_flops_bf16": peak,
        "mfu": phases["update"]["mfu"],
        "peak_memory": {"bytes": max(r["peak_bytes"].values()), "per_phase_bytes": r["peak_bytes"],
                        "measure": "torch.cuda.max_memory_allocated" if device.type == "cuda" else "peak RSS"},
        "params_file": rc.sanitise(str(args.params), ROOT), "seed": args.seed,
        "hardware": hardware.model_dump(mode="json"), "software": rc.collect_software().model_dump(mode="json"),
        "source": rc.collect_source(ROOT, SOURCE_PATHS).model_dump(mode="json"),
        "determinism": rc.collect_determinism(args.seed, collect_numerics(params.numerics)).model_dump(mode="json"),
        "timing": clock.stop().model_dump(mode="json"),
    }  # fmt: skip


def summary(rec: dict[str, Any]) -> list[str]:
    m, b, (ro, fr, up) = rec["model"], rec["batch"], (rec["phases"][k] for k in ("rollout", "freeze", "update"))
    n = m["parameters_base"]
    size = f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"

    def mfu(x: float | None) -> str:
        if rec["peak_flops_bf16"] is None:
            return f"n/a (no bf16 peak known for {rec['device_name']})"
        if x is None:
            return f"n/a ({rec['dtype']} run; the peak is bf16)"
        return f"{100 * x:.1f}% of {rec['peak_flops_bf16'] / 1e12:.0f} TFLOP/s bf16 ({rec['device_name']})"

    lines = [
        f"config: {rec['config']} ({size} params incl. embeddings, vocab {m['vocab_size']}), device {rec['device']} "
        f"{'bf16' if rec['dtype'] == 'bfloat16' else 'fp32'}, LoRA r{rec['lora']['rank']}",
        f"rollout: {b['episodes']} episodes, {ro['tokens_generated']} generated tokens in {ro['seconds']:.1f} s = "
        f"{ro['tokens_per_s']:.0f} tokens/s",
        f"freeze: {fr['seconds']:.1f} s; update: {up['epochs_used']} epochs x {b['minibatches']} minibatches, "
        f"{up['tokens_trained']} trained tokens in {up['seconds']:.1f} s = {up['tokens_per_s']:.0f} tokens/s",
        f"update MFU: {mfu(up['mfu'])}",
        f"freeze MFU: {mfu(fr['mfu'])}; decode MFU (2N x generated tokens / rollout s): {mfu(ro['decode_mfu'])}",
        f"peak memory: {rec['peak_memory']['bytes'] / 2**30:.2f} GiB ({rec['peak_memory']['measure']})",
    ]  # fmt: skip
    if rec["config"] == "7b":
        lines.insert(1, f"note: the 7B architecture with the pappo tokenizer's {m['vocab_size']}-token vocabulary "
                        f"(Qwen's {QWEN25_VOCAB}-vocab model: {m['parameters_base_at_vocab_152064'] / 1e9:.2f}B); "
                        "FLOPs and MFU are for the model run")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"gpu_step: --device cuda, but torch {torch.__version__} sees no CUDA device here; "
              "use --device cpu (or auto). Nothing was written.", file=sys.stderr)  # fmt: skip
        return 2
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}.get(args.dtype) or (
        torch.bfloat16 if device.type == "cuda" else torch.float32)  # fmt: skip
    out = args.out or Path(f"docs/receipts/gpu_step-{args.config}-{device.type}.json")
    clock = rc.Clock.start()
    built = setup(args, device, dtype)
    results = run_phases(built[2], device, dtype)
    rec = receipt(args, device, dtype, built, results, clock)
    atomic_write_json(out, rec)  # only now, and atomically: a failed run writes nothing
    print("\n".join(summary(rec)))
    print(f"receipt: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
