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

Measured on 2 CPU cores (tiny, 2x2 episodes, 3 turns x 32 tokens, fp32): 384 generated tokens at
700-840 tokens/s; 20840 trained tokens at 3000-6200 tokens/s; 0.8 GiB peak RSS; 12-16 s in all. The 7B
built on CPU in bf16: 6.555B parameters, 12.6 GiB peak RSS. The issue-44 H200 run at c24b699 used
params.yaml's LoRA and limits with a 4096 vocabulary; the profile at 152064 ids: benchmarks/gpu_check.sh.
The last line is `receipt: <path>`.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from pappo.config import Params, load_params, profile_mapping
from pappo.config.policy import ModelParams
from pappo.config.rl import RLParams
from pappo.experiment import machine, privacy
from pappo.experiment import receipt as rc
from pappo.io import atomic_write_json
from pappo.numerics import collect as collect_numerics
from pappo.policy import decode_graphs, memory
from pappo.policy.adapters import ActorCritic
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import tiny_config
from pappo.rl.batch import from_trajectories
from pappo.rl.trainer import Trainer
from pappo.rl.update import optimise
from pappo.tasks.store import TaskStore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import fresh_tokenizer, graph_counts, padded_tokens, stand_in_grades

ROOT = Path(__file__).resolve().parents[1]
HUB_PROFILE = ROOT / "profiles" / "qwen2.5-coder-7b.yaml"
SCHEMA = "pappo.gpu_step/2"
SOURCE_PATHS = ["src/pappo", "benchmarks", "pyproject.toml", "requirements.lock"]
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
QWEN25_VOCAB = 152064
BEYOND_TOKENIZER_BIAS = -1e4  # lm_head bias of the ids the tokenizer cannot decode (module docstring)
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
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_KEYS = ("episodes", "max_turns", "max_new_tokens_per_turn", "gradient_checkpointing", "profile", "vocab")
DEFAULTS = {
    "7b": dict(zip(_KEYS, (None, None, None, True, HUB_PROFILE, QWEN25_VOCAB))),
    "tiny": dict(zip(_KEYS, ("2x2", 3, 32, False, None, None))),
}
# flag -> (params section, field) for the precision sweep; an older checkout's params models may lack it
KNOBS = {"logits_fp32": ("model", "logits_fp32"), "rollout_is": ("rl", "rollout_is_level")}


def model_flops_per_token(
    cfg: Any, context_len: float, train: bool, lora: bool, lm_head: bool = True
) -> float:
    """Model FLOPs per token (module docstring); cfg: any object with Qwen2Config's size fields."""
    h, layers, heads = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or h // heads
    q, kv = heads * head_dim, cfg.num_key_value_heads * head_dim
    n = layers * (h * q + 2 * h * kv + q * h + 3 * h * cfg.intermediate_size) + (
        h * cfg.vocab_size if lm_head else 0
    )
    forward = 2 * n + 2 * 2 * layers * q * context_len
    return forward * ((2 if lora else 3) if train else 1)


def peak_bf16(device_name: str | None) -> float | None:
    return next((peak for key, peak in PEAK_BF16 if device_name and key in device_name), None)


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


def _episodes(args: argparse.Namespace, rl: dict[str, Any]) -> tuple[int, int]:
    if args.episodes is None:
        return int(rl["tasks_per_update"]), int(rl["group_size"])
    tasks, _, group = str(args.episodes).partition("x")
    if not (tasks.isdigit() and group.isdigit() and int(tasks) > 0 and int(group) > 0):
        raise SystemExit(f"gpu_step: --episodes {args.episodes!r}: expected TASKSxGROUP, e.g. 16x4")
    return int(tasks), int(group)


