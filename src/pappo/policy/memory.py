"""Predicted peak accelerator memory of a training run, from its params and the model's dimensions.

One PPO update has two memory peaks; the run's peak is the larger:
- rollout: the trained model (frozen base, LoRA adapters with their gradients and AdamW states),
  the decoder's snapshot (a second copy of every weight, LoRA merged: `policy/decoder.py`), the
  KV cache at its capacity (grown by `KVCache.reserve`, see `kv_capacity`, or allocated once:
  rollout.kv_cache static) plus the one layer its reallocations hold twice, the decode step's
  logits (B, V) with the sampler's float32 softmax copies, and the transient of prefilling a chunk
  (an observation or a prompt) for every row, with its attention (`attention_bytes`);
- update: the trained model and one micro-batch of `micro_batch_tokens` padded tokens
  (`rl.micro_batch_size` full-length rows, or rl.ppo_max_token_len_per_gpu with rl.use_dynamic_bsz):
  the activations it keeps for its backward (every layer's, or only each layer's input with gradient
  checkpointing plus one layer's recomputed ones; Korthikanti et al. 2022, "Reducing activation
  recomputation in large transformer models", section 4, counted here for a Qwen2 layer with
  memory-efficient attention: no T^2 term) and the logits at the sampled positions
  (`rl/batch.py:policy_outputs`: the lm_head output, its float32 copy, the temperature-scaled copy,
  log_softmax, and the entropy's exp and product, plus their gradients).

An upper-bound estimate for refusing configurations that cannot fit: every row is assumed to
reach `rollout.max_tokens_per_episode`, the allocator's fragmentation and the CUDA context are
outside it (`headroom` leaves room for them). Checked against measured CPU peaks of four small
configurations in `benchmarks/memory_check.py` (within 15%) and, on a GPU, in
`benchmarks/gpu_step.py`'s receipts (predicted and torch.cuda.max_memory_allocated side by side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pappo.config import Params

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
ADAPTER_BYTES = 16  # per trainable parameter: float32 weight, gradient, AdamW exp_avg and exp_avg_sq
LOGIT_COPIES_FP32 = 6  # float(), / temperature, log_softmax, exp, exp * logp, and one gradient in flight
SAMPLER_COPIES_FP32 = 3  # the decode step's float32 logits, softmax and cumulative/sorted copy
# A CUDA prefill's attention repeats keys and values to every query head (decoder._attention_cuda)
# for as many rows at a time as this many bytes of them hold.
ATTENTION_ROWS_BYTES = 2**30


@dataclass(frozen=True)
class Dims:
    """The sizes that set memory: vocabulary V, hidden H, MLP width I, layers, query and KV heads,
    head dim D, tied embeddings."""

    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool = False

    @classmethod
    def from_config(cls, cfg: Any) -> Dims:
        """From a transformers Qwen2Config (or any object with its field names)."""
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        return cls(
            cfg.vocab_size,
            cfg.hidden_size,
            cfg.intermediate_size,
            cfg.num_hidden_layers,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            head_dim,
            bool(getattr(cfg, "tie_word_embeddings", False)),
        )

    def parameters(self) -> int:
        """Base weights: embedding, lm_head unless tied, per layer q/k/v (with biases), o, MLP, two norms."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        layer = h * q + q + 2 * (h * kv + kv) + q * h + 3 * h * self.intermediate + 2 * h
        return self.vocab * h * (1 if self.tied else 2) + self.layers * layer + h

    def lora_parameters(self, rank: int, targets: list[str]) -> int:
        """One adapter's A and B over the target projections of every layer (Qwen2 names)."""
        h, i = self.hidden, self.intermediate
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        shapes = {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }
        return self.layers * sum(rank * sum(shapes[t]) for t in targets if t in shapes)

    def layer_inference_elements(self) -> int:
        """Elements one layer's inference forward (`Qwen2Decoder`, no autograd) holds at once per
        token, at its MLP: the gate and up outputs, silu(gate) and their product (2I + I + I), the
        residual stream and its norm (H each). Attention's own are `attention_bytes`."""
        return 4 * self.intermediate + 2 * self.hidden

    def kv_bytes_per_position(self, dtype_bytes: int) -> int:
        """K and V of every layer for one position of one row."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes

    def layer_activation_elements(self) -> int:
        """Elements one Qwen2 layer keeps per token for a LoRA backward (frozen base): both norms'
        inputs and outputs, q, k, v and their rotated copies, the attention output, gate, up,
        silu(gate) and their product (the down projection's input)."""
        h, i = self.hidden, self.intermediate
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return 4 * h + 2 * q + 4 * kv + q + 4 * i


def kv_capacity(prompt: int, final: int) -> int:
    """Positions per row a growing cache (rollout.kv_cache grow) holds once it reaches `final`:
    `KVCache.reserve` starts at max(2 prompt, 64) and allocates 2 (n + 1) when n + 1 do not fit."""
    cap = max(2 * prompt, 64)
    while cap < final:
        cap = 2 * (cap + 1)
    return cap


@dataclass(frozen=True)
class Prediction:
    """Predicted bytes per part and phase; `peak` is the larger phase."""

    parts: dict[str, int]
    rollout: int
    update: int

    @property
    def peak(self) -> int:
        return max(self.rollout, self.update)

    def as_dict(self) -> dict[str, Any]:
        return {
            "parts_bytes": self.parts,
            "rollout_bytes": self.rollout,
            "update_bytes": self.update,
            "peak_bytes": self.peak,
            "peak_gib": round(self.peak / GIB, 2),
        }


def predict(
    params: Params,
    dims: Dims,
    rows: int | None = None,
    prompt_tokens: int = 512,
    sampled_fraction: float | None = None,
) -> Prediction:
    """Peak bytes of one update of `params` on a model of `dims`. rows: episodes decoded together
    (default: rollout.batch_size, at most the episodes of an update); prompt_tokens: the first
    prefill (sets the KV cache's growth steps); sampled_fraction: sampled share of a row's tokens
    (default: max_turns x max_new_tokens_per_turn / max_tokens_per_episode, at most 1)."""
    rp, rl, m = params.rollout, params.rl, params.model
    s = DTYPE_BYTES[m.dtype]
    rows = rows or min(rp.batch_size, rl.tasks_per_update * rl.group_size)
    length = rp.max_tokens_per_episode
    if sampled_fraction is None:
        sampled_fraction = default_sampled_fraction(params)
    weights, adapters = _trained_model(params, dims)
    positions = length if rp.kv_cache == "static" else kv_capacity(min(prompt_tokens, length), length)
    # the cache at its capacity, and one layer more while `KVCache` replaces a layer's buffer
    kv = rows * positions * dims.kv_bytes_per_position(s) * (dims.layers + 1) // dims.layers
    sampler_logits = rows * dims.vocab * (s + 4 * SAMPLER_COPIES_FP32)
    t = min(rp.max_new_tokens_per_turn, length)  # an observation (or prompt) prefilled per row
    prefill = rows * t * (dims.layer_inference_elements() * s + dims.kv_bytes_per_position(s) // dims.layers)
    prefill += attention_bytes(dims, rows, t, length, s, cuda=m.device == "cuda")
    activations, logits = _micro_batch_bytes(params, dims, micro_batch_tokens(params), sampled_fraction)
    parts = {
        "weights": weights,
        "adapters_and_optimizer": adapters,
        "decoder_snapshot": weights,
        "kv_cache": kv,
        "sampler_logits": sampler_logits,
        "prefill": prefill,
        "activations": activations,
        "train_logits": logits,
    }
    rollout = weights + adapters + weights + kv + sampler_logits + prefill
    return Prediction(parts, rollout, weights + adapters + activations + logits)


def default_sampled_fraction(params: Params) -> float:
    """Sampled share of a full-length row: max_turns x max_new_tokens_per_turn / max_tokens_per_episode, at most 1."""
    rp = params.rollout
    return min(1.0, params.env.max_turns * rp.max_new_tokens_per_turn / rp.max_tokens_per_episode)


def micro_batch_tokens(params: Params) -> int:
    """Padded tokens of the update's largest micro-batch (`Learner.micro`): the token budget
    rl.ppo_max_token_len_per_gpu with rl.use_dynamic_bsz, else rl.micro_batch_size full-length rows."""
    rl = params.rl
    if rl.use_dynamic_bsz:
        return rl.ppo_max_token_len_per_gpu
    return rl.micro_batch_size * params.rollout.max_tokens_per_episode


def _trained_model(params: Params, dims: Dims) -> tuple[int, int]:
    """(base weights, adapters with their gradients and AdamW states) in bytes."""
    weights = dims.parameters() * DTYPE_BYTES[params.model.dtype]
    lora = dims.lora_parameters(params.lora.rank, params.lora.target_modules)
    # the policy's and the critic's LoRA, the value head and the reward weight
    return weights, ADAPTER_BYTES * (2 * lora + dims.hidden + 2)


def _micro_batch_bytes(params: Params, dims: Dims, tokens: int, sampled_fraction: float) -> tuple[int, int]:
    """(activations, train logits) of a micro-batch of `tokens` padded tokens, in bytes."""
    s = DTYPE_BYTES[params.model.dtype]
    per_layer = tokens * dims.layer_activation_elements() * s
    if params.model.gradient_checkpointing:  # each layer's input, one layer recomputed, its gradients
        activations = dims.layers * tokens * dims.hidden * s + 2 * per_layer
    else:
        activations = dims.layers * per_layer
    copies = LOGIT_COPIES_FP32 - (1 if s == 4 else 0)  # in float32 .float() is the lm_head output itself
    return activations, int(tokens * sampled_fraction) * dims.vocab * (s + 4 * copies)


def largest_micro_batch_tokens(params: Params, dims: Dims, budget: float) -> int:
    """The most padded tokens a micro-batch can hold with the update phase within `budget` bytes
    (0: not even one token); the update grows with them, so a bisection finds it."""
    weights, adapters = _trained_model(params, dims)
    fraction = default_sampled_fraction(params)

    def fits(tokens: int) -> bool:
        return weights + adapters + sum(_micro_batch_bytes(params, dims, tokens, fraction)) <= budget

    lo, hi = 0, 1
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def attention_bytes(dims: Dims, rows: int, t: int, length: int, s: int, cuda: bool) -> int:
    """A prefill's attention beyond its output, `t` new positions per row over `length`:
    `Qwen2Decoder._bias`'s mask (B, 1, T, L) and its two boolean intermediates; on CUDA, the keys
    and values repeated to every query head for ATTENTION_ROWS_BYTES of rows at a time, and the
    mask's copy SDPA aligns for them."""
    total = rows * t * length * (s + 2)
    if cuda:
        per_row = 2 * dims.heads * length * dims.head_dim * s
        step = min(rows, attention_row_group(dims.heads, length, dims.head_dim, s))
        total += step * (per_row + t * length * s)
    return total


def attention_row_group(heads: int, length: int, head_dim: int, itemsize: int) -> int:
    """Rows `decoder._attention_cuda` gives one SDPA call: as many as ATTENTION_ROWS_BYTES of their
    keys and values, repeated to every query head over `length` positions, hold (at least one)."""
    return max(1, ATTENTION_ROWS_BYTES // (2 * heads * length * head_dim * itemsize))


def refusal(params: Params, dims: Dims, gpu_bytes: int, headroom: float = 0.9) -> str | None:
    """None if the predicted peak fits in `headroom` of `gpu_bytes`, else a message naming the
    knobs to lower for each phase that does not fit (its main parts)."""
    p = predict(params, dims)
    budget = headroom * gpu_bytes
    if p.peak <= budget:
        return None
    rp = params.rollout
    fixes = []
    if p.rollout > budget:
        fixes.append(
            f"lower rollout.batch_size (now {rp.batch_size}) or rollout.max_tokens_per_episode "
            f"(now {rp.max_tokens_per_episode}): the KV cache is {p.parts['kv_cache'] / GIB:.1f} GiB"
        )
    if p.update > budget:
        fixes.append(
            f"{_update_fix(params, dims, budget)}: activations {p.parts['activations'] / GIB:.1f} GiB, "
            f"logits {p.parts['train_logits'] / GIB:.1f} GiB"
        )
    return (
        f"predicted peak memory {p.peak / GIB:.1f} GiB (rollout {p.rollout / GIB:.1f}, update "
        f"{p.update / GIB:.1f}) exceeds {headroom:.0%} of the GPU's {gpu_bytes / GIB:.1f} GiB; "
        + "; ".join(fixes)
    )


def _update_fix(params: Params, dims: Dims, budget: float) -> str:
    """What to lower for the update phase to fit `budget`, with the largest value that fits."""
    rl, length = params.rl, params.rollout.max_tokens_per_episode
    fit = largest_micro_batch_tokens(params, dims, budget)
    fit = fit // 1024 * 1024 if fit >= 1024 else fit
    if fit < length:  # no micro-batch setting helps
        fix = f"one episode of rollout.max_tokens_per_episode ({length}) does not fit a micro-batch: lower it"
        return (
            fix if params.model.gradient_checkpointing else fix + " or set model.gradient_checkpointing: true"
        )
    if rl.use_dynamic_bsz:
        return f"lower rl.ppo_max_token_len_per_gpu (now {rl.ppo_max_token_len_per_gpu}) to at most {fit}"
    return (
        f"lower rl.micro_batch_size (now {rl.micro_batch_size}) to at most {fit // length}, or set "
        f"rl.use_dynamic_bsz: true with ppo_max_token_len_per_gpu at most {fit}"
    )


# Qwen/Qwen2.5-Coder-7B-Instruct's config.json: the hub profile's model, used when its config is not
# in the local cache yet (`pappo profile` runs before the download).
QWEN25_CODER_7B = Dims(
    vocab=152064, hidden=3584, intermediate=18944, layers=28, heads=28, kv_heads=4, head_dim=128, tied=False
)


def dims_for(params: Params) -> Dims | None:
    """The model's dims: the tiny profile's, the hub checkpoint's cached config.json, the known
    Qwen2.5-Coder-7B-Instruct; None for another hub model not in the cache."""
    m = params.model
    if m.profile == "tiny":
        t = m.tiny
        return Dims(
            t.vocab_size,
            t.hidden_size,
            t.intermediate_size,
            t.num_hidden_layers,
            t.num_attention_heads,
            t.num_key_value_heads,
            t.hidden_size // t.num_attention_heads,
            tied=True,
        )
    try:
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(
            m.id, revision=m.revision or None, cache_dir=m.cache_dir, local_files_only=True
        )
        return Dims.from_config(cfg)
    except (OSError, ValueError, KeyError):  # not downloaded yet, or not a Qwen2-like config
        return QWEN25_CODER_7B if m.id == "Qwen/Qwen2.5-Coder-7B-Instruct" else None


def device_bytes() -> int | None:
    """Total memory of the current CUDA device; None without one."""
    import torch

    return (
        int(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory)
        if (torch.cuda.is_available())
        else None
    )


def check(params: Params, gpu_memory_gib: float | None = None) -> str | None:
    """The refusal for `params` on a GPU of `gpu_memory_gib` (None: the CUDA device's size when
    model.device is cuda and one is present; on CPU nothing is checked). None: it fits, or unknown."""
    if gpu_memory_gib is not None:
        total: int | None = int(gpu_memory_gib * GIB)
    else:
        total = device_bytes() if params.model.device == "cuda" else None
    dims = dims_for(params) if total is not None else None
    return refusal(params, dims, total) if total is not None and dims is not None else None
