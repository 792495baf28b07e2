"""What benchmarks/gpu_step.py measured, as a receipt and as printed lines: FLOPs and MFU, peak
memory against the memory model (`pappo.policy.memory`), the receipt's records.

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
below; None where unknown, e.g. CPU, or for float32 runs; float16 has the same dense tensor-core
peak as bf16 on these parts). Decode MFU, for information only: 2N x
generated tokens / rollout seconds (which also hold prefill, attention and environment time).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from transformers import Qwen2Config

from pappo.config import Params
from pappo.experiment import machine, privacy
from pappo.experiment import receipt as rc
from pappo.numerics import collect as collect_numerics
from pappo.policy import memory

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import graph_counts

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "pappo.gpu_step/2"
SOURCE_PATHS = ["src/pappo", "benchmarks", "pyproject.toml", "requirements.lock"]
BEYOND_TOKENIZER_BIAS = -1e4  # lm_head bias of the ids the tokenizer cannot decode (gpu_step's docstring)
# Dense (no sparsity) bf16 tensor-core peaks from NVIDIA datasheets; the first substring match wins.
PEAK_BF16 = (
    ("H200 NVL", 835.5e12),
    ("H200", 989.4e12),
    ("H100 NVL", 835.5e12),
    ("H100 PCIe", 756e12),
    ("H100", 989.4e12),
    ("A100", 312e12),
    ("L40S", 362e12),
)


def matmul_weights(cfg: Any, lm_head: bool = True) -> int:
    """N: the matmul weights a token goes through (module docstring); cfg: any object with
    Qwen2Config's size fields."""
    d = memory.Dims.from_config(cfg)
    h, q, kv = d.hidden, d.heads * d.head_dim, d.kv_heads * d.head_dim
    layer = h * q + 2 * h * kv + q * h + 3 * h * d.intermediate
    return d.layers * layer + (h * d.vocab if lm_head else 0)


def model_flops_per_token(
    cfg: Any, context_len: float, train: bool, lora: bool, lm_head: bool = True
) -> float:
    """Model FLOPs per token (module docstring)."""
    d = memory.Dims.from_config(cfg)
    forward = 2 * matmul_weights(cfg, lm_head) + 2 * 2 * d.layers * d.heads * d.head_dim * context_len
    return forward * ((2 if lora else 3) if train else 1)