def _knobs(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """The precision sweep's flags, into params sections; refused by name where the params models lack the knob."""
    wanted = {"logits_fp32": True if args.logits_fp32 else None, "rollout_is": args.rollout_is}
    for flag, value in wanted.items():
        if value is None:
            continue
        section, field = KNOBS[flag]
        model = {"model": ModelParams, "rl": RLParams}[section]
        if field not in model.model_fields:
            raise SystemExit(
                f"gpu_step: --{flag.replace('_', '-')} sets {section}.{field}, which this "
                "checkout's params models (src/pappo/config) do not have; run without the flag or on a "
                "checkout with it"
            )
        data[section][field] = value


def bench_params(args: argparse.Namespace, dtype: torch.dtype) -> Params:
    """params.yaml with the profile's lora, rollout and rl, the benchmark's overrides, validated."""
    data = load_params(args.params).model_dump(mode="json", by_alias=True)
    hub = profile_mapping(args.params, args.profile or HUB_PROFILE)
    if args.profile is not None:
        for section in ("lora", "rollout", "rl"):
            data[section] = hub[section]
    else:  # the hub profile's decode path and loss tokens, whatever params.yaml's CPU tier uses
        data["rollout"]["calls"] = hub["rollout"]["calls"]
        data["rl"]["loss_tokens"] = hub["rl"]["loss_tokens"]
    rl, rollout, env = data["rl"], data["rollout"], data["env"]
    args.tasks, args.group = _episodes(args, rl)
    # critic_warmup_steps 0: time a steady-state update, not the first update's extra critic steps
    rl |= {
        "tasks_per_update": args.tasks,
        "group_size": args.group,
        "target_kl": None,
        "updates": 1,
        "critic_warmup_steps": 0,
    }
    for key in ("micro_batch_size", "ppo_epochs", "minibatches", "ppo_max_token_len_per_gpu"):
        rl |= {key: getattr(args, key)} if getattr(args, key) else {}
    if args.use_dynamic_bsz is not None:
        rl["use_dynamic_bsz"] = args.use_dynamic_bsz
    rollout["batch_size"] = args.tasks * args.group  # one lockstep batch
    for key in ("max_new_tokens_per_turn", "max_tokens_per_episode", "kv_cache"):
        rollout |= {key: getattr(args, key)} if getattr(args, key) else {}
    if args.enforce_eager is not None:
        rollout["enforce_eager"] = args.enforce_eager
    if args.max_turns is None:  # 7b: every episode can reach the token limit
        args.max_turns = math.ceil(rollout["max_tokens_per_episode"] / rollout["max_new_tokens_per_turn"]) + 1
    env["max_turns"] = args.max_turns
    data["model"] |= {
        "dtype": str(dtype).removeprefix("torch."),
        "gradient_checkpointing": args.gradient_checkpointing,
    }
    _knobs(args, data)
    try:
        return Params.model_validate(data)
    except ValueError as e:
        raise SystemExit(f"gpu_step: the benchmark's params are invalid (check the flags): {e}") from None


def model_config(name: str, tokenizer: Any, params: Any, vocab: int | None = None) -> Any:
    ids = {k: getattr(tokenizer, k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    if name == "tiny":
        return tiny_config(params.model.tiny, vocab or len(tokenizer), **ids)
    return Qwen2Config(
        vocab_size=vocab or len(tokenizer),
        use_sliding_window=False,
        attn_implementation="sdpa",
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
        model = Qwen2ForCausalLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
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


def measures(cfg: Any, r: dict[str, Any], peak: float | None, kl_passes: int) -> dict[str, Any]:
    """Per-phase seconds, tokens, tokens/s, FLOPs and MFU (None without a peak), for the phases done."""
    tokens, sampled, epochs = r["rows_tokens"], r["rows_sampled"], r.get("epochs")
    seq, gen = sum(tokens), r["generated"]
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
    phases = measures(cfg, r, peak if dtype != torch.float32 else None, int(params.rl.kl_coef > 0))
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


def summary(rec: dict[str, Any]) -> list[str]:
    return head_lines(rec) + [line for ph in ("rollout", "freeze", "update") for line in phase_lines(rec, ph)]


def say(lines: list[str]) -> None:
    print("\n".join(lines), flush=True)


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
    built = setup(args, device, dtype)
    r: dict[str, Any] = {}

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