def memory_bound_tokens_per_s(
    cfg: Any, element_bytes: int, rows: int, generated: int, context: int, bandwidth: float
) -> float:
    """The decode ceiling a memory bandwidth sets: `generated` tokens sampled `rows` to a step, each
    step reading the N matmul weights once, each token reading its own `context` (summed over the
    tokens: common.sampled_context) of keys and values, at `bandwidth` bytes/s and nothing else. An
    upper bound: padding, idle rows, prefill, activations and the host are not counted (the
    issue-44 floor: ~15 GB of weights a step at ~4.3 TB/s, ~18k tokens/s at batch 64)."""
    kv_per_position = memory.Dims.from_config(cfg).kv_bytes_per_position(element_bytes)
    steps = -(-generated // rows)
    read = steps * matmul_weights(cfg) * element_bytes + context * kv_per_position
    return generated * bandwidth / read


def peak_bf16(device_name: str | None) -> float | None:
    return next((peak for key, peak in PEAK_BF16 if device_name and key in device_name), None)


def phase_flops(
    cfg: Any, tokens: list[int], sampled: list[int], train: bool, passes: int, heads: int
) -> float:
    """`passes` decoder passes over every row's tokens; `heads` of them (the policy's and the
    reference's, not the critic's) add the lm_head at the row's sampled positions."""
    total = 0.0
    for t, r in zip(tokens, sampled):
        body = model_flops_per_token(cfg, t, train, lora=True, lm_head=False)
        total += passes * t * body + heads * r * (model_flops_per_token(cfg, t, train, lora=True) - body)
    return total


def measures(
    cfg: Any, r: dict[str, Any], peak: float | None, kl_passes: int, element_bytes: int
) -> dict[str, Any]:
    """Per-phase seconds, tokens, tokens/s, FLOPs and MFU (None without a peak), for the phases done;
    the rollout's tokens/s against the memory-bound ceiling at the copy bandwidth measured."""
    tokens, sampled, epochs = r["rows_tokens"], r["rows_sampled"], r.get("epochs")
    seq, gen = sum(tokens), r["generated"]
    ceiling = memory_bound_tokens_per_s(
        cfg, element_bytes, r["decode_rows"], gen, r["sampled_context"], r["copy_bandwidth"]
    )
    fl = {
        "rollout": gen * model_flops_per_token(cfg, 0, train=False, lora=True),  # 2N per generated token
        "freeze": phase_flops(cfg, tokens, sampled, False, 2 + kl_passes, 1 + kl_passes),  # + reference
        "update": (epochs or 0) * phase_flops(cfg, tokens, sampled, True, 2, 1),
    }  # actor, critic; per epoch
    mfu = {k: fl[k] / r[f"{k}_s"] / peak if peak and f"{k}_s" in r else None for k in fl}
    out: dict[str, Any] = {
        "rollout": {
            "seconds": r["rollout_s"],
            "tokens_generated": gen,
            "tokens_per_s": gen / r["rollout_s"],
            "decode_flops": fl["rollout"],
            "decode_mfu": mfu["rollout"],
            "decode_rows": r["decode_rows"],
            "memory_bound_tokens_per_s": ceiling,
            "of_memory_bound": gen / r["rollout_s"] / ceiling,
            "episode_tokens_max": max(r.get("episode_tokens") or [0]),
        }
    }
    if "freeze_s" in r:
        out["freeze"] = {
            "seconds": r["freeze_s"],
            "sequence_tokens": seq,
            "passes": 2 + kl_passes,
            "tokens_per_s": seq / r["freeze_s"],
            "flops": fl["freeze"],
            "mfu": mfu["freeze"],
        }
    if "update_s" in r:
        out["update"] = {
            "seconds": r["update_s"],
            "epochs_used": epochs,
            "optimizer_steps": r["steps"],
            "tokens_trained": 2 * epochs * seq,
            "tokens_per_s": 2 * epochs * seq / r["update_s"],
            "flops": fl["update"],
            "mfu": mfu["update"],
        }
    return out


def model_record(cfg: Any, base: int, ac: Any, tokenizer_size: int) -> dict[str, Any]:
    keys = (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "max_position_embeddings",
        "rms_norm_eps",
        "tie_word_embeddings",
        "hidden_act",
    )
    rope = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", getattr(cfg, "rope_theta", None))
    return {k: getattr(cfg, k) for k in keys} | {
        "rope_theta": rope,
        "parameters_base": base,
        "tokenizer_size": tokenizer_size,
        "parameters_total": sum(p.numel() for p in ac.parameters()),
        "parameters_trainable": sum(p.numel() for p in ac.parameters() if p.requires_grad),
    }


def source_record() -> dict[str, Any]:
    """The source's commit and hash; outside a git checkout (or one without these files tracked)
    the commit is null and `note` says why, rather than losing the measurements."""
    try:
        src = rc.collect_source(ROOT, SOURCE_PATHS).model_dump(mode="json")
        return src | ({"note": "not a git checkout: commit unknown"} if src["git_commit"] is None else {})
    except (ValueError, RuntimeError, OSError) as e:
        return {
            "git_commit": None,
            "git_dirty": True,
            "tree_sha256": None,
            "source_paths": SOURCE_PATHS,
            "note": f"not a git checkout with these files tracked ({e}): commit unknown",
        }


def vocab_note(vocab: int, tokenizer_size: int) -> str:
    if vocab > tokenizer_size:
        return (
            f"model vocabulary {vocab}, tokenizer {tokenizer_size}: ids beyond the tokenizer have "
            f"lm_head bias {BEYOND_TOKENIZER_BIAS:g} (probability 0)"
        )
    return f"model vocabulary = the pappo tokenizer's {tokenizer_size}"


def receipt(
    args: argparse.Namespace,
    device: torch.device,
    dtype: torch.dtype,
    built: tuple,
    r: dict[str, Any],
    clock: Any,
    complete: bool,
) -> dict[str, Any]:
    params, cfg, trainer, base, tokenizer_size = built
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = peak_bf16(name)
    kl_passes, element_bytes = int(params.rl.kl_coef > 0), torch.empty(0, dtype=dtype).element_size()
    phases = measures(cfg, r, peak if dtype != torch.float32 else None, kl_passes, element_bytes)
    hardware = machine.collect_hardware()
    if device.type == "cpu":  # the kind this run used, also on a machine that has a GPU
        hardware = hardware.model_copy(update={"accelerator": "cpu", "accelerator_model_name": None})
    up = phases.get("update", {})
    return {
        "schema": SCHEMA,
        "complete": complete,
        "error": r.get("error"),
        "config": args.config,
        "profile": None if args.profile is None else privacy.sanitise(str(args.profile), ROOT),
        "device": str(device),
        "device_name": name,
        "dtype": str(dtype).removeprefix("torch."),
        "gradient_checkpointing": args.gradient_checkpointing,
        "knobs": {"logits_fp32": args.logits_fp32, "rollout_is_level": args.rollout_is},
        "vocab_note": vocab_note(cfg.vocab_size, tokenizer_size),
        "model": model_record(cfg, base, trainer.learner.ac, tokenizer_size),
        "lora": params.lora.model_dump(mode="json"),
        "batch": batch_record(args, params, r),
        "phases": phases,
        "tokens_generated": phases["rollout"]["tokens_generated"],
        "tokens_trained": up.get("tokens_trained"),
        "peak_flops_bf16": peak,
        "copy_bandwidth_bytes_per_s": r["copy_bandwidth"],
        "mfu": up.get("mfu"),
        "logprob_gap": r.get("gap"),
        "peak_memory": peak_memory_record(params, cfg, r, device),
        "params_file": privacy.sanitise(str(args.params), ROOT),
        "seed": args.seed,
        "hardware": hardware.model_dump(mode="json"),
        "software": machine.collect_software().model_dump(mode="json"),
        "source": source_record(),
        "determinism": machine.collect_determinism(args.seed, collect_numerics(params.numerics)).model_dump(
            mode="json"
        ),
        "timing": clock.stop().model_dump(mode="json"),
    }


def batch_record(args: argparse.Namespace, params: Params, r: dict[str, Any]) -> dict[str, Any]:
    """The receipt's `batch`: the episodes played and the knobs of rollout and update that shaped them."""
    rp, rl = params.rollout, params.rl
    return {
        "tasks": args.tasks,
        "group_size": args.group,
        "episodes": r["episodes"],
        "max_turns": params.env.max_turns,
        "max_new_tokens_per_turn": rp.max_new_tokens_per_turn,
        "max_tokens_per_episode": rp.max_tokens_per_episode,
        "kv_cache": rp.kv_cache,
        "enforce_eager": rp.enforce_eager,
        "decode_graphs": None if rp.enforce_eager else r.get("decode_graphs"),
        "ppo_epochs": rl.ppo_epochs,
        "minibatches": rl.minibatches,
        "micro_batch_size": rl.micro_batch_size,
        "use_dynamic_bsz": rl.use_dynamic_bsz,
        "ppo_max_token_len_per_gpu": rl.ppo_max_token_len_per_gpu,
        "largest_update_micro_batch": r.get("update_micro"),
        "target_kl": None,
    }


def peak_memory_record(
    params: Params, cfg: Qwen2Config, r: dict[str, Any], device: torch.device
) -> dict[str, Any]:
    """The receipt's `peak_memory`: measured per phase, predicted at the profile and at the run's shapes."""
    predicted = memory.predict(params, memory.Dims.from_config(cfg), rows=r["episodes"])
    at_run = predict_at_run(params, cfg, r)
    return {
        "bytes": max(r["peak_bytes"].values()),
        "per_phase_bytes": r["peak_bytes"],
        "measure": "torch.cuda.max_memory_allocated" if device.type == "cuda" else "peak RSS",
        "predicted": predicted.as_dict(),
        "predicted_at_run": None if at_run is None else at_run.as_dict(),
        "measured_over_predicted": phase_ratios(r["peak_bytes"], at_run, device),
    }


def phase_ratios(
    measured: dict[str, int], at_run: memory.Prediction | None, device: torch.device
) -> dict[str, float]:
    """Each phase's measured peak over the model's prediction at the run's shapes, on CUDA only:
    the model predicts tensors (torch.cuda.max_memory_allocated); a CPU run's peak RSS also holds
    the process's runtime."""
    if at_run is None or device.type != "cuda":
        return {}
    predicted = {"rollout": at_run.rollout, "update": at_run.update}
    return {k: measured[k] / v for k, v in predicted.items() if measured.get(k) and v}


def predict_at_run(params: Params, cfg: Any, r: dict[str, Any]) -> memory.Prediction | None:
    """The memory model at this run's shapes, to check it phase by phase against the measured
    peaks: episodes as long as the longest one, and the update's largest micro-batch (its padded
    and sampled tokens, as `run_optimise` recorded them; before the update, the most its
    micro-batches can hold). None before the rollout ended."""
    if "rows_sampled" not in r:
        return None
    longest = params.rollout.model_copy(update={"max_tokens_per_episode": max(r["episode_tokens"])})
    if "update_micro" in r:  # the update's largest micro-batch, as the trainer cut it
        tokens, sampled = r["update_micro"]["padded_tokens"], r["update_micro"]["sampled_tokens"]
    else:  # before the update: the most its micro-batches can hold (rows of the longest episode's length)
        tokens = memory.micro_batch_tokens(params.model_copy(update={"rollout": longest}))
        if params.rl.use_dynamic_bsz:  # its token budget, sampled as densely as the densest row
            sampled = int(tokens * max(s / t for s, t in zip(r["rows_sampled"], r["rows_tokens"])))
        else:  # its rows, the most sampled ones together
            sampled = sum(sorted(r["rows_sampled"], reverse=True)[: params.rl.micro_batch_size])
    at = params.model_copy(
        update={
            "rollout": longest,
            "rl": params.rl.model_copy(update={"use_dynamic_bsz": True, "ppo_max_token_len_per_gpu": tokens}),
        }
    )
    return memory.predict(
        at, memory.Dims.from_config(cfg), rows=r["episodes"], sampled_fraction=sampled / max(tokens, 1)
    )


def _mfu(rec: dict[str, Any], x: float | None) -> str:
    if rec["peak_flops_bf16"] is None:
        return f"n/a (no bf16 peak known for {rec['device_name']})"
    if x is None:
        return f"n/a ({rec['dtype']} run; the peak is bf16)"
    return f"{100 * x:.1f}% of {rec['peak_flops_bf16'] / 1e12:.0f} TFLOP/s bf16 ({rec['device_name']})"


def _bandwidth(rec: dict[str, Any]) -> str:
    return f"{rec['copy_bandwidth_bytes_per_s'] / 1e12:.2f} TB/s copy bandwidth ({rec['device_name']})"


def head_lines(rec: dict[str, Any]) -> list[str]:
    m, b = rec["model"], rec["batch"]
    n = m["parameters_base"]
    size = f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"
    short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[rec["dtype"]]
    pred = rec["peak_memory"]["predicted"]
    return [
        f"config: {rec['config']} ({size} params incl. embeddings, vocab {m['vocab_size']}), "
        f"device {rec['device']} {short}, LoRA r{rec['lora']['rank']}",
        f"note: {rec['vocab_note']}",
        f"batch: {b['episodes']} episodes, max_turns {b['max_turns']} x {b['max_new_tokens_per_turn']} "
        f"tokens, max_tokens_per_episode {b['max_tokens_per_episode']} (kv_cache {b['kv_cache']}, "
        f"enforce_eager {str(b['enforce_eager']).lower()}), "
        f"ppo_epochs {b['ppo_epochs']} x minibatches {b['minibatches']}, micro-batches "
        + (
            f"of at most {b['ppo_max_token_len_per_gpu']} padded tokens (use_dynamic_bsz)"
            if b["use_dynamic_bsz"]
            else f"of {b['micro_batch_size']} rows"
        ),
        f"predicted peak memory: {pred['peak_bytes'] / 2**30:.2f} GiB (rollout "
        f"{pred['rollout_bytes'] / 2**30:.2f}, update {pred['update_bytes'] / 2**30:.2f})",
    ]


def phase_lines(rec: dict[str, Any], phase: str) -> list[str]:
    """The printed lines of one finished phase."""
    p, b, per = rec["phases"].get(phase), rec["batch"], rec["peak_memory"]["per_phase_bytes"]
    if p is None:
        return []
    mem = f"peak {per.get(phase, 0) / 2**30:.2f} GiB ({rec['peak_memory']['measure']})"
    at_run = rec["peak_memory"].get("predicted_at_run") or {}
    if f"{phase}_bytes" in at_run and per.get(phase):
        predicted = at_run[f"{phase}_bytes"]
        mem += f", {predicted / 2**30:.2f} predicted at this run's shapes"
        ratio = (rec["peak_memory"].get("measured_over_predicted") or {}).get(phase)
        if ratio is not None:
            mem += f" (measured / predicted {ratio:.2f})"
    if phase == "rollout":
        graphs = b.get("decode_graphs")
        return [
            f"rollout: {b['episodes']} episodes, {p['tokens_generated']} generated tokens in "
            f"{p['seconds']:.1f} s = {p['tokens_per_s']:.0f} tokens/s (longest episode "
            f"{p['episode_tokens_max']} tokens); {mem}",
            f"decode MFU (2N x generated tokens / rollout s): {_mfu(rec, p['decode_mfu'])}",
            f"memory-bound ceiling at {p['decode_rows']} rows a step and {_bandwidth(rec)}: "
            f"{p['memory_bound_tokens_per_s']:.0f} tokens/s; the rollout reached {p['of_memory_bound']:.1%} of it",
        ] + ([f"decode CUDA graphs: {graph_counts(graphs)}"] if graphs else [])
    if phase == "freeze":
        return [
            f"freeze: {p['seconds']:.1f} s, {p['sequence_tokens']} tokens x {p['passes']} passes; MFU "
            f"{_mfu(rec, p['mfu'])}; {mem}"
        ]
    gap = rec["logprob_gap"] or {}
    return [
        f"sampler vs trainer log-prob gap (rollout/logprob_gap_*): mean "
        f"{gap.get('logprob_gap_mean', 0.0):.3g}, max {gap.get('logprob_gap_max', 0.0):.3g}",
        f"update: {p['epochs_used']} epochs x {b['minibatches']} minibatches, {p['tokens_trained']} "
        f"trained tokens in {p['seconds']:.1f} s = {p['tokens_per_s']:.0f} tokens/s; {mem}",
        _micro_line(b.get("largest_update_micro_batch")),
        f"update MFU: {_mfu(rec, p['mfu'])}",
        f"peak memory: {rec['peak_memory']['bytes'] / 2**30:.2f} GiB measured, "
        f"{rec['peak_memory']['predicted']['peak_bytes'] / 2**30:.2f} GiB predicted",
    ]


def _micro_line(seen: dict[str, int] | None) -> str:
    if not seen or not seen["padded_total"]:
        return "update micro-batches: none recorded"
    pad = 1 - seen["tokens_total"] / seen["padded_total"]
    return (
        f"update micro-batches: largest {seen['padded_tokens']} padded tokens ({seen['sampled_tokens']} "
        f"sampled at most); padding {pad:.1%} of the forwards' tokens"
    )


def say(lines: list[str]) -> None:
    print("\n".join(lines), flush=True)
